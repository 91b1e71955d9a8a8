#!/usr/bin/env python3
"""Train the same run in tinyformer and in the PyTorch reference, step by step, and compare.

A developer's tool, not part of the test suite (the tests must not need PyTorch). Needs
Debian's PyTorch: apt-get install -y python3-torch libopenblas0-openmp; run with /usr/bin/python3.

  scripts/train_vs_torch.py CONFIG TEXT [--steps N] [--set K=V]... [--tinyformer build/tinyformer]

tinyformer trains CONFIG on TEXT with train.rng = "torch", so that it draws its initial
weights and its batches as torch_reference.py train does with the same seed. This script then
runs torch_reference.py's own training loop (its Model, its AdamW groups, its schedule and
clipping, the same settings read from tinyformer's resolved config) while recording every
step's loss, and prints:
  - each step's two losses (the first 10, then every tenth) and the largest difference (step
    1's loss agrees to float rounding only if the initial weights and the first batch do),
  - both final weights' largest relative difference and both validation losses.
Both engines run with the config's thread count (train.threads, 0 = 2 here).
"""
import argparse, importlib.util, json, os, subprocess, sys, tempfile, time, tomllib

here = os.path.dirname(os.path.abspath(__file__))
reference_path = os.path.join(here, "torch_reference.py")
spec = importlib.util.spec_from_file_location("torch_reference", reference_path)
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)


def train_tinyformer(exe, config, text, overrides, out):
    cmd = [exe, "train", "--config", config, "--out", out, "--force", "--set", f"data.path={os.path.abspath(text)}",
           "--set", "train.rng=torch", "--set", "logging.log_every=1", "--set", "train.eval_every=0"]
    for kv in overrides:
        cmd += ["--set", kv]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    losses = [json.loads(line)["loss"] for line in open(os.path.join(out, "metrics.jsonl"))]
    summary = json.load(open(os.path.join(out, "summary.json")))
    weights, _ = ref.read_safetensors(os.path.join(out, "model.safetensors"))
    with open(os.path.join(out, "config.toml"), "rb") as f:
        resolved = tomllib.load(f)
    return losses, summary, weights, resolved, wall


def train_torch(c, text_path):
    """torch_reference.py train's own loop (torch_reference.train), each step's loss recorded."""
    losses = []
    model, _, val_loss, _ = ref.train(c, ref.read_text(text_path), on_step=lambda step, loss: losses.append(loss))
    return losses, val_loss, model.state_dict()


def largest_difference(ours, theirs, relative):
    worst, worst_name = 0.0, None
    for name, value in theirs.items():
        if name not in ours:
            sys.exit(f"tinyformer's checkpoint has no {name}")
        diff = (ours[name] - value).abs().max().item()  # both torch tensors (ref.read_safetensors)
        if relative:
            diff /= max(value.abs().max().item(), 1e-12)
        if diff > worst:
            worst, worst_name = diff, name
    return worst, worst_name


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config")
    p.add_argument("text")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--tinyformer", default=os.path.join(here, "..", "build", "tinyformer"))
    a = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        losses, summary, weights, resolved, wall = train_tinyformer(
            a.tinyformer, a.config, a.text, a.overrides + [f"train.steps={a.steps}"], os.path.join(tmp, "run"))
    model, train_c, optim, data = resolved["model"], resolved["train"], resolved["optim"], resolved["data"]
    if not data.get("path"):
        sys.exit("the reference trains on one text split by val_fraction: give data.path")
    c = dict(d_model=model["d_model"], n_heads=model["n_heads"], n_layers=model["n_layers"], context=model["context"],
             positions=model["positions"], batch=train_c["batch_size"], steps=train_c["steps"], seed=train_c["seed"],
             threads=train_c["threads"] or 2, lr=optim["lr"], min_lr=optim["min_lr"], warmup=optim["warmup_steps"],
             weight_decay=optim["weight_decay"], beta1=optim["beta1"], beta2=optim["beta2"], eps=optim["eps"],
             grad_clip=optim["grad_clip"], val_fraction=data["val_fraction"])
    start = time.perf_counter()
    torch_losses, torch_val, torch_final = train_torch(c, a.text)
    torch_wall = time.perf_counter() - start

    print(f"{'step':>6} {'tinyformer':>12} {'torch':>12} {'difference':>12}")
    for i, (x, y) in enumerate(zip(losses, torch_losses)):
        if i < 10 or (i + 1) % 10 == 0 or i + 1 == len(losses):
            print(f"{i + 1:>6} {x:>12.6f} {y:>12.6f} {x - y:>+12.2e}")
    worst = max(range(len(losses)), key=lambda i: abs(losses[i] - torch_losses[i]))
    print(f"largest loss difference over {len(losses)} steps: {losses[worst] - torch_losses[worst]:+.2e} at step {worst + 1}")
    final_diff, final_name = largest_difference(weights, torch_final, relative=True)
    print(f"final weights: largest relative difference {final_diff:.2e} ({final_name})")
    print(f"validation loss: tinyformer {summary['val_loss']:.6f}  torch {torch_val:.6f}  difference {summary['val_loss'] - torch_val:+.2e}")
    print(f"wall time (train + final evaluation): tinyformer {wall:.1f} s ({summary['train_seconds']:.1f} s training)"
          f"  torch {torch_wall:.1f} s")


if __name__ == "__main__":
    main()
