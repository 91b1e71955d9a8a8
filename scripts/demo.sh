#!/usr/bin/env bash
# The lesson end to end on a fresh machine: install what is missing, build (Release), train
# the lesson model (configs/lesson12.toml), sample a few stories, score the probes, inspect
# the heads, and say how to open the explorer (tinyformer serve).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null  # unity batches: 2.3x faster
cmake --build build -j "$(nproc)"

echo
echo "== train: the lesson model (D=64, 2 heads of width 32, 2 layers, 79 characters) =="
build/tinyformer train --config configs/lesson12.toml --force

echo
echo "== sample: stories continued from the lesson's sentence =="
build/tinyformer sample --checkpoint runs/lesson12 --prompt "小丁拿着红色的苹果。" --max-new 100 \
  --temperature 1.0 --top-k 20 --num-samples 2 --seed 1

echo
echo "== eval: validation loss and the who / what-colour probes =="
build/tinyformer eval --checkpoint runs/lesson12 | grep -v "^  miss:" || true
echo
echo "The run directory runs/lesson12 holds config.toml, metrics.jsonl, loss.svg,"
echo "model.safetensors, train_state.safetensors and summary.json."

echo
echo "== inspect: where does each trained head read? =="
build/tinyformer inspect --checkpoint runs/lesson12 --text '小丁拿着红色的苹果。谁拿着苹果？小丁。' --view terminal
echo
echo "runs/lesson12/inspect/report.html shows every head's map, its reading patterns, where it"
echo "reads when an answer is due and what the model loses without it; heads.json has the numbers."

echo
echo "== explore: type your own sentence and watch every head =="
echo "Start the explorer, then open http://127.0.0.1:8080/ in a browser on this machine:"
echo
echo "  build/tinyformer serve --checkpoint runs/lesson12"
echo
echo "Type a sentence, hover a cell for its weight, click a head to switch it off and see the"
echo "answer's probability change, sample, or load one of the probes. Ctrl-C stops it."
echo "On another machine: ssh -L 8080:127.0.0.1:8080 <this machine>, then open the same address."
echo "The lesson's split/merge demo is at http://127.0.0.1:8080/split-merge, and"
echo "build/tinyformer lesson prints the lesson's numbers, computed by the engine."
