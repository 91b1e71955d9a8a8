#!/usr/bin/env bash
# Ctrl-C during training is never taken by a signal handler (src/support/interrupts.cpp): a
# handler's frame lands below the stack pointer of the thread it interrupts, and oneDNN's JIT
# sgemm kernels point that into a heap buffer while they run (oneDNN issue 4845), so Ctrl-C
# mid-step corrupted the heap (on an Intel Xeon with AMX, 12 of 80 runs hit by bursts of
# SIGINT crashed). So, while `train` runs its steps on two threads: every thread blocks
# SIGINT, and the process has no handler for it; a burst of SIGINTs stops it cleanly with a
# checkpoint, every time; and a Ctrl-C before any step still ends the process at once.
source "$(dirname "$0")/common.sh"
tiny_lesson_config "$scratch/mid.toml" "steps = 3000" "batch_size = 32" "eval_every = 3000"
sed -i 's/^d_model = 32$/d_model = 128/' "$scratch/mid.toml"
sigint_bit=$((1 << (2 - 1)))  # SIGINT is signal 2; /proc's masks are hex, bit n-1 for signal n

# wait_for_training DIR PID: until the first log line, or the process ends; at most 2 minutes
# (a fraction of a second here, but under qemu-user with another test beside it, over 10 s).
wait_for_training() {
  for _ in $(seq 1 12000); do
    [[ -s "$1/metrics.jsonl" ]] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

"$tf" train --config "$scratch/mid.toml" --threads 2 --out "$scratch/masks" >/dev/null 2>"$scratch/masks.err" &
pid=$!
if wait_for_training "$scratch/masks" $pid; then
  threads=0 unblocked=0 waiting=0
  for task in /proc/$pid/task/*; do
    threads=$((threads + 1))
    # The watching thread, in sigwait, has SIGINT out of its mask while it waits: it takes the
    # signal as sigwait's answer, on no stack but its own.
    if grep -q sigtimedwait "$task/wchan" 2>/dev/null; then waiting=$((waiting + 1)); continue; fi
    blocked=$(awk '/^SigBlk:/ {print $2}' "$task/status")
    (( 0x$blocked & sigint_bit )) || unblocked=$((unblocked + 1))
  done
  caught=$(awk '/^SigCgt:/ {print $2}' /proc/$pid/status)
  [[ $threads -ge 3 ]] && pass "training on 2 threads (and the watching one): $threads threads" \
    || fail "expected at least 3 threads while training, found $threads"
  [[ $waiting -eq 1 ]] && pass "one thread waits for SIGINT in sigwait" || fail "$waiting threads wait in sigwait, expected 1"
  [[ $unblocked -eq 0 ]] && pass "every other thread blocks SIGINT" || fail "$unblocked of $threads threads take SIGINT"
  # Under qemu-user (an aarch64 binary on this x86-64 machine, scripts/cross-arm64.sh --full)
  # the process is qemu, which catches every signal itself to hand it to the program it runs:
  # its SigCgt says nothing about the program's handlers.
  machine=$(binary_machine)
  if [[ $machine != "$(uname -m)" ]]; then
    echo "not checked: SigCgt, under emulation ($machine on $(uname -m)) it is qemu's"
  else
    (( 0x$caught & sigint_bit )) && fail "a SIGINT handler is installed (SigCgt $caught)" \
      || pass "no handler for SIGINT"
  fi
else
  fail "the training never logged a step: $(cat "$scratch/masks.err")"
fi
kill -INT $pid; wait $pid; code=$?
[[ $code -eq 130 ]] && pass "Ctrl-C stops it with 130" || fail "Ctrl-C: exit $code, expected 130"

# Bursts of 300 SIGINTs at moments spread over the steps: every run stops cleanly, with a
# checkpoint (the handler version crashed in 6 of 40 such runs there).
bad=0 hit=0
for run in 1 2 3 4 5 6; do
  dir="$scratch/burst$run"
  "$tf" train --config "$scratch/mid.toml" --threads 2 --out "$dir" >/dev/null 2>"$dir.err" &
  pid=$!
  if ! wait_for_training "$dir" $pid; then
    fail "burst run $run never logged a step: $(cat "$dir.err")"
    kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
    continue
  fi
  hit=$((hit + 1))
  sleep "0.0$((run * 15 % 10))"
  for _ in $(seq 1 300); do kill -INT $pid 2>/dev/null || break; done
  wait $pid; code=$?
  if [[ $code -ne 130 || ! -f "$dir/train_state.safetensors" ]]; then
    bad=$((bad + 1)); echo "burst run $run: exit $code; $(tail -n 1 "$dir.err")"
  fi
done
[[ $hit -eq 6 && $bad -eq 0 ]] && pass "6 runs hit by bursts of SIGINT all stopped with a checkpoint" \
  || fail "$bad of the $hit runs hit by bursts of SIGINT did not stop cleanly"

# Before the steps (here: while it waits to read its config from a pipe that stays empty),
# nothing catches Ctrl-C: the process ends at once, killed by SIGINT as its default action
# does. (A script's background job starts with SIGINT ignored; env gives it the default.)
mkfifo "$scratch/config.fifo"
env --default-signal=INT "$tf" train --config "$scratch/config.fifo" --out "$scratch/early" >/dev/null 2>&1 &
pid=$!
sleep 0.3
kill -INT $pid
# If it lives on, it is killed after 5 s. (Polled here, not left to a background subshell to
# kill: a subshell killed just after its fork can still run this script's EXIT trap, which
# removed $scratch, fifo and all, under the next check about one run in ten on a busy machine.)
for _ in $(seq 1 500); do kill -0 $pid 2>/dev/null || break; sleep 0.01; done
kill -KILL $pid 2>/dev/null
wait $pid; code=$?
[[ $code -eq 130 ]] && pass "Ctrl-C before the first step ends the process (exit $code)" \
  || fail "Ctrl-C before the first step: exit $code, expected 130 (killed by SIGINT)"
# ... and a background job, which ignored SIGINT when it started, goes on ignoring it there.
"$tf" train --config "$scratch/config.fifo" --out "$scratch/early" >/dev/null 2>&1 &
pid=$!
sleep 0.3
kill -INT $pid
sleep 0.3
kill -0 $pid 2>/dev/null && pass "an ignored SIGINT stays ignored before the first step" \
  || fail "a background job ended on a SIGINT it ignored"
kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
finish
