#!/usr/bin/python3
"""Side-by-side speed against PyTorch, for docs/performance.md and the README's table.

Runs `tinyformer bench` and the PyTorch reference's bench in each of its variants
(scripts/torch_variants.py) alternately, several rounds per workload, on the same machine in
the same minutes (the machines are shared and noisy). Every run trains the same model with
the same step: forward, cross-entropy, backward, gradient clipping to norm 1.0, AdamW; the
same thread count. It prints each one's median training tokens/s, the median of the paired
ratios (tinyformer / PyTorch in the same round) against each variant, and as the headline
the ratio against the fastest PyTorch variant. A developer's tool: it needs PyTorch, which
the project does not.

  scripts/bench_vs_torch.py [--torch auto|local|root] [--variants naive,sdpa,naive+compile,sdpa+compile]
                            [--rounds 5] [--threads 2] [--only lesson_b32,lesson_b8,shakespeare]
                            [--precision float32|bf16] [--tinyformer build/tinyformer] [--isa native|avx2]

PyTorch (--torch): `local` is this machine's /usr/bin/python3 (Debian 12's python3-torch is
1.13, which has neither the fused attention nor torch.compile: only the naive variant runs
there); `root` is PyTorch 2.x in a Debian 13 root that scripts/lib/torch-root.sh makes once
and keeps (needs root); `auto`, the default, takes this machine's PyTorch if it is 2.x, else
the root. Before timing, the bench checks that PyTorch's products run on OpenBLAS or MKL
(not the reference BLAS) and that the fused attention's loss and gradients equal the naive
one's to float tolerance.

Variants: naive is torch_reference.py's attention (q kᵀ, mask, softmax, v); sdpa is
F.scaled_dot_product_attention(is_causal=True); +compile runs the model under torch.compile.

With --precision bf16, tinyformer trains with train.precision = "bf16" and every PyTorch
variant runs its forward under torch.autocast("cpu", dtype=torch.bfloat16).

With --isa avx2 both sides run AVX2 code on an AVX-512 machine, a stand-in for an AVX2-only
CPU (not the same: the caches and the clock stay the AVX-512 machine's): tinyformer with
TINYFORMER_ISA=avx2 and ONEDNN_MAX_CPU_ISA=AVX2, PyTorch with ATEN_CPU_CAPABILITY=avx2 and
OPENBLAS_CORETYPE=Haswell (OpenBLAS's AVX2 kernels). The bench checks that PyTorch reports
avx2 before timing.
"""
import argparse, json, os, shutil, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "scripts", "torch_reference.py")
VARIANTS = os.path.join(ROOT, "scripts", "torch_variants.py")
ALL_VARIANTS = ["naive", "sdpa", "naive+compile", "sdpa+compile"]

# name: (tinyformer bench arguments, torch_reference.py bench arguments)
WORKLOADS = {
    "lesson_b32": (["--config", "configs/lesson12.toml", "--set", "train.batch_size=32", "--set", "model.context=64"],
                   ["--batch", "32", "--context", "64"]),
    "lesson_b8": (["--config", "configs/lesson12.toml", "--set", "train.batch_size=8", "--set", "model.context=32"],
                  ["--batch", "8", "--context", "32"]),
    "shakespeare": (["--config", "configs/shakespeare_char.toml", "--set", "data.path={shakespeare}"],
                    ["--batch", "12", "--d-model", "128", "--heads", "4", "--layers", "4", "--vocab", "65"]),
    # nanoGPT's shakespeare-char shape (10.7 M parameters): a step is ~100 times the
    # Shakespeare shape's work, so fewer steps per run.
    "shakespeare_l6d384": (["--config", "configs/shakespeare_char.toml", "--set", "data.path={shakespeare}",
                            "--set", "model.n_layers=6", "--set", "model.n_heads=6", "--set", "model.d_model=384",
                            "--set", "model.context=256", "--steps", "3", "--repeats", "3"],
                           ["--batch", "12", "--context", "256", "--d-model", "384", "--heads", "6", "--layers", "6",
                            "--vocab", "65", "--steps", "10"]),
}


