#!/usr/bin/env bash
# Data-parallel training under mpirun (docs/distributed.md), on this machine only: Open MPI's
# processes talk over shared memory, or over TCP on loopback (--mca btl tcp,self).
#   - 2 processes train the one-process model: the weights within 1e-5 relative after 200
#     steps, and two runs at 2 processes are bit-identical; so is the TCP transport's run;
#   - rank 0 alone writes and logs; the others print nothing;
#   - --resume at another process count; a batch that 2 does not divide, a config that differs
#     on one rank, data one rank cannot read: exit 2 and one line naming the rank;
#   - a rank killed with SIGKILL: every process gone within 10 s, non-zero, the checkpoint
#     loadable and the lock free; Ctrl-C to mpirun: one checkpoint, then --resume goes on.
# A binary built without MPI refuses to be one of several processes (exit 2, one line).
source "$(dirname "$0")/common.sh"
diff_tool=${WEIGHTS_DIFF:-$(dirname "$tf")/tests/weights_diff}

if [[ $("$tf" --version) != *"MPI: Open MPI"* ]]; then
  # Built without MPI: as mpirun would start it (the variable mpirun sets), it must refuse.
  expect_exit 2 "one of 2 processes, built without MPI" -- env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 \
    "$tf" train --config "$src/configs/lesson12.toml" --out "$scratch/refused"
  expect_in "$err" "built without MPI" "the refusal says why"
  one_line "the refusal"
  [[ ! -e "$scratch/refused" ]] && pass "nothing written" || fail "the refused run wrote $scratch/refused"
  finish
fi
command -v mpirun >/dev/null || { fail "the binary has MPI but mpirun is missing (apt-get install openmpi-bin)"; finish; }
[[ -x $diff_tool ]] || { fail "no $diff_tool (built with the tests)"; finish; }
# As root (CI), in a container with few cores: Open MPI refuses both unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe  # Open MPI 5's mpirun (PRRTE)
# TCP, when used, on loopback only: this machine's other addresses are not the test's (and
# Open MPI 5 in CI's Debian 13 root finds no pairing between them).
export OMPI_MCA_btl_tcp_if_include=127.0.0.1/8
mpi=(mpirun -np 2)

tiny_lesson_config "$scratch/tiny.toml" "steps = 200" "batch_size = 8" "eval_every = 100" "threads = 1"
weights() { "$diff_tool" "$1/model.safetensors" "$2/model.safetensors"; }
rel_norm() { awk '{print $8}' <<<"$1"; }  # weights_diff's ‖a − b‖ / ‖a‖, the largest over the tensors

# ---- the same experiment as one process ----
"$tf" train --config "$scratch/tiny.toml" --out "$scratch/one" >/dev/null 2>&1 || fail "one process did not train"
"${mpi[@]}" "$tf" train --config "$scratch/tiny.toml" --out "$scratch/two" >"$scratch/two.out" 2>"$scratch/two.err"
[[ $? -eq 0 ]] && pass "mpirun -np 2 trains" || fail "mpirun -np 2: $(tail -3 "$scratch/two.err")"
result=$(weights "$scratch/one" "$scratch/two")
echo "1 process against 2 processes after 200 steps: $result"
awk -v r="$(rel_norm "$result")" 'BEGIN { exit !(r != "" && r <= 1e-5) }' && pass "2 processes: the one-process weights to ≤ 1e-5" \
  || fail "2 processes are $result from one process"
# The log is rank 0's: one "training ..." line, which names the process count.
started=$(grep -c "training tiny: .*2 processes" "$scratch/two.err")
[[ $started -eq 1 ]] && pass "one log (rank 0's)" || fail "$started start lines in: $(head -5 "$scratch/two.err")"

# The validation loss and the probes, scored by the 2 processes' shares, are what one process
# (eval) scores on the same checkpoint, to the bit: the lesson's, with its 320 probes.
"${mpi[@]}" "$tf" train --config "$src/configs/lesson12.toml" --set train.steps=60 --set train.threads=1 \
  --out "$scratch/lesson-two" >/dev/null 2>"$scratch/lesson-two.err" || fail "the lesson at 2 processes: $(tail -2 "$scratch/lesson-two.err")"
summary=$(tr -d ' \n' <"$scratch/lesson-two/summary.json")
scored=$("$tf" eval --checkpoint "$scratch/lesson-two" --json | tr -d ' \n')
field() { grep -o "\"$1\":[0-9.e-]*" <<<"$2" | head -1 | cut -d: -f2; }
[[ -n $(field val_loss "$summary") && $(field val_loss "$summary") == "$(field loss "$scored")" ]] \
  && pass "the validation loss split over 2 processes is eval's ($(field val_loss "$summary"))" \
  || fail "validation loss $(field val_loss "$summary") at 2 processes, $(field loss "$scored") from eval"
