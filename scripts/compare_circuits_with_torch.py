#!/usr/bin/env python3
"""Check tinyformer inspect's circuits.json against PyTorch (scripts/torch_reference.py).

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

  patching      with --probes: the recovered fractions of activation patching (every head, at
                every position and at the answer position) and of path patching (every earlier
                head into every later head's queries, keys and values), per question kind,
                recomputed with PyTorch forward hooks on the reference model in float64: the
                twins rebuilt from the probes file by circuits.json's corruption rule, a head's
                output replaced at out_proj's input, a receiver's queries/keys/values recomputed
                from ln1(x + delta) at its q_proj/k_proj/v_proj output. Must agree to 1e-3.
Scores must agree to 1e-4; the exit status is 1 if any does not.

Without --circuits it runs `tinyformer inspect` on the checkpoint into a temporary directory
(with --probes when given). Each kind of check is one function returning (what, ours, torch) rows.
"""
import argparse, importlib.util, json, math, os, re, subprocess, sys, tempfile

import torch

here = os.path.dirname(os.path.abspath(__file__))
reference_path = os.path.join(here, "torch_reference.py")
TOLERANCE = 1e-4
FRACTION_TOLERANCE = 1e-3


def load_reference():
    spec = importlib.util.spec_from_file_location("torch_reference", reference_path)
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


# ---- activation patching, with PyTorch hooks ----

def read_probes(path):
    """(prompt, answer, kind) per line; the kind as tinyformer's load_probes reads it."""
    probes = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n").rstrip("\r")
            if not line:
                continue
            prompt, answer = line.split("\t")
            kind = "colour" if "颜色" in prompt else "who" if "谁" in prompt else "other"
            probes.append((prompt, answer, kind))
    return probes


def twins(probes, context):
    """The documented rule: the next answer of the kind (first-appearance order, going round)
    with as many characters, another first character, not already in the prompt."""
    answers = {}
    for _, answer, kind in probes:
        answers.setdefault(kind, [])
        if answer not in answers[kind]:
            answers[kind].append(answer)
    out = []
    for prompt, answer, kind in probes:
        if answer not in prompt or len(prompt) > context:
            continue
        pool = answers[kind]
        own = pool.index(answer)
        for step in range(1, len(pool)):
            other = pool[(own + step) % len(pool)]
            if len(other) == len(answer) and other[0] != answer[0] and other not in prompt:
                out.append((kind, prompt, prompt.replace(answer, other), answer[0], other[0]))
                break
    return out


class Patcher:
    """The reference model in float64, with hooks that replace one head's output or one head's
    query/key/value input."""

    def __init__(self, model, stoi):
        self.model = model.double().eval()
        self.stoi = stoi
        self.H = model.blocks[0].attn.H
        self.d = model.tok_emb.weight.shape[1] // self.H
        self.L = len(model.blocks)

    def rows(self, h):
        return slice(h * self.d, (h + 1) * self.d)

    def run(self, text, head_patch=None, input_patch=None):
        """→ (logits [T,V] of the last..., z per (layer, head) [T,d]).
        head_patch = (l, h, position or None, z [T,d]); input_patch = (l, h, 'q'|'k'|'v', delta [T,D])."""
        ids = torch.tensor([[self.stoi[c] for c in text]])
        z, handles, residual = {}, [], {}
        for l, block in enumerate(self.model.blocks):
            def keep_and_patch(module, inputs, l=l):
                merged = inputs[0].clone()                       # [1,T,D]: merge_heads(a v)
                for h in range(self.H):
                    z[(l, h)] = merged[0, :, self.rows(h)].clone()
                if head_patch and head_patch[0] == l:
                    _, h, position, source = head_patch
                    if position is None:
                        merged[0, :, self.rows(h)] = source
                    else:
                        merged[0, position, self.rows(h)] = source[position]
                    z[(l, h)] = merged[0, :, self.rows(h)].clone()
                return (merged,)
            handles.append(block.attn.out_proj.register_forward_pre_hook(keep_and_patch))
            def keep_residual(module, inputs, l=l):
                residual[l] = inputs[0]
            handles.append(block.register_forward_pre_hook(keep_residual))
            if input_patch and input_patch[0] == l:
                _, h, which, delta = input_patch
                projection = {"q": block.attn.q_proj, "k": block.attn.k_proj, "v": block.attn.v_proj}[which]
                def shifted(module, inputs, output, l=l, h=h, delta=delta, projection=projection, block=block):
                    output = output.clone()
                    moved = block.ln1(residual[l] + delta)                  # what this head alone reads
                    output[..., self.rows(h)] = torch.nn.functional.linear(moved, projection.weight)[..., self.rows(h)]
                    return output
                handles.append(projection.register_forward_hook(shifted))
        try:
            with torch.no_grad():
                logits, _ = self.model(ids)
        finally:
            for handle in handles:
                handle.remove()
        return logits[0], z


