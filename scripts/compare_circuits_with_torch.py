#!/usr/bin/env python3
"""Check tinyformer inspect's circuits.json against PyTorch (../shared/reference/torch_model.py).

A developer's tool, not part of the test suite (the tests must not need PyTorch). Needs
Debian's PyTorch: apt-get install -y python3-torch libopenblas0-openmp; run with /usr/bin/python3.

  scripts/compare_circuits_with_torch.py CHECKPOINT [--circuits FILE] [--tinyformer build/tinyformer]

Loads the checkpoint with the reference's own reader (its Model, its state dict), recomputes
every weight-only number of circuits.json independently in float64 with the issue's
conventions, and prints the largest difference of each kind:
  composition   Q, K, V scores ‖A·B‖_F / (‖A‖_F·‖B‖_F) for every earlier × later head
  copying       Σλ/Σ|λ| of each head's OV circuit, from the eigenvalues of the [V,V] matrix
                (torch.linalg.eigvals) and, as TransformerLens's FactoredMatrix does, of the
                small [d,d] matrix W_O·U·E·W_V, which has the same non-zero eigenvalues
  norms         Frobenius norms of W_Q, W_K, W_V, W_O, W_OV, W_QK
  top pairs     the ten largest OV and QK entries: the same (a, b) pairs, the same values
  baseline      the random baseline, redrawn with PyTorch's generator: equal within its
                Monte Carlo error (the draws differ, so not to 1e-4)
Scores must agree to 1e-4; the exit status is 1 if any does not.

Without --circuits it runs `tinyformer inspect` on the checkpoint into a temporary directory.
Each kind of check is one function returning (what, ours, torch) rows; the activation-patching
fractions (issue 14, item 4) will be one more such function.
"""
import argparse, importlib.util, json, math, os, re, subprocess, sys, tempfile

import torch

here = os.path.dirname(os.path.abspath(__file__))
reference_path = os.path.join(here, "..", "..", "shared", "reference", "torch_model.py")
TOLERANCE = 1e-4


