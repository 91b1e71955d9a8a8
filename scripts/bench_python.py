#!/usr/bin/python3
"""How fast `import tinyformer` is against the engine it wraps (docs/python.md, "Speed").

Two figures, each the median over paired rounds of the ratio of two timings taken back to
back in this process (a shared machine drifts; the two sides of a pair see the same drift):

  probes   the lesson's probes answered greedily by a Python loop of m.run(), against
           m.probes() (eval's own scoring, the code `tinyformer eval --probes` runs)
  cache    m.run_with_cache() of a 64-character text, against the same forward pass
           without the cache (names_filter=[]), and against m.run() of a new text

    PYTHONPATH=build/python scripts/bench_python.py --checkpoint runs/lesson12

Run it alone: a build or a second benchmark beside it makes every number slower, and
not by the same amount on both sides.
"""
import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import tinyformer

ROOT = Path(__file__).resolve().parents[1]

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--checkpoint", default="runs/lesson12", help="a run directory or .safetensors")
parser.add_argument("--probes", default=str(ROOT / "corpus" / "lesson_probes.tsv"))
parser.add_argument("--rounds", type=int, default=9, help="paired rounds (default 9)")
parser.add_argument("--threads", type=int, default=0, help="engine threads (0: the CPUs this process may use)")
args = parser.parse_args()

tinyformer.set_engine("onednn", args.threads)
model = tinyformer.load(args.checkpoint)
probes = [line.split("\t")[:2] for line in Path(args.probes).read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.startswith("#")]
vocab = model.vocab


def python_loop():
    """Each probe's answer, a character at a time: the argmax of run()'s last row."""
    correct = 0
    for prompt, answer in probes:
        text = prompt
        for _ in answer:
            text += vocab[int(np.argmax(model.run(text)[-1]))]
        correct += text[len(prompt):] == answer
    return correct


def eval_scoring():
    return model.probes(args.probes)["correct"]


assert python_loop() == eval_scoring(), "the Python loop's answers are not eval's"

# Two 64-character texts that share no first character: each run() starts from nothing.
story = "小丁拿着红色的苹果。谁拿着苹果？小丁。苹果是什么颜色？红色。"
other = "小华看着绿色的球。谁看着球？小华。球是什么颜色？绿色。"
context = model.config["model"]["context"]
texts = [(story * 4)[:context], (other * 4)[:context]]
CALLS = 100


def calls(function):
    def timed():
        for i in range(CALLS):
            function(texts[i % 2])
    return timed


with_cache = calls(lambda text: model.run_with_cache(text))
bare_forward = calls(lambda text: model.run_with_cache(text, names_filter=[]))
decoder_run = calls(lambda text: model.run(text))


def seconds(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def paired(a, b):
    """Timings of a and b in `rounds` pairs (which goes first alternates) and the median ratio a/b."""
    seconds(a), seconds(b)  # warm: buffers, caches
    times_a, times_b, ratios = [], [], []
    for r in range(args.rounds):
        if r % 2:
            tb, ta = seconds(b), seconds(a)
        else:
            ta, tb = seconds(a), seconds(b)
        times_a.append(ta), times_b.append(tb), ratios.append(ta / tb)
    return statistics.median(times_a), statistics.median(times_b), statistics.median(ratios), min(ratios), max(ratios)


flags = sorted(set(Path("/proc/cpuinfo").read_text().split()) & {"avx2", "avx512f", "avx512_bf16", "amx_bf16"})
cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")), "?")
print(f"{cpu} ({' '.join(flags)}), {args.threads or 'all'} threads, {args.rounds} paired rounds, medians")
print(f"{'what':52} {'time':>10} {'baseline':>10} {'ratio':>7}  (range)")


def row(what, a, b, unit, scale):
    ta, tb, ratio, low, high = paired(a, b)
    print(f"{what:52} {ta * scale:8.1f}{unit} {tb * scale:8.1f}{unit} {ratio:6.3f}×  ({low:.3f}-{high:.3f})")


row(f"{len(probes)} probes: Python loop of run() / eval's scoring", python_loop, eval_scoring, "ms", 1e3)
row(f"run_with_cache({context} chars) / the bare forward", with_cache, bare_forward, "µs", 1e6 / CALLS)
row(f"run_with_cache({context} chars) / run() of a new text", with_cache, decoder_run, "µs", 1e6 / CALLS)