[[ -n $(field probe_accuracy "$summary") && $(field probe_accuracy "$summary") == "$(field probe_accuracy "$scored")" ]] \
  && pass "the probes split over 2 processes score as in eval ($(field probe_accuracy "$summary"))" \
  || fail "probe accuracy $(field probe_accuracy "$summary") at 2 processes, $(field probe_accuracy "$scored") from eval"

"${mpi[@]}" "$tf" train --config "$scratch/tiny.toml" --out "$scratch/two-again" >/dev/null 2>&1
result=$(weights "$scratch/two" "$scratch/two-again")
[[ $result == *"identical true"* ]] && pass "two runs at 2 processes are bit-identical" || fail "two runs at 2 processes: $result"

"${mpi[@]}" --mca btl tcp,self "$tf" train --config "$scratch/tiny.toml" --out "$scratch/tcp" >/dev/null 2>"$scratch/tcp.err" ||
  fail "over TCP: $(tail -3 "$scratch/tcp.err")"
result=$(weights "$scratch/two" "$scratch/tcp")
echo "shared memory against TCP: $result"
[[ $result == *"identical true"* ]] && pass "over TCP (btl tcp,self): the same bits" || fail "over TCP: $result"

# ---- the sum during the backward (train.exchange = "overlap"; "auto" chooses it across machines) ----
# A model wide enough for several buckets. Each bucket's sum started while the backward still
# runs must be the sum after it: at 2 processes a + b is b + a, so the bits are the same. A
# bucket started before its last gradient arrived would differ.
wide=(--set model.d_model=128 --set model.n_layers=4 --set train.steps=30 --set train.eval_every=0)
"${mpi[@]}" --mca btl tcp,self "$tf" train --config "$scratch/tiny.toml" "${wide[@]}" --set train.exchange=after \
  --out "$scratch/wide-after" >/dev/null 2>"$scratch/wide-after.err" || fail "exchange after: $(tail -2 "$scratch/wide-after.err")"
"${mpi[@]}" --mca btl tcp,self "$tf" train --config "$scratch/tiny.toml" "${wide[@]}" --set train.exchange=overlap \
  --out "$scratch/wide-overlap" >/dev/null 2>"$scratch/wide-overlap.err" || fail "exchange overlap: $(tail -2 "$scratch/wide-overlap.err")"
result=$(weights "$scratch/wide-after" "$scratch/wide-overlap")
echo "summed after against during the backward, over TCP: $result"
[[ $result == *"identical true"* ]] && pass "summed during the backward: the same bits as after it" || fail "overlap against after: $result"
grep -q "2 processes (gradients summed during the backward)" "$scratch/wide-overlap.err" && pass "the log says when it sums" \
  || fail "no 'summed during the backward' in: $(head -3 "$scratch/wide-overlap.err")"
grep -q "2 processes (gradients summed after the backward)" "$scratch/two.err" \
  && pass "auto on one machine: after the backward" || fail "auto on one machine: $(grep processes "$scratch/two.err")"
out=$(timeout 120 "${mpi[@]}" "$tf" bench --config "$scratch/tiny.toml" "${wide[@]}" --set train.exchange=overlap --json \
  --steps 2 --repeats 1 --sample-chars 8 2>&1)
buckets=$(grep -o '"buckets":[0-9]*' <<<"$out" | cut -d: -f2) started=$(grep -o '"buckets_started_in_backward":[0-9]*' <<<"$out" | cut -d: -f2)
[[ ${buckets:-0} -ge 4 && ${started:-0} -eq $buckets ]] \
  && pass "bench: all $buckets buckets started during the backward" || fail "bench overlap: buckets ${buckets:-?}, started ${started:-?}"
out=$(timeout 120 "${mpi[@]}" "$tf" bench --config "$scratch/tiny.toml" "${wide[@]}" --set train.exchange=after --json \
  --steps 2 --repeats 1 --sample-chars 8 2>&1)
[[ $(grep -o '"buckets_started_in_backward":[0-9]*' <<<"$out") == '"buckets_started_in_backward":0' ]] \
  && pass "bench after the backward: none started during it" || fail "bench after: $(tail -c 300 <<<"$out")"
expect_exit 2 "train.exchange = \"sometimes\"" -- "$tf" train --config "$scratch/tiny.toml" --set train.exchange=sometimes \
  --out "$scratch/bad-exchange"
expect_in "$err" 'train.exchange' "it names the key"