def shakespeare_text():
    """data/tinyshakespeare.txt (scripts/get-shakespeare.sh), else a developer machine's shared copy."""
    for path in (os.path.join(ROOT, "data", "tinyshakespeare.txt"),
                 os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")):
        if os.path.isfile(path):
            return path
    sys.exit("bench_vs_torch: no data/tinyshakespeare.txt for the shakespeare workload: run scripts/get-shakespeare.sh "
             "(or leave it out with --only lesson_b32,lesson_b8)")


# PyTorch's float32 products go through OpenBLAS, which picks its kernels for this CPU
# unless OPENBLAS_CORETYPE overrides it. This machine's environment sets
# OPENBLAS_CORETYPE=Haswell (and OPENBLAS_L2_SIZE): AVX2 kernels on an AVX-512 CPU, which
# took PyTorch's 768×512×128 float32 product from 218 to 139 GFLOP/s (measured 2026-12-01)
# and its training to about 60 % of its speed. PyTorch runs without them: its own best.
TORCH_ENV = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}

# --isa avx2: each side's switches to its AVX2 code.
AVX2_TORCH_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}
AVX2_TINYFORMER_ENV = {"TINYFORMER_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


class Torch:
    """Where PyTorch runs: this machine's python3, or a Debian 13 root's (chroot, clean environment)."""

    def __init__(self, where, extra_env=None):
        self.root = None
        self.extra_env = extra_env or {}  # for PyTorch's process, here or inside the root
        if where == "auto":
            local = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True)
            where = "local" if local.returncode == 0 and not local.stdout.startswith("1.") else "root"
        if where == "root":
            made = subprocess.run([os.path.join(ROOT, "scripts", "lib", "torch-root.sh")], capture_output=True,
                                  text=True)
            if made.returncode != 0:
                sys.exit(f"bench_vs_torch: no PyTorch root: {made.stderr.strip()}")
            self.root = made.stdout.strip().splitlines()[-1]
            # torch_reference.py and the variants, copied into the root for each run of this script
            self.inside = "/opt/tinyformer-bench"
            os.makedirs(self.root + self.inside, exist_ok=True)
            shutil.copy(REFERENCE, self.root + self.inside)
            shutil.copy(VARIANTS, self.root + self.inside)
        self.where = where

    def command(self, *args):
        extra = [f"{k}={v}" for k, v in self.extra_env.items()]
        if self.root is None:
            return ["/usr/bin/env"] + extra + ["/usr/bin/python3", VARIANTS] + list(args)
        return ["chroot", self.root, "/usr/bin/env", "-i", "HOME=/root", "LANG=C.UTF-8", "PATH=/usr/bin:/bin",
                *extra, "/usr/bin/python3", self.inside + "/torch_variants.py"] + list(args)

    def has_compiler(self):
        return os.path.exists((self.root or "") + "/usr/bin/g++")


def run_json(command, env=None):
    out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def cpu():
    """The CPU's model name with its family and model numbers (a cloud VM's plain "AMD EPYC" may
    be any generation: family 25 is Zen 3 or 4, 26 Zen 5), and the instruction sets that matter."""
    fields, flags = {}, set()
    with open("/proc/cpuinfo") as info:
        for line in info:
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model") and key not in fields:
                fields[key] = value.strip()
            elif key == "flags":
                flags = set(value.split())
    model = fields.get("model name", "unknown")
    if "cpu family" in fields and "model" in fields:
        model += f" (family {fields['cpu family']} model {fields['model']})"
    return model, [f for f in ("avx2", "avx512f", "avx512_bf16") if f in flags]