def patching_checks(model, vocab, circuits, probes_path):
    patching = circuits.get("patching")
    if not patching:
        return []
    stoi = {c: i for i, c in enumerate(vocab)}
    p = Patcher(model, stoi)
    heads = [(l, h) for l in range(p.L) for h in range(p.H)]
    pairs = [(l1, h1, l2, h2) for l1 in range(p.L) for l2 in range(l1 + 1, p.L)
             for h1 in range(p.H) for h2 in range(p.H)]
    sums = {}
    for kind, clean_text, corrupted_text, clean_char, corrupted_char in twins(read_probes(probes_path), model.context):
        a, b = stoi[clean_char], stoi[corrupted_char]
        diff = lambda logits: (logits[-1, a] - logits[-1, b]).item()
        clean_logits, clean_z = p.run(clean_text)
        corrupted_logits, corrupted_z = p.run(corrupted_text)
        s = sums.setdefault(kind, {"n": 0, "clean": 0.0, "corrupted": 0.0, "every": [0.0] * len(heads),
                                   "answer": [0.0] * len(heads), "paths": [[0.0] * 3 for _ in pairs]})
        s["n"] += 1
        s["clean"] += diff(clean_logits)
        s["corrupted"] += diff(corrupted_logits)
        last = len(clean_text) - 1
        for i, (l, h) in enumerate(heads):
            s["every"][i] += diff(p.run(corrupted_text, head_patch=(l, h, None, clean_z[(l, h)]))[0])
            s["answer"][i] += diff(p.run(corrupted_text, head_patch=(l, h, last, clean_z[(l, h)]))[0])
        for e, (l1, h1, l2, h2) in enumerate(pairs):
            W_O = p.model.blocks[l1].attn.out_proj.weight[:, p.rows(h1)]       # [D,d]
            delta = (clean_z[(l1, h1)] - corrupted_z[(l1, h1)]) @ W_O.T     # [T,D]
            for j, which in enumerate("qkv"):
                s["paths"][e][j] += diff(p.run(corrupted_text, input_patch=(l2, h2, which, delta))[0])
    rows = []
    names = patching["heads"]
    for kind, s in sums.items():
        ours = next(k for k in patching["kinds"] if k["kind"] == kind)
        n, clean, corrupted = s["n"], s["clean"] / s["n"], s["corrupted"] / s["n"]
        recovered = lambda total: (total / n - corrupted) / (clean - corrupted)
        rows.append((f"{kind} twins", ours["twins"], n))
        for i, name in enumerate(names):
            rows.append((f"{kind} {name} every position", ours["recovered_every_position"][i], recovered(s["every"][i])))
            rows.append((f"{kind} {name} answer position", ours["recovered_answer_position"][i], recovered(s["answer"][i])))
        for e, (l1, h1, l2, h2) in enumerate(pairs):
            edge = ours["paths"][e]
            assert (edge["sender"], edge["receiver"]) == (f"L{l1}H{h1}", f"L{l2}H{h2}"), edge
            for j, which in enumerate("qkv"):
                rows.append((f"{kind} L{l1}H{h1}→L{l2}H{h2} {which}", edge[which], recovered(s["paths"][e][j])))
    return rows


def run_inspect(tinyformer, checkpoint, vocab, out, probes=None):
    text = next(c for c in vocab if not c.isspace())
    command = [tinyformer, "inspect", "--checkpoint", checkpoint, "--out", out]
    command += ["--probes", probes] if probes else ["--text", text]
    subprocess.run(command, check=True, capture_output=True)
    return os.path.join(out, "circuits.json")


def largest_difference(title, rows, tolerance):
    """Prints the row where tinyformer and torch differ most; True if that is within tolerance."""
    what, ours, theirs = max(rows, key=lambda r: abs(r[1] - r[2]))
    worst = abs(ours - theirs)
    ok = worst <= tolerance
    print(f"{title:<22}{len(rows):>8}  {worst:>30.2e}  {what}: {ours:.9f} vs {theirs:.9f}"
          f"{'' if ok else '  FAIL (> %g)' % tolerance}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a run directory or its model.safetensors")
    p.add_argument("--circuits", help="circuits.json to check (default: run tinyformer inspect now)")
    p.add_argument("--tinyformer", default=os.path.join(here, "..", "build", "tinyformer"))
    p.add_argument("--probes", help="prompt<TAB>answer file: also check the activation-patching fractions")
    a = p.parse_args()
    ckpt = a.checkpoint if a.checkpoint.endswith(".safetensors") else os.path.join(a.checkpoint, "model.safetensors")

    reference = load_reference()
    model, vocab = reference.load(ckpt)
    w = Weights(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = a.circuits or run_inspect(a.tinyformer, ckpt, vocab, tmp, a.probes)
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
        failed |= not largest_difference(title, rows, TOLERANCE)

    if a.probes:
        rows = patching_checks(model, vocab, circuits, a.probes)
        if not rows:
            print(f"{'patching fractions':<22}{0:>8}  circuits.json has no patching (inspect ran without probes)  FAIL")
            failed = True
        else:
            failed |= not largest_difference("patching fractions", rows, FRACTION_TOLERANCE)
            for what, ours, theirs in rows:
                if "answer position" not in what:
                    print(f"  {what:<34} tinyformer {ours:.6f}  torch {theirs:.6f}")

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
    print("FAIL" if failed else f"PASS: every score agrees to {TOLERANCE:g}" +
          (f", every patching fraction to {FRACTION_TOLERANCE:g}" if a.probes else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