# A broken exchange must show: a run that compares against a 1-process run with other
# settings (a different seed) must fail the same check.
"$tf" train --config "$scratch/tiny.toml" --set train.seed=7 --out "$scratch/other-seed" >/dev/null 2>&1
result=$(weights "$scratch/one" "$scratch/other-seed")
awk -v r="$(rel_norm "$result")" 'BEGIN { exit !(r > 1e-5) }' && pass "the check sees another run ($(rel_norm "$result"))" \
  || fail "another seed passes the 1e-5 check: $result"

# ---- resume at another process count ----
"$tf" train --config "$scratch/tiny.toml" --set train.steps=100 --out "$scratch/resume-1" >/dev/null 2>&1
cp -r "$scratch/resume-1" "$scratch/resume-2"
"$tf" train --resume "$scratch/resume-1" --set train.steps=200 >/dev/null 2>&1 || fail "resume at 1 process"
"${mpi[@]}" "$tf" train --resume "$scratch/resume-2" --set train.steps=200 >/dev/null 2>"$scratch/resume.err"
[[ $? -eq 0 ]] && pass "a 1-process run resumed at 2 processes" || fail "resume at 2: $(tail -3 "$scratch/resume.err")"
result=$(weights "$scratch/resume-1" "$scratch/resume-2")
awk -v r="$(rel_norm "$result")" 'BEGIN { exit !(r != "" && r <= 1e-5) }' && pass "it goes on as at 1 process ($(rel_norm "$result"))" \
  || fail "resumed at 2 processes: $result"
steps=$(grep -c '"step":' "$scratch/resume-2/metrics.jsonl")
[[ $steps -eq 20 ]] && pass "its metrics run on from step 100 (20 rows)" || fail "$steps metrics rows after the resume"

# ---- refused before training: exit 2, one line, the rank named ----
one_tinyformer_line() {  # the lines tinyformer printed (mpirun adds its own)
  local lines; lines=$(grep -c '^tinyformer' <<<"$err")
  [[ $lines -eq 1 ]] && pass "$1: one line" || fail "$1: $lines lines from tinyformer: $err"
}
expect_exit 2 "a batch 2 processes cannot share" -- "${mpi[@]}" "$tf" train --config "$scratch/tiny.toml" \
  --set train.batch_size=7 --out "$scratch/odd"