def variant_arguments(variant, bf16):
    attention, _, compiled = variant.partition("+")
    return ["--attention", attention] + (["--compile"] if compiled else []) + (["--autocast"] if bf16 else [])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--torch", choices=["auto", "local", "root"], default="auto")
    p.add_argument("--variants", default=",".join(ALL_VARIANTS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", default=",".join(WORKLOADS))
    p.add_argument("--precision", choices=["float32", "bf16"], default="float32")
    p.add_argument("--tinyformer", default=os.path.join(ROOT, "build", "tinyformer"))
    p.add_argument("--isa", choices=["native", "avx2"], default="native")
    a = p.parse_args()
    bf16 = a.precision == "bf16"
    shakespeare = shakespeare_text() if any(n.startswith("shakespeare") for n in a.only.split(",")) else None
    torch = Torch(a.torch, AVX2_TORCH_ENV if a.isa == "avx2" else None)
    ours_env = dict(os.environ, **AVX2_TINYFORMER_ENV) if a.isa == "avx2" else None
    info = run_json(torch.command("info"), TORCH_ENV)
    if a.isa == "avx2" and str(info.get("cpu_capability")).lower() != "avx2":
        sys.exit(f"bench_vs_torch: --isa avx2: PyTorch reports cpu capability {info.get('cpu_capability')}, not avx2")
    if info["blas"] not in ("openblas", "mkl"):
        sys.exit(f"bench_vs_torch: PyTorch {info['torch']} runs its products on {info['blas']} BLAS, not OpenBLAS "
                 "or MKL: install libopenblas0-openmp where it runs")
    variants = a.variants.split(",")
    for v in variants:
        if v not in ALL_VARIANTS:
            sys.exit(f"bench_vs_torch: --variants: {v}, expected some of {','.join(ALL_VARIANTS)}")
    if info["torch"].startswith("1."):
        variants = [v for v in variants if v == "naive"]  # no fused attention, no torch.compile before 2.0
    if not torch.has_compiler():
        variants = [v for v in variants if "+compile" not in v]
    model, flags = cpu()
    header = {"cpu": model, "flags": flags, "torch": info["torch"], "torch_where": torch.where, "blas": info["blas"],
              "threads": a.threads, "precision": a.precision, "variants": variants, "isa": a.isa,
              "torch_cpu_capability": info.get("cpu_capability")}
    if "sdpa" in ",".join(variants):
        header["sdpa_check"] = run_json(torch.command("check-sdpa"), TORCH_ENV)
        if header["sdpa_check"]["worst_gradient_difference"] > 1e-4:
            sys.exit(f"bench_vs_torch: the fused attention disagrees with the naive one: {header['sdpa_check']}")
    print(f"{model}, {' '.join(flags)}, {a.threads} threads, {a.precision}; PyTorch {info['torch']} "
          f"({torch.where}, {info['blas']}, {info.get('cpu_capability')}), variants {', '.join(variants)}"
          + ("; both sides on AVX2 code (--isa avx2)" if a.isa == "avx2" else ""), flush=True)
    if "sdpa_check" in header:
        c = header["sdpa_check"]
        print(f"sdpa against naive on one batch: loss {c['loss_sdpa']:.6f} vs {c['loss_naive']:.6f}, gradients "
              f"within {c['worst_gradient_difference']:.1e} of their scale", flush=True)

    results = {"setup": header}
    for name in a.only.split(","):
        ours_args, torch_args = WORKLOADS[name]
        if name.startswith("shakespeare"):
            ours_args = [arg.format(shakespeare=shakespeare) for arg in ours_args]
        if bf16:
            ours_args = ours_args + ["--set", "train.precision=bf16"]
        ours, theirs = [], {v: [] for v in variants}
        for _ in range(a.rounds):
            for v in variants:
                bench = torch.command("bench", *variant_arguments(v, bf16), "--threads", str(a.threads), *torch_args)
                theirs[v].append(run_json(bench, TORCH_ENV)["train_tokens_per_s"])
            repeats = [] if "--repeats" in ours_args else ["--repeats", "5"]
            ours_run = run_json([a.tinyformer, "bench", "--json", "--threads", str(a.threads)] + repeats + ours_args,
                                ours_env)
            if a.isa == "avx2" and (ours_run["kernels"] != "avx2" or ours_run["onednn_isa"] != "AVX2"):
                sys.exit(f"bench_vs_torch: --isa avx2: tinyformer ran {ours_run['kernels']} kernels and oneDNN "
                         f"{ours_run['onednn_isa']}")
            ours.append(ours_run["train_tokens_per_s"])
        # Each round's runs are back to back, so their ratio shares that minute's load;
        # the median of those paired ratios is the figure least moved by the machine's noise.
        row = {"tinyformer": round(statistics.median(ours)), "tinyformer_runs": [round(x) for x in ours]}
        lines = [f"{name:12s} tinyformer {statistics.median(ours):9,.0f} tok/s"]
        for v in variants:
            paired = [o / t for o, t in zip(ours, theirs[v])]
            row[v] = {"median": round(statistics.median(theirs[v])), "runs": [round(x) for x in theirs[v]],
                      "paired_ratio": round(statistics.median(paired), 2),
                      "paired_ratios": [round(r, 2) for r in paired]}
            lines.append(f"{'':12s} {v:16s} {statistics.median(theirs[v]):9,.0f} tok/s: tinyformer "
                         f"{statistics.median(paired):.2f}× (rounds {min(paired):.2f}-{max(paired):.2f})")
        fastest = max(variants, key=lambda v: row[v]["median"])
        row["fastest_torch"] = fastest
        row["ratio_vs_fastest"] = row[fastest]["paired_ratio"]
        lines[0] += f"   vs the fastest PyTorch ({fastest}): {row['ratio_vs_fastest']:.2f}×"
        results[name] = row
        print("\n".join(lines), flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    sys.exit(main())
