#!/usr/bin/env python3
"""Compare a tinyformer checkpoint with the PyTorch reference (scripts/torch_reference.py).

A developer's tool, not part of the test suite (the tests must not need PyTorch). Needs
Debian's PyTorch: apt-get install -y python3-torch libopenblas0-openmp; run with /usr/bin/python3.

  scripts/compare_with_torch.py CHECKPOINT TEXT [--tinyformer build/tinyformer]

Prints both engines' loss on TEXT (windows as torch_reference.py eval cuts them) and, on TEXT's
first window, both losses and the worst relative gradient difference over every parameter.
"""
import argparse, json, os, struct, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
reference = os.path.join(here, "torch_reference.py")


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        tensors[name] = struct.unpack("<%df" % ((b - a) // 4), data[a:b])
    return tensors, meta


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1] if not out.strip().startswith("{\n") else out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("text")
    p.add_argument("--tinyformer", default=os.path.join(here, "..", "build", "tinyformer"))
    a = p.parse_args()
    ckpt = a.checkpoint if a.checkpoint.endswith(".safetensors") else os.path.join(a.checkpoint, "model.safetensors")

    ours = json.loads(subprocess.run([a.tinyformer, "eval", "--checkpoint", ckpt, "--text", a.text, "--json"], check=True, capture_output=True, text=True).stdout)
    theirs = run_json(["/usr/bin/python3", reference, "eval", ckpt, a.text])
    print(f"eval loss   tinyformer {ours['loss']:.7f}  torch {theirs['loss']:.7f}  "
          f"|diff| {abs(ours['loss'] - theirs['loss']):.2e}  ({ours['predicted']} characters)")

    with tempfile.TemporaryDirectory() as tmp:
        ours_path, theirs_path = os.path.join(tmp, "ours.safetensors"), os.path.join(tmp, "torch.safetensors")
        subprocess.run([a.tinyformer, "grads", "--checkpoint", ckpt, "--text", a.text, "--out", ours_path],
                       check=True, capture_output=True)
        subprocess.run(["/usr/bin/python3", reference, "grads", ckpt, a.text, theirs_path], check=True,
                       capture_output=True)
        g_ours, m_ours = read_safetensors(ours_path)
        g_theirs, m_theirs = read_safetensors(theirs_path)
    print(f"grads loss  tinyformer {float(m_ours['loss']):.7f}  torch {float(m_theirs['loss']):.7f}")
    if set(g_ours) != set(g_theirs):
        sys.exit(f"parameter names differ: {sorted(set(g_ours) ^ set(g_theirs))}")
    worst_name, worst = None, 0.0
    for name in sorted(g_ours):
        scale = max(max(abs(v) for v in g_theirs[name]), 1e-12)
        diff = max(abs(x - y) for x, y in zip(g_ours[name], g_theirs[name])) / scale
        if diff > worst:
            worst_name, worst = name, diff
    print(f"gradients   {len(g_ours)} tensors; worst relative difference {worst:.2e} ({worst_name})"
          "  [max |ours - torch| / max |torch| per tensor]")


if __name__ == "__main__":
    main()
