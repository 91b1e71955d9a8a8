#!/usr/bin/env bash
# Bad input gets a one-line error and exit code 2; the sample and eval commands work.
source "$(dirname "$0")/common.sh"
config="$src/tests/data/tiny.toml"
"$tf" train --config "$config" --out "$scratch/run" >/dev/null 2>&1 || fail "training the tiny model"

expect_exit 2 "missing config file" -- "$tf" train --config "$scratch/nope.toml"
expect_in "$err" "nope.toml" "names the missing file"
printf '[train]\nstep = 10\n' > "$scratch/typo.toml"
expect_exit 2 "unknown key" -- "$tf" train --config "$scratch/typo.toml"
expect_in "$err" "train.steps" "suggests the nearest key"
expect_exit 2 "heads that do not divide the width" -- "$tf" train --config "$config" --set model.n_heads=3 --out "$scratch/x"
expect_in "$err" "n_heads" "names model.n_heads"
expect_exit 2 "lr <= 0" -- "$tf" train --config "$config" --set optim.lr=0 --out "$scratch/x"
expect_in "$err" "optim.lr" "names optim.lr"
printf 'ab\xffcd' > "$scratch/bad.txt"
expect_exit 2 "invalid UTF-8 corpus" -- "$tf" train --config "$config" --set "data.train_path=$scratch/bad.txt" --out "$scratch/x"
expect_in "$err" "byte 2" "names the byte offset"
[[ $(printf '%s' "$err" | wc -l) -le 1 ]] && pass "the error is one line" || fail "multi-line error: $err"

expect_exit 2 "unknown prompt character" -- "$tf" sample --checkpoint "$scratch/run" --prompt "小丁X"
expect_in "$err" "'X'" "names the character"
expect_exit 2 "negative temperature" -- "$tf" sample --checkpoint "$scratch/run" --temperature -1
expect_exit 2 "top-p outside (0,1]" -- "$tf" sample --checkpoint "$scratch/run" --top-p 1.5
expect_exit 2 "top-k above V" -- "$tf" sample --checkpoint "$scratch/run" --top-k 80
expect_exit 2 "no such checkpoint" -- "$tf" sample --checkpoint "$scratch/none"
expect_exit 2 "unknown subcommand" -- "$tf" fly
expect_exit 2 "a number option given a word" -- "$tf" sample --checkpoint "$scratch/run" --temperature abc
expect_in "$err" "tinyformer: error:" "a parse error has the error prefix"
expect_in "$err" "--temperature" "names the option"
[[ $(printf '%s' "$err" | wc -l) -le 1 ]] && pass "the parse error is one line" || fail "multi-line parse error: $err"
expect_exit 2 "negative --threads" -- "$tf" eval --checkpoint "$scratch/run" --threads -3
expect_in "$err" "--threads" "names --threads"

# (an almost untrained model: 。 comes by chance, well within 2000 characters)
out=$("$tf" sample --checkpoint "$scratch/run" --prompt "小丁" --max-new 2000 --stop "。" --seed 3)
generated=${out#小丁}
[[ "$out" == 小丁* && "$generated" == *。 && "${generated%。}" != *。* ]] \
  && pass "sample continues the prompt and stops at the first 。" || fail "sample output: $out"
again=$("$tf" sample --checkpoint "$scratch/run" --prompt "小丁" --max-new 2000 --stop "。" --seed 3)
[[ "$out" == "$again" ]] && pass "the same seed gives the same sample" || fail "samples differ for one seed"

# Past the context: by default the text PyTorch's crop-and-recompute gives (tests/data/
# sampling_reference.{txt,json}, a context-16 model); --cache rolling is another computation.
reference="$src/tests/data/sampling_reference"
want=$(cat "$reference.txt")
for cache in "" "--cache window"; do
  # shellcheck disable=SC2086
  got=$("$tf" sample --checkpoint "$reference.safetensors" --prompt "小丁拿着红色的苹果。" --temperature 0 --max-new 300 $cache)
  [[ "${got#小丁拿着红色的苹果。}" == "$want" ]] && pass "sample ${cache:-(default)}: PyTorch's 300 characters past the context" \
    || fail "sample ${cache:-(default)} departs from PyTorch's text"
done
got=$("$tf" sample --checkpoint "$reference.safetensors" --prompt "小丁拿着红色的苹果。" --temperature 0 --max-new 300 --cache rolling)
[[ -n "$got" && "${got#小丁拿着红色的苹果。}" != "$want" ]] && pass "sample --cache rolling: another text past the context" \
  || fail "sample --cache rolling gave PyTorch's text (or nothing)"
expect_exit 2 "an unknown --cache" -- "$tf" sample --checkpoint "$reference.safetensors" --cache ring
expect_in "$err" "--cache" "names --cache"
"$tf" train --config "$config" --set model.positions=learned --set train.steps=2 --out "$scratch/learned" >/dev/null 2>&1 \
  || fail "training a learned-positions model"
expect_exit 2 "--cache rolling on learned positions" -- "$tf" sample --checkpoint "$scratch/learned" --cache rolling
expect_in "$err" "learned positions, which end at the context" "says why"

json=$("$tf" eval --checkpoint "$scratch/run" --json)
for key in loss bpc perplexity predicted probe_accuracy misses; do
  expect_in "$json" "\"$key\"" "eval --json has $key"
done
val_loss=$(grep -o '"val_loss": [0-9.e-]*' "$scratch/run/summary.json" | awk '{print $2}')
eval_loss=$(printf '%s' "$json" | grep -o '"loss": [0-9.e-]*' | awk '{print $2}')
awk -v a="$val_loss" -v b="$eval_loss" 'BEGIN { exit !(a - b < 1e-9 && b - a < 1e-9) }' \
  && pass "summary val_loss equals eval's loss ($eval_loss)" || fail "summary val_loss $val_loss vs eval loss $eval_loss"

# bench: its JSON, the buffers its timed steps take from the system (none), and bad input
json=$("$tf" bench --config "$config" --json --repeats 2 --steps 2 --sample-chars 16 --threads 1) || fail "bench failed"
for key in train_tokens_per_s sample_tokens_per_s flops_per_token gflops gemm_peak_gflops peak_rss_mb; do
  expect_in "$json" "\"$key\"" "bench --json has $key"
done
expect_in "$json" '"timed_buffer_allocations":0' "bench: the timed steps take no tensor buffer from the system"
expect_in "$json" '"flops_per_token":29088.0' "bench: FLOPs per token of the tiny model, 6(12LD^2+DV)+12LTD"
json=$("$tf" bench --config "$config" --json --repeats 1 --steps 2 --sample-chars 4 --threads 1 --profile) || fail "bench --profile failed"
expect_in "$json" '"outside_kernels_ms"' "bench --profile --json has the time outside the kernels"
expect_in "$json" '"kernel":"optimizer: AdamW"' "bench --profile times AdamW"
expect_exit 2 "bench --vocab below 1" -- "$tf" bench --config "$config" --vocab -3
expect_in "$err" "--vocab -3" "names the option"
expect_exit 2 "bench --repeats 0" -- "$tf" bench --config "$config" --repeats 0
finish
