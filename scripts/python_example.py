#!/usr/bin/env python3
"""docs/python.md's example: where does the lesson model's L1H1 read at "？", and its map.

    PYTHONPATH=build/python python3 scripts/python_example.py [RUN_DIR] [--plot FILE.png]

RUN_DIR defaults to runs/lesson12 (scripts/demo.sh trains it). --plot draws the head's
attention over the sentence with matplotlib (Debian's python3-matplotlib; the characters
need a CJK font such as fonts-wqy-microhei) into FILE.png, as docs/python-l1h1.png.
"""
import argparse

import numpy as np

import tinyformer

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("run", nargs="?", default="runs/lesson12")
parser.add_argument("--plot", metavar="FILE.png")
args = parser.parse_args()

m = tinyformer.load(args.run)
text = "小丁拿着红色的苹果。谁拿着苹果？"
logits, cache = m.run_with_cache(text)
layer, head = 1, 1
pattern = cache[f"blocks.{layer}.attn.hook_pattern"][head]  # [T, T]: row i, what position i reads
at = text.index("？")
print(f"{m}")
print(f"L{layer}H{head} at ？ (position {at}) reads:")
for position in np.argsort(-pattern[at])[:3]:
    print(f"  {text[position]} (position {position}): {pattern[at, position]:.3f}")
probabilities = np.exp(logits[at] - logits[at].max())
probabilities /= probabilities.sum()
best = int(np.argmax(probabilities))
print(f"next character: {m.vocab[best]} ({probabilities[best]:.1%})")
without = m.run(text, ablate=[(layer, head)])[at]
without = np.exp(without - without.max())
without /= without.sum()
print(f"with L{layer}H{head} zeroed: {m.vocab[best]} {without[best]:.1%}")

if args.plot:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    cjk = [f.name for f in font_manager.fontManager.ttflist if "WenQuanYi" in f.name or "Noto Sans CJK" in f.name]
    if cjk:
        plt.rcParams["font.family"] = cjk[0]
    figure, axes = plt.subplots(figsize=(6.4, 5.6))
    image = axes.imshow(pattern, cmap="Blues", vmin=0, vmax=1)
    axes.set_xticks(range(len(text)), list(text))
    axes.set_yticks(range(len(text)), list(text))
    axes.set_xlabel("position read (key)")
    axes.set_ylabel("reading position (query)")
    axes.set_title(f"L{layer}H{head}'s attention, {m.config['name']} step {m.step}")
    figure.colorbar(image, ax=axes, fraction=0.046)
    figure.tight_layout()
    figure.savefig(args.plot, dpi=90)
    print(f"wrote {args.plot}")
