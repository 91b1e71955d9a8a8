#!/usr/bin/env bash
# One run directory, one writer. Two `train` runs of the same directory started 0.3 s apart:
# one trains, the other fails at once (exit 2, one line naming the directory and the first
# one's pid). `--resume` and `--force` of a directory in use are refused the same way. After
# the holder is killed with SIGKILL (no handler runs), the directory is free again: the
# kernel drops the lock with the process.
source "$(dirname "$0")/common.sh"
config="$src/tests/data/tiny.toml"
dir="$scratch/run"
# Long enough to outlive the test (it is killed), checkpointing often, one thread.
long=(--set train.steps=1000000 --set train.checkpoint_every=5 --set train.eval_every=1000000
      --set logging.log_every=1000000 --set train.threads=1 --set "data.probes_path=\"\"")

wait_for() {  # wait_for FILE: up to 60 s
  for _ in $(seq 1 600); do [[ -e "$1" ]] && return 0; sleep 0.1; done
  return 1
}

# ---- two runs started 0.3 s apart into one new directory ----
"$tf" train --config "$config" --out "$dir" "${long[@]}" >/dev/null 2>"$scratch/a.err" & a=$!
sleep 0.3
"$tf" train --config "$config" --out "$dir" "${long[@]}" >/dev/null 2>"$scratch/b.err" & b=$!
# One of the two must give up within seconds; the other trains on.
loser=""
for _ in $(seq 1 300); do
  if ! kill -0 $a 2>/dev/null; then loser=a; break; fi
  if ! kill -0 $b 2>/dev/null; then loser=b; break; fi
  sleep 0.1
done
if [[ $loser == a ]]; then wait $a; code=$?; holder=$b; message=$(cat "$scratch/a.err")
elif [[ $loser == b ]]; then wait $b; code=$?; holder=$a; message=$(cat "$scratch/b.err")
else code=none; holder=$a; message="both still running after 30 s"; fi
[[ $code == 2 ]] && pass "the second run of one directory exits 2" || fail "the losing run's exit: $code ($message)"
[[ $(printf '%s\n' "$message" | grep -c .) -eq 1 ]] && pass "its error is one line" || fail "error is not one line: $message"
expect_in "$message" "$dir" "the error names the directory"
expect_in "$message" "pid $holder" "the error names the holder's pid ($holder)"
kill -0 $holder 2>/dev/null && pass "the first run trains on" || fail "the holder is gone: $(cat "$scratch"/[ab].err)"

# ---- --resume and --force of the directory in use ----
wait_for "$dir/train_state.safetensors" || fail "the holder wrote no checkpoint in 60 s"
expect_exit 2 "--resume of a directory in use" -- timeout 30 "$tf" train --resume "$dir"
expect_in "$err" "pid $holder" "--resume's error names the holder"
expect_exit 2 "--force into a directory in use" -- timeout 30 "$tf" train --config "$config" --out "$dir" --force "${long[@]}"
expect_in "$err" "pid $holder" "--force's error names the holder"

# ---- SIGKILL frees the directory ----
kill -KILL $holder; wait $holder 2>/dev/null
expect_exit 0 "--resume after the holder was SIGKILLed" -- timeout 120 "$tf" train --resume "$dir" --set train.steps=10
[[ -e "$dir/summary.json" ]] && pass "the resumed run finished and wrote summary.json" || fail "no summary.json after resume"
kill $a $b 2>/dev/null
finish
