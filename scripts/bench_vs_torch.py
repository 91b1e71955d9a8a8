#!/usr/bin/python3
"""Side-by-side speed against the PyTorch reference, for the README's Measured table.

Runs `tinyformer bench` and `torch_model.py bench` alternately, several rounds per
workload, on the same machine in the same minutes (the machines are shared and noisy), and
prints each engine's median training tokens/s and their ratio. A developer's tool: it needs
PyTorch (`apt-get install -y python3-torch libopenblas0-openmp`); the project does not.

  scripts/bench_vs_torch.py [--rounds 5] [--threads 2] [--only lesson_b32,lesson_b8,shakespeare]
                            [--precision float32|bf16]

With --precision bf16, tinyformer trains with train.precision = "bf16" and each round also
runs PyTorch's own mixed precision: the same torch_model.py bench with the model's forward
inside torch.autocast("cpu", dtype=torch.bfloat16) (the backward runs outside it, as
PyTorch's autocast recipe says). Ratios are given against both PyTorch runs.
"""
import argparse, json, os, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH = os.path.join(ROOT, "..", "shared", "reference", "torch_model.py")
TINYFORMER = os.path.join(ROOT, "build", "tinyformer")

# name: (tinyformer bench arguments, torch_model.py bench arguments)
WORKLOADS = {
    "lesson_b32": (["--config", "configs/lesson12.toml", "--set", "train.batch_size=32", "--set", "model.context=64"],
                   ["--batch", "32", "--context", "64"]),
    "lesson_b8": (["--config", "configs/lesson12.toml", "--set", "train.batch_size=8", "--set", "model.context=32"],
                  ["--batch", "8", "--context", "32"]),
    "shakespeare": (["--config", "configs/shakespeare_char.toml", "--set", "data.path=../shared/data/tinyshakespeare.txt"],
                    ["--batch", "12", "--d-model", "128", "--heads", "4", "--layers", "4", "--vocab", "65"]),
}


# torch_model.py bench with the forward under autocast: the reference file is not changed,
# its Model.forward is wrapped on import.
AUTOCAST = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import torch_model
forward = torch_model.Model.forward
def autocast_forward(self, *args, **kwargs):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return forward(self, *args, **kwargs)
torch_model.Model.forward = autocast_forward
sys.argv = ["torch_model.py"] + sys.argv[2:]
torch_model.main()
"""


# PyTorch's float32 products go through OpenBLAS, which picks its kernels for this CPU
# unless OPENBLAS_CORETYPE overrides it. This machine's environment sets
# OPENBLAS_CORETYPE=Haswell (and OPENBLAS_L2_SIZE): AVX2 kernels on an AVX-512 CPU, which
# took PyTorch's 768×512×128 float32 product from 218 to 139 GFLOP/s (measured 2026-12-01)
# and its training to about 60 % of its speed. PyTorch runs without them: its own best.
TORCH_ENV = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}


def run_json(command, env=None):
    out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", default=",".join(WORKLOADS))
    p.add_argument("--precision", choices=["float32", "bf16"], default="float32")
    a = p.parse_args()
    bf16 = a.precision == "bf16"
    results = {}
    for name in a.only.split(","):
        ours_args, torch_args = WORKLOADS[name]
        if bf16:
            ours_args = ours_args + ["--set", "train.precision=bf16"]
        torch_bench = ["bench", "--threads", str(a.threads)] + torch_args
        ours, theirs, autocast = [], [], []
        for _ in range(a.rounds):
            theirs.append(run_json(["/usr/bin/python3", TORCH] + torch_bench, TORCH_ENV)["train_tokens_per_s"])
            if bf16:
                autocast.append(run_json(["/usr/bin/python3", "-c", AUTOCAST, os.path.dirname(TORCH)] + torch_bench,
                                         TORCH_ENV)
                                ["train_tokens_per_s"])
            ours.append(run_json([TINYFORMER, "bench", "--json", "--threads", str(a.threads), "--repeats", "5"]
                                 + ours_args)["train_tokens_per_s"])
        # Each round's runs are back to back, so their ratio shares that minute's load;
        # the median of those paired ratios is the figure least moved by the machine's noise.
        results[name] = {"precision": a.precision, "tinyformer_runs": [round(x) for x in ours]}
        line = f"{name:12s} tinyformer {statistics.median(ours):9,.0f} tok/s"
        baselines = [("torch", theirs)] + ([("torch_autocast", autocast)] if bf16 else [])
        for label, runs in baselines:
            paired = [o / t for o, t in zip(ours, runs)]
            m_runs, m_paired = statistics.median(runs), statistics.median(paired)
            results[name].update({label: round(m_runs), f"{label}_runs": [round(x) for x in runs],
                                  f"ratio_{label}": round(statistics.median(ours) / m_runs, 2),
                                  f"paired_ratio_{label}": round(m_paired, 2),
                                  f"paired_ratios_{label}": [round(r, 2) for r in paired]})
            line += (f"   {label} {m_runs:9,.0f} tok/s: ratio of medians {statistics.median(ours) / m_runs:.2f},"
                     f" median paired {m_paired:.2f} ({min(paired):.2f}-{max(paired):.2f})")
        print(line, flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    sys.exit(main())
