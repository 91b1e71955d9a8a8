#!/usr/bin/env bash
# Training through the CLI: determinism, the run directory's files, Ctrl-C, and a resumed
# run ending bit-identical to an uninterrupted one.
source "$(dirname "$0")/common.sh"
config="$src/tests/data/tiny.toml"

# Same config, seed and thread count: the same bytes.
"$tf" train --config "$config" --out "$scratch/a" >/dev/null 2>&1 || fail "training run a"
"$tf" train --config "$config" --out "$scratch/b" >/dev/null 2>&1 || fail "training run b"
for f in config.toml metrics.jsonl loss.svg model.safetensors train_state.safetensors summary.json; do
  [[ -s "$scratch/a/$f" ]] && pass "run directory holds $f" || fail "run directory lacks $f"
done
cmp -s "$scratch/a/model.safetensors" "$scratch/b/model.safetensors" && pass "two runs give identical weights" \
  || fail "two runs of the same config differ"
diff <(grep -o '"loss":[^,]*' "$scratch/a/metrics.jsonl") <(grep -o '"loss":[^,]*' "$scratch/b/metrics.jsonl") >/dev/null \
  && pass "the same loss at every logged step" || fail "logged losses differ"
ls -a "$scratch/a" | grep -q '\.tmp' && fail "temporary files left behind" || pass "no temporary files left"
for key in steps train_loss val_loss val_bpc probe_accuracy tokens_per_second wall_seconds params vocab_size; do
  grep -q "\"$key\"" "$scratch/a/summary.json" && pass "summary has $key" || fail "summary.json lacks $key"
done

# A second run into the same directory is refused rather than overwriting it.
expect_exit 2 "training over an existing run is refused" -- "$tf" train --config "$config" --out "$scratch/a"
expect_in "$err" "--resume" "the refusal says how to continue"

# Ctrl-C: a checkpoint is saved, the exit is clean; --resume finishes bit-identical. Once
# with tinyformer's generator, once with PyTorch's (whose state is 624 words and a kept normal).
interrupt_and_resume() {  # NAME [--set K=V]...
  local name=$1; shift
  "$tf" train --config "$config" --out "$scratch/long$name" --set train.steps=400 --set logging.log_every=1 "$@" \
    >/dev/null 2>&1 || fail "uninterrupted long run ($name)"
  "$tf" train --config "$config" --out "$scratch/cut$name" --set train.steps=400 --set logging.log_every=1 "$@" \
    >/dev/null 2>"$scratch/cut.err" &
  local pid=$! code
  for _ in $(seq 1 300); do [[ -s "$scratch/cut$name/metrics.jsonl" ]] && break; sleep 0.05; done
  sleep 0.2
  kill -INT $pid
  wait $pid; code=$?
  if [[ $code -eq 130 ]]; then pass "Ctrl-C exits with 130 (${name:-own rng})"; else fail "Ctrl-C: exit $code, expected 130 (did the run finish first?)"; fi
  grep -q "interrupted at step" "$scratch/cut.err" && pass "Ctrl-C names the step" || fail "no interruption message: $(cat "$scratch/cut.err")"
  "$tf" sample --checkpoint "$scratch/cut$name" --max-new 5 >/dev/null 2>&1 && pass "the interrupted run's checkpoint loads" \
    || fail "the interrupted run's checkpoint does not load"
  "$tf" train --resume "$scratch/cut$name" >/dev/null 2>&1 || fail "resume ($name)"
  cmp -s "$scratch/long$name/model.safetensors" "$scratch/cut$name/model.safetensors" \
    && pass "interrupted + resumed = uninterrupted, bit for bit (${name:-own rng})" || fail "resumed weights differ from the uninterrupted run ($name)"
}
interrupt_and_resume "" # tinyformer's generator
interrupt_and_resume "_torch" --set train.rng=torch
# Random evaluation windows come from a generator of their own: resuming stays bit-identical.
interrupt_and_resume "_eval_batches" --set train.eval_batches=3 --set train.eval_every=50
cmp -s "$scratch/long/model.safetensors" "$scratch/long_torch/model.safetensors" \
  && fail "train.rng = \"torch\" changed nothing" || pass "train.rng = \"torch\" draws other weights and batches"
expect_exit 2 "resume with another train.rng refused" -- "$tf" train --resume "$scratch/cut_torch" --set train.rng=tinyformer \
  --set train.steps=420
expect_in "$err" "train.rng" "the refusal names train.rng"

# A loss that stops being finite ends training with exit 1, naming the step, and keeps the
# last good checkpoint untouched.
cp "$scratch/a/model.safetensors" "$scratch/good.safetensors"
expect_exit 1 "a non-finite loss stops training" -- "$tf" train --resume "$scratch/a" --set train.steps=60 \
  --set optim.lr=1e30 --set optim.grad_clip=0
expect_in "$err" "at step" "the error names the step"
expect_in "$err" "step 40" "the error names the kept checkpoint"
cmp -s "$scratch/good.safetensors" "$scratch/a/model.safetensors" && pass "the last good checkpoint is kept" \
  || fail "the checkpoint changed after a non-finite loss"

# Resuming with a different model is refused, naming the keys.
expect_exit 2 "resume with another model refused" -- "$tf" train --config "$config" --resume "$scratch/cut" --set model.d_model=32
expect_in "$err" "model.d_model" "the refusal names model.d_model"

# Resuming on other text with the same vocabulary (the validation text's last story moved
# to the front) is refused, naming both; the same text again resumes.
val="$src/corpus/lesson_val.txt"
{ tail -n 1 "$val"; head -n -1 "$val"; } > "$scratch/val_shuffled.txt"
expect_exit 2 "resume on different data refused" -- "$tf" train --config "$config" --resume "$scratch/cut" \
  --set "data.val_path=$scratch/val_shuffled.txt" --set train.steps=420
expect_in "$err" "different data" "the refusal says the data differ"
expect_in "$err" "fingerprint" "the refusal gives both fingerprints"
cp "$val" "$scratch/val_copy.txt"
"$tf" train --config "$config" --resume "$scratch/cut" --set "data.val_path=$scratch/val_copy.txt" --set train.steps=420 \
  >/dev/null 2>&1 && pass "the same text from another file resumes" || fail "resume on a copy of the same text refused"
finish