expect_in "$err" "train.batch_size = 7 is not divisible by the 2 processes" "it names the batch"
one_tinyformer_line "the odd batch"
# Rank 1 given other arguments: by a wrapper that reads its rank (mpirun's "A : B" form
# crashes Open MPI 5.0.7's mpirun, even for `hostname`).
cat >"$scratch/rank1-differs" <<'EOF'
#!/bin/bash
# rank1-differs TINYFORMER ARGS... -- RANK1_ARGS...: rank 1 gets the arguments after "--" too
tf=$1; shift; args=(); while [[ $# -gt 0 && $1 != -- ]]; do args+=("$1"); shift; done; shift
[[ $OMPI_COMM_WORLD_RANK == 1 ]] && args+=("$@")
exec "$tf" "${args[@]}"
EOF
chmod +x "$scratch/rank1-differs"
expect_exit 2 "a config that differs on rank 1" -- "${mpi[@]}" "$scratch/rank1-differs" "$tf" train \
  --config "$scratch/tiny.toml" --out "$scratch/mixed" -- --set train.steps=300
expect_in "$err" "rank 1: its config differs from rank 0's: train.steps = 300 there, 200 on rank 0" "it names the rank and key"
one_tinyformer_line "the mismatch"
expect_exit 2 "data rank 1 cannot read" -- "${mpi[@]}" "$scratch/rank1-differs" "$tf" train \
  --config "$scratch/tiny.toml" --out "$scratch/nodata" -- --set data.val_path="$scratch/missing.txt"
expect_in "$err" "rank 1: " "it names the rank"
expect_in "$err" "missing.txt" "and the file"
one_tinyformer_line "the unreadable data"

# ---- bench under mpirun: the processes time the same steps together (the warm-up too, which
# is timed: processes that stopped it at different steps waited for each other for ever) ----
out=$(timeout 120 "${mpi[@]}" "$tf" bench --config "$scratch/tiny.toml" --json --steps 3 --repeats 2 --sample-chars 8 2>&1)
code=$?
[[ $code -eq 0 && $(grep -c '"processes":2' <<<"$out") -eq 1 ]] && pass "bench at 2 processes reports once, for both" \
  || fail "bench under mpirun: exit $code: $(tail -c 300 <<<"$out")"
expect_in "$out" '"exchange_share":' "bench reports the exchange's share of a step"

# ---- faults ----
tiny_lesson_config "$scratch/long.toml" "steps = 100000" "batch_size = 8" "eval_every = 0" "checkpoint_every = 20" "threads = 1"
# wait_for FILE PID: until FILE exists, or mpirun ends; at most 60 s
wait_for() { for _ in $(seq 1 6000); do [[ -e $1 ]] && return 0; kill -0 "$2" 2>/dev/null || return 1; sleep 0.01; done; return 1; }
no_rank_left() {  # no_rank_left DIR: no process of a run writing DIR is left
  ! pgrep -f -- "--out $1" >/dev/null
}

"${mpi[@]}" "$tf" train --config "$scratch/long.toml" --out "$scratch/killed" >/dev/null 2>"$scratch/killed.err" &
mpirun_pid=$!
if wait_for "$scratch/killed/train_state.safetensors" $mpirun_pid; then
  victim=$(pgrep -f -- "--out $scratch/killed" | while read -r p; do
             [[ $(cat /proc/"$p"/environ 2>/dev/null | tr '\0' '\n' | grep -x OMPI_COMM_WORLD_RANK=1) ]] && echo "$p"; done | head -1)
  if [[ -n $victim ]]; then
    killed_at=$(date +%s.%N)
    kill -9 "$victim"
    for _ in $(seq 1 150); do kill -0 $mpirun_pid 2>/dev/null || break; sleep 0.1; done
    wait $mpirun_pid; code=$?
    took=$(awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if no_rank_left "$scratch/killed" && [[ $code -ne 0 ]]; then pass "rank 1 killed: all gone in ${took} s, exit $code"
    else fail "rank 1 killed: after ${took} s, exit $code, left: $(pgrep -af -- "--out $scratch/killed")"; fi
    awk -v t="$took" 'BEGIN { exit !(t <= 10) }' && pass "within 10 s" || fail "took $took s"
    "$tf" eval --checkpoint "$scratch/killed" --json >/dev/null 2>&1 && pass "its checkpoint loads" || fail "the checkpoint does not load"
    "$tf" train --resume "$scratch/killed" --set train.steps=60 >/dev/null 2>"$scratch/killed-resume.err" \
      && pass "the lock is free: --resume runs" || fail "resume after the kill: $(tail -2 "$scratch/killed-resume.err")"
  else
    fail "no rank 1 found"; kill -9 $mpirun_pid
  fi
else
  fail "the run never saved a checkpoint: $(tail -3 "$scratch/killed.err")"
fi

# stop_with SIGNAL NAME: a run stopped by SIGNAL sent to mpirun saves one checkpoint, says so
# once, leaves no process, and resumes from it. Open MPI 4's mpirun turns a Ctrl-C (SIGINT)
# into SIGTERM to the processes; Open MPI 5's kills them at once, but both pass SIGUSR1 on.
stop_with() {
  local signal=$1 name=$2 dir=$scratch/stop-$1
  "${mpi[@]}" "$tf" train --config "$scratch/long.toml" --out "$dir" >/dev/null 2>"$dir.err" &
  local mpirun_pid=$!
  if ! wait_for "$dir/train_state.safetensors" $mpirun_pid; then
    fail "$name: the run never saved a checkpoint: $(tail -3 "$dir.err")"; kill -9 $mpirun_pid; return
  fi
  kill -"$signal" $mpirun_pid
  for _ in $(seq 1 150); do kill -0 $mpirun_pid 2>/dev/null || break; sleep 0.1; done
  wait $mpirun_pid; local code=$?
  local saved; saved=$(grep -c "interrupted at step .*checkpoint saved" "$dir.err")
  [[ $saved -eq 1 ]] && pass "$name: one checkpoint saved, said once (exit $code)" \
    || fail "$name: exit $code, $saved lines: $(grep -v '] step ' "$dir.err" | tail -4)"
  no_rank_left "$dir" && pass "$name: no process left" || fail "left after $name: $(pgrep -af -- "--out $dir")"
  local at; at=$(grep -o 'interrupted at step [0-9]*' "$dir.err" | grep -o '[0-9]*$')
  "$tf" train --resume "$dir" --set train.steps=$((at + 10)) >/dev/null 2>&1 &&
    [[ $(tail -1 "$dir/metrics.jsonl") == *"\"step\":$((at + 10))"* ]] \
    && pass "$name: resumed from step $at" || fail "$name: resume from its checkpoint (step $at)"
}
stop_with USR1 "SIGUSR1 to mpirun"
if [[ $(mpirun --version 2>&1) == *"Open MPI) 4."* ]]; then stop_with INT "Ctrl-C to mpirun (Open MPI 4)"
else echo "not checked: Ctrl-C to mpirun, whose Open MPI 5 kills the processes at once (the last checkpoint stays)"; fi
finish
