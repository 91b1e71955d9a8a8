#!/usr/bin/env bash
# Runs that are interrupted without warning. A training run is killed with SIGKILL (no
# handler, no last checkpoint) at 5 moments drawn from a seeded random stream; after each
# kill every checkpoint file in the run directory must load, and `--resume` must finally
# end with exactly the weights of a run that was never interrupted. Then: a directory that
# cannot be written is refused before training, a disk that fills up stops the run at the
# first failed write with the last good checkpoint intact, and --resume with another model
# is refused naming every key that differs.
source "$(dirname "$0")/common.sh"
config="$src/tests/data/tiny.toml"
steps=150
run=(--set train.steps=$steps --set train.checkpoint_every=3 --set train.eval_every=50 --set logging.log_every=10
     --set train.threads=1 --set "data.probes_path=\"\"")  # one thread: a loaded machine slows OpenMP most
kills=5
RANDOM=6  # the kill moments are random, but the same on every run of this test

now_ms() { date +%s%3N; }
checkpoints_load() {  # checkpoints_load DIR WHEN: every checkpoint file present must be whole
  local dir=$1 when=$2
  if [[ -e "$dir/model.safetensors" ]]; then
    "$tf" eval --checkpoint "$dir" --text "$src/corpus/lesson_val.txt" >/dev/null 2>"$scratch/eval.err" \
      && pass "$when: model.safetensors loads" || fail "$when: model.safetensors does not load: $(cat "$scratch/eval.err")"
  fi
  if [[ -e "$dir/train_state.safetensors" ]]; then
    [[ -e "$dir/model.safetensors" ]] && pass "$when: train_state.safetensors has its model.safetensors beside it" \
      || fail "$when: train_state.safetensors without model.safetensors"
  fi
}

# The uninterrupted run, and how long it takes here (the kill moments scale with it, so a
# sanitizer build, slower, is killed as often mid-run as a release build).
start=$(now_ms)
"$tf" train --config "$config" --out "$scratch/whole" "${run[@]}" >/dev/null 2>&1 || fail "the uninterrupted run"
duration=$(($(now_ms) - start))
pass "the uninterrupted run took ${duration} ms"

# Kill, check, resume (or start afresh if no checkpoint was written yet), kill again...
step_on_disk() { grep -ao '"step":"[0-9]*"' "$1" 2>/dev/null | head -1 | grep -o '[0-9]\+' || echo 0; }
killed=0
for k in $(seq 1 $kills); do
  remaining=$((duration * (steps - $(step_on_disk "$scratch/cut/train_state.safetensors")) / steps))
  if [[ -e "$scratch/cut/train_state.safetensors" ]]; then
    "$tf" train --resume "$scratch/cut" >/dev/null 2>&1 &
  else
    "$tf" train --config "$config" --out "$scratch/cut" "${run[@]}" >/dev/null 2>&1 &
  fi
  pid=$!
  delay=$((RANDOM % (remaining * 3 / 4 + 1) + remaining / 20))  # within the first 80 % of what is left
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  kill -KILL $pid 2>/dev/null
  { wait $pid; } 2>/dev/null; code=$?  # (quietly: no "Killed" from bash)
  if [[ $code -eq 137 ]]; then
    killed=$((killed + 1))
    pass "kill $k after ${delay} ms (SIGKILL, exit 137; checkpoint on disk: step $(step_on_disk "$scratch/cut/train_state.safetensors"))"
  elif [[ $code -eq 0 ]]; then
    pass "kill $k after ${delay} ms came after the run had finished"
  else
    fail "kill $k: exit $code, expected 137 (killed) or 0 (finished first)"
  fi
  checkpoints_load "$scratch/cut" "after kill $k"
done
[[ $killed -ge 3 ]] && pass "$killed of $kills kills landed mid-run" || fail "only $killed of $kills kills landed mid-run"

if [[ -e "$scratch/cut/train_state.safetensors" ]]; then
  "$tf" train --resume "$scratch/cut" >/dev/null 2>"$scratch/resume.err" || fail "the last resume: $(cat "$scratch/resume.err")"