def load_reference():
    spec = importlib.util.spec_from_file_location("torch_model", reference_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Weights:
    """The issue's matrices, float64, in the row-vector form x·W."""

    def __init__(self, model):
        self.D = model.tok_emb.weight.shape[1]
        self.H = model.blocks[0].attn.H
        self.d = self.D // self.H
        self.L = len(model.blocks)
        f64 = lambda t: t.detach().to(torch.float64)
        self.E = f64(model.tok_emb.weight)                                         # [V,D]
        self.U = torch.diag(f64(model.ln_f.weight)) @ f64(model.lm_head.weight).T  # [D,V]
        self.heads = {}
        for l, block in enumerate(model.blocks):
            ln1 = torch.diag(f64(block.ln1.weight))                                # [D,D]
            for h in range(self.H):
                rows = slice(h * self.d, (h + 1) * self.d)
                self.heads[(l, h)] = {
                    "W_Q": ln1 @ f64(block.attn.q_proj.weight)[rows, :].T,         # [D,d]
                    "W_K": ln1 @ f64(block.attn.k_proj.weight)[rows, :].T,
                    "W_V": ln1 @ f64(block.attn.v_proj.weight)[rows, :].T,
                    "W_O": f64(block.attn.out_proj.weight)[:, rows].T,             # [d,D]
                }

    def ov(self, l, h):
        w = self.heads[(l, h)]
        return w["W_V"] @ w["W_O"]    # [D,D]

    def qk(self, l, h):
        w = self.heads[(l, h)]
        return w["W_Q"] @ w["W_K"].T  # [D,D]


def layer_and_head(name):
    """"L1H0" → (1, 0)"""
    l, h = re.fullmatch(r"L(\d+)H(\d+)", name).groups()
    return int(l), int(h)


def score(A, B):
    fro = lambda m: torch.linalg.matrix_norm(m, "fro")
    return (fro(A @ B) / (fro(A) * fro(B))).item()


def composition_checks(w, circuits):
    rows = []
    c = circuits["composition"]
    for i, earlier in enumerate(c["rows"]):
        for j, later in enumerate(c["columns"]):
            if c["q"][i][j] is None:
                continue
            (l1, h1), (l2, h2) = layer_and_head(earlier), layer_and_head(later)
            A = w.ov(l1, h1)
            for kind, B in (("q", w.qk(l2, h2)), ("k", w.qk(l2, h2).T), ("v", w.ov(l2, h2))):
                rows.append((f"{kind.upper()} {earlier}→{later}", c[kind][i][j], score(A, B)))
    return rows


def copying(eigenvalues):
    return (eigenvalues.sum() / eigenvalues.abs().sum()).real.item()


def copying_checks(w, circuits):
    rows = []
    for head in circuits["heads"]:
        l, h = head["layer"], head["head"]
        ours = head["ov_circuit"]["copying_score"]
        full = w.E @ w.ov(l, h) @ w.U                                          # [V,V]
        small = w.heads[(l, h)]["W_O"] @ w.U @ w.E @ w.heads[(l, h)]["W_V"]    # [d,d]
        rows.append((f"{head['name']} [V,V] eigenvalues", ours, copying(torch.linalg.eigvals(full))))
        rows.append((f"{head['name']} [d,d] eigenvalues", ours, copying(torch.linalg.eigvals(small))))
    return rows


def norm_checks(w, circuits):
    rows = []
    for head in circuits["heads"]:
        l, h = head["layer"], head["head"]
        mats = dict(w.heads[(l, h)], W_OV=w.ov(l, h), W_QK=w.qk(l, h))
        for key, ours in head["frobenius_norm"].items():
            rows.append((f"{head['name']} ‖{key}‖_F", ours, torch.linalg.matrix_norm(mats[key], "fro").item()))
    return rows


def top_pair_checks(w, circuits):
    rows = []
    for head in circuits["heads"]:
        l, h = head["layer"], head["head"]
        for key, circuit in (("ov_circuit", w.E @ w.ov(l, h) @ w.U),
                             ("qk_circuit", (w.E @ w.heads[(l, h)]["W_Q"]) @ (w.E @ w.heads[(l, h)]["W_K"]).T)):
            ours = head[key]["top_pairs"]
            values, flat = circuit.flatten().topk(len(ours))
            V = circuit.shape[1]
            for rank, (pair, value, index) in enumerate(zip(ours, values.tolist(), flat.tolist())):
                what = f"{head['name']} {key[:2].upper()} #{rank + 1} {pair['from']}→{pair['to']}"
                if (pair["from_id"], pair["to_id"]) != divmod(index, V):
                    what += f" (torch: ids {divmod(index, V)})"
                    value = float("inf")  # another pair: counts as a mismatch
                rows.append((what, pair["value"], value))
    return rows


def baseline_check(w, circuits, draws=2000, seed=0):
    """PyTorch's own random matrices: the mean must agree within 5 standard errors."""
    b = circuits["baseline"]
    g = torch.Generator().manual_seed(seed)
    gauss = lambda r, c: torch.randn(r, c, generator=g, dtype=torch.float64)
    scores = torch.tensor([score(gauss(w.D, w.d) @ gauss(w.d, w.D), gauss(w.D, w.d) @ gauss(w.d, w.D))
                           for _ in range(draws)])
    mean, std = scores.mean().item(), scores.std().item()
    error = math.sqrt(b["std"] ** 2 / b["draws"] + std ** 2 / draws)
    return mean, std, error


def run_inspect(tinyformer, checkpoint, vocab, out):
    text = next(c for c in vocab if not c.isspace())
    subprocess.run([tinyformer, "inspect", "--checkpoint", checkpoint, "--text", text, "--out", out],
                   check=True, capture_output=True)
    return os.path.join(out, "circuits.json")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a run directory or its model.safetensors")
    p.add_argument("--circuits", help="circuits.json to check (default: run tinyformer inspect now)")
    p.add_argument("--tinyformer", default=os.path.join(here, "..", "build", "tinyformer"))
    a = p.parse_args()
    ckpt = a.checkpoint if a.checkpoint.endswith(".safetensors") else os.path.join(a.checkpoint, "model.safetensors")

    reference = load_reference()
    model, vocab = reference.load(ckpt)
    w = Weights(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = a.circuits or run_inspect(a.tinyformer, ckpt, vocab, tmp)
        with open(path, encoding="utf-8") as f:
            circuits = json.load(f)
    print(f"checkpoint {ckpt}: D={w.D} H={w.H} d={w.d} L={w.L} V={w.E.shape[0]}; circuits.json from "
          f"{a.circuits or 'tinyformer inspect, just now'}")

    failed = False
    checks = [("composition scores", composition_checks), ("copying scores", copying_checks),
              ("Frobenius norms", norm_checks), ("top pairs (values)", top_pair_checks)]
    print(f"{'check':<22}{'numbers':>8}  {'largest |tinyformer − torch|':>30}  where")
    for title, check in checks:
        rows = check(w, circuits)
        if not rows:
            print(f"{title:<22}{0:>8}  {'–':>30}")
            continue
        what, ours, theirs = max(rows, key=lambda r: abs(r[1] - r[2]))
        worst = abs(ours - theirs)
        ok = worst <= TOLERANCE
        failed |= not ok
        print(f"{title:<22}{len(rows):>8}  {worst:>30.2e}  {what}: {ours:.9f} vs {theirs:.9f}"
              f"{'' if ok else '  FAIL (> %g)' % TOLERANCE}")

    for title, check in (("composition scores", composition_checks), ("copying scores", copying_checks)):
        for what, ours, theirs in check(w, circuits):
            print(f"  {what:<34} tinyformer {ours:.6f}  torch {theirs:.6f}")

    mean, std, error = baseline_check(w, circuits)
    b = circuits["baseline"]
    ok = abs(mean - b["q"]) <= 5 * error
    failed |= not ok
    print(f"baseline: tinyformer {b['q']:.5f} ± {b['std']:.5f} ({b['draws']} draws, seed {b['seed']}); torch "
          f"{mean:.5f} ± {std:.5f} (2000 draws of its own); difference {abs(mean - b['q']):.1e}, "
          f"{'within' if ok else 'NOT within'} 5 standard errors ({5 * error:.1e})")
    print("FAIL" if failed else f"PASS: every score agrees to {TOLERANCE:g}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
