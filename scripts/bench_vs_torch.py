#!/usr/bin/python3
"""Side-by-side speed against the PyTorch reference, for the README's Measured table.

Runs `tinyformer bench` and `torch_model.py bench` alternately, several rounds per
workload, on the same machine in the same minutes (the machines are shared and noisy), and
prints each engine's median training tokens/s and their ratio. A developer's tool: it needs
PyTorch (`apt-get install -y python3-torch libopenblas0-openmp`); the project does not.

  scripts/bench_vs_torch.py [--rounds 5] [--threads 2] [--only lesson_b32,lesson_b8,shakespeare]
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


def run_json(command):
    out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", default=",".join(WORKLOADS))
    a = p.parse_args()
    results = {}
    for name in a.only.split(","):
        ours_args, torch_args = WORKLOADS[name]
        ours, theirs = [], []
        for _ in range(a.rounds):
            theirs.append(run_json(["/usr/bin/python3", TORCH, "bench", "--threads", str(a.threads)] + torch_args)
                          ["train_tokens_per_s"])
            ours.append(run_json([TINYFORMER, "bench", "--json", "--threads", str(a.threads), "--repeats", "5"]
                                 + ours_args)["train_tokens_per_s"])
        m_ours, m_theirs = statistics.median(ours), statistics.median(theirs)
        # Each round's two runs are back to back, so their ratio shares that minute's load;
        # the median of those paired ratios is the figure least moved by the machine's noise.
        paired = [o / t for o, t in zip(ours, theirs)]
        m_paired = statistics.median(paired)
        results[name] = {"tinyformer": round(m_ours), "torch": round(m_theirs), "ratio": round(m_ours / m_theirs, 2),
                         "paired_ratio": round(m_paired, 2), "paired_ratios": [round(r, 2) for r in paired],
                         "tinyformer_runs": [round(x) for x in ours], "torch_runs": [round(x) for x in theirs]}
        print(f"{name:12s} tinyformer {m_ours:9,.0f} tok/s   torch {m_theirs:9,.0f} tok/s   ratio of medians "
              f"{m_ours / m_theirs:.2f}   median paired ratio {m_paired:.2f} ({min(paired):.2f}-{max(paired):.2f})",
              flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    sys.exit(main())