else
  "$tf" train --config "$config" --out "$scratch/cut" "${run[@]}" >/dev/null 2>&1 || fail "the fresh run"
fi
cmp -s "$scratch/whole/model.safetensors" "$scratch/cut/model.safetensors" \
  && pass "killed $killed times and resumed = uninterrupted, bit for bit" \
  || fail "the resumed run's weights differ from the uninterrupted run's"
cmp -s "$scratch/whole/train_state.safetensors" "$scratch/cut/train_state.safetensors" \
  && pass "the training states (weights, AdamW moments, step, random state) are identical too" \
  || fail "the resumed run's train_state.safetensors differs"
leftovers=$(ls -A "$scratch/cut" | grep '\.tmp\.' | tr '\n' ' ')
[[ -z "$leftovers" ]] && pass "no temporary files left behind by the killed writers" || fail "temporaries left: $leftovers"

# ---- output directories that cannot be written ----
printf 'x' >"$scratch/a_file"
expect_exit 2 "--out inside a regular file" -- "$tf" train --config "$config" --out "$scratch/a_file/run"
expect_in "$err" "cannot create the run directory" "the error names the problem"
unwritable=""
if [[ $(id -u) -ne 0 ]]; then
  mkdir -p "$scratch/read_only" && chmod 555 "$scratch/read_only" && unwritable="$scratch/read_only"
elif ! touch /proc/self/tinyformer_probe 2>/dev/null; then
  unwritable=/proc/self  # root may write anywhere on disk; not into procfs
fi
if [[ -n "$unwritable" ]]; then
  start=$(now_ms)
  expect_exit 2 "an unwritable run directory ($unwritable)" -- "$tf" train --config "$config" --out "$unwritable" \
    --set train.steps=100000
  expect_in "$err" "the run directory must be writable" "refused before training, naming the directory"
  [[ $(($(now_ms) - start)) -lt 5000 ]] && pass "refused at once, not after training" || fail "refusal took too long"
else
  pass "(no unwritable directory to try here)"
fi

# A full disk, simulated with a file-size limit (writes past it fail with EFBIG, as with
# ENOSPC): the first checkpoint write fails, the run stops with exit 1 naming the file, and
# the last good checkpoint is untouched.
"$tf" train --config "$config" --out "$scratch/full" "${run[@]}" --set train.steps=20 >/dev/null 2>&1 || fail "run to fill"
cp "$scratch/full/model.safetensors" "$scratch/full_model.before"
cp "$scratch/full/train_state.safetensors" "$scratch/full_state.before"
err=$( (trap '' XFSZ; ulimit -f 40; exec "$tf" train --resume "$scratch/full" --set train.steps=40) 2>&1 >/dev/null)
code=$?
[[ $code -eq 1 ]] && pass "a full disk stops the run with exit 1" || fail "full disk: exit $code, expected 1: $err"
expect_in "$err" "train_state.safetensors: cannot write: File too large" "the error names the file and the reason"
expect_in "$err" "the checkpoint of step 20 in $scratch/full is kept" "the error says which checkpoint survived"
cmp -s "$scratch/full/model.safetensors" "$scratch/full_model.before" && \
  cmp -s "$scratch/full/train_state.safetensors" "$scratch/full_state.before" \
  && pass "the last good checkpoint is untouched" || fail "the checkpoint changed after a failed write"
[[ -z "$(ls -A "$scratch/full" | grep '\.tmp\.')" ]] && pass "the failed write left no temporary" \
  || fail "the failed write left a temporary"
"$tf" train --resume "$scratch/full" --set train.steps=40 >/dev/null 2>&1 \
  && pass "with space again, the run resumes from it" || fail "resuming after the full disk"

# --resume with another model: refused, naming every key that differs.
expect_exit 2 "resume with another model" -- "$tf" train --resume "$scratch/full" --set model.d_model=32 \
  --set model.n_layers=2 --set model.positions=learned
for key in "model.d_model (16 in the run, 32 now)" "model.n_layers (1 in the run, 2 now)" \
           'model.positions ("rope" in the run, "learned" now)'; do
  expect_in "$err" "$key" "the refusal names $key"
done
finish
