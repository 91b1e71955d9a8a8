#!/usr/bin/env bash
# tinyformer sweep (issue 18): a grid of settings × seeds as run directories, run two at a
# time; run again it skips what finished; Ctrl-C leaves every training resumable and the
# continued sweep ends bit-identical to one never interrupted; --print-commands' lines train
# the same runs; --collect aggregates; bad input is refused before any run starts.
source "$(dirname "$0")/common.sh"
tiny_lesson_config "$scratch/tiny.toml" "steps = 40" "batch_size = 8" "eval_every = 20"
probes=(--set "data.probes_path=$src/corpus/lesson_probes.tsv")
grid=(--config "$scratch/tiny.toml" "${probes[@]}" --vary model.n_heads=1,2 --seeds 5,6 --threads 1)

# The grid, two at a time: four run directories that sample reads, and the aggregate.
"$tf" sweep "${grid[@]}" --jobs 2 --out "$scratch/a" >"$scratch/a.out" 2>"$scratch/a.err" \
  && pass "a 2 × 2 sweep runs" || fail "sweep: $(cat "$scratch/a.err")"
for dir in "model.n_heads=1/seed=5" "model.n_heads=1/seed=6" "model.n_heads=2/seed=5" "model.n_heads=2/seed=6"; do
  [[ -f "$scratch/a/$dir/summary.json" && -f "$scratch/a/$dir/train.log" ]] && pass "$dir finished, with its log" \
    || fail "$dir: no summary.json or train.log"
done
grep -q '^n_heads = 1' "$scratch/a/model.n_heads=1/seed=6/config.toml" && grep -q '^seed = 6' "$scratch/a/model.n_heads=1/seed=6/config.toml" \
  && pass "a run's config holds its setting and seed" || fail "config.toml of n_heads=1 seed=6"
"$tf" sample --checkpoint "$scratch/a/model.n_heads=2/seed=5" --max-new 5 >/dev/null 2>&1 \
  && pass "sample reads a sweep's run" || fail "sample on a sweep's run"
[[ $(wc -l < "$scratch/a/sweep.csv") -eq 5 ]] && head -1 "$scratch/a/sweep.csv" | grep -q '^group,model.n_heads,seed,dir,finished,val_loss,probe_accuracy' \
  && pass "sweep.csv: a header and one row per run" || fail "sweep.csv: $(head -2 "$scratch/a/sweep.csv")"
grep -q '<svg' "$scratch/a/sweep.svg" && pass "sweep.svg written" || fail "no sweep.svg"
expect_in "$(cat "$scratch/a.out")" "model.n_heads=2  2" "the table has a row per group with n = 2"

# The table's numbers are the runs' own: the mean and sample sd of the two seeds' val loss.
loss5=$(grep -o '"val_loss": [0-9.e-]*' "$scratch/a/model.n_heads=1/seed=5/summary.json" | cut -d' ' -f2)
loss6=$(grep -o '"val_loss": [0-9.e-]*' "$scratch/a/model.n_heads=1/seed=6/summary.json" | cut -d' ' -f2)
row=$(grep '^model.n_heads=1 ' "$scratch/a.out")
want=$(awk -v a="$loss5" -v b="$loss6" 'BEGIN { m = (a + b) / 2; d = a - m; printf "%.4f ± %.4f", m, sqrt(2 * d * d) }')
expect_in "$row" "$want" "n_heads=1: mean ± sample sd of the two seeds ($want)"

# --inspect on the finished sweep: nothing retrained, each run inspected, and the table's
# "reads the name" counts the runs whose inspect report says some head "reads the name".
"$tf" sweep "${grid[@]}" --jobs 2 --out "$scratch/a" --inspect >"$scratch/inspect.out" 2>"$scratch/inspect.err" \
  || fail "sweep --inspect: $(cat "$scratch/inspect.err")"
expect_in "$(cat "$scratch/inspect.err")" "inspecting 4 runs" "--inspect inspects the four finished runs"
for group in 1 2; do
  readers=0
  for seed in 5 6; do grep -q "it reads the name" "$scratch/a/model.n_heads=$group/seed=$seed/inspect.log" && readers=$((readers + 1)); done
  row=$(grep "^model.n_heads=$group " "$scratch/inspect.out")
  expect_in "$row" "  $readers/2" "n_heads=$group: some head reads the name in $readers of 2 seeds, as the reports say"
done
head -1 "$scratch/a/sweep.csv" | grep -q ',heads_reading_colour,heads_reading_who$' && pass "sweep.csv names the readers per run" \
  || fail "sweep.csv header: $(head -1 "$scratch/a/sweep.csv")"
rm -r "$scratch"/a/model.n_heads=*/seed=*/inspect "$scratch"/a/model.n_heads=*/seed=*/inspect.log
"$tf" sweep --collect "$scratch/a" >/dev/null 2>&1 || fail "--collect after removing the inspections"

# Run again: nothing to train, the same aggregate.
cp "$scratch/a/sweep.csv" "$scratch/a.csv"
"$tf" sweep "${grid[@]}" --jobs 2 --out "$scratch/a" >/dev/null 2>"$scratch/again.err" || fail "the repeated sweep"
expect_in "$(cat "$scratch/again.err")" "4 finished before, 0 to resume" "a repeated sweep skips the finished runs"
cmp -s "$scratch/a/sweep.csv" "$scratch/a.csv" && pass "... and aggregates the same" || fail "sweep.csv changed on a repeat"

# Ctrl-C: every training stops with a checkpoint, the sweep exits 130; the same sweep
# continues it, even with other --jobs and --threads: each interrupted run resumes with the
# thread count it started with and ends bit-identical to the uninterrupted sweep's.
long=(--config "$scratch/tiny.toml" "${probes[@]}" --vary model.n_heads=1,2 --seeds 5,6 --set train.steps=2000 --set train.eval_every=1000)
"$tf" sweep "${long[@]}" --jobs 2 --threads 1 --out "$scratch/whole" >/dev/null 2>&1 || fail "the uninterrupted long sweep"
"$tf" sweep "${long[@]}" --jobs 2 --threads 1 --out "$scratch/cut" >/dev/null 2>"$scratch/cut.err" &
pid=$!
# Interrupted 0.2 s after both first runs are training (their first log line written, at
# step 10 of 2,000). The runs are long enough to outlast that wait: at 400 steps, one had
# finished in it on a fast CPU (Intel Xeon, 0.28 s a run) under ctest -j2.
for _ in $(seq 1 600); do
  [[ -s "$scratch/cut/model.n_heads=1/seed=5/metrics.jsonl" && -s "$scratch/cut/model.n_heads=1/seed=6/metrics.jsonl" ]] && break
  sleep 0.05
done
sleep 0.2
kill -INT $pid
wait $pid; code=$?
[[ $code -eq 130 ]] && pass "Ctrl-C stops the sweep with 130" || fail "Ctrl-C: exit $code, expected 130"
expect_in "$(cat "$scratch/cut.err")" "the same command continues it" "the interruption says how to continue"
[[ -f "$scratch/cut/model.n_heads=1/seed=5/train_state.safetensors" && ! -f "$scratch/cut/model.n_heads=1/seed=5/summary.json" ]] \
  && pass "the interrupted run kept a checkpoint" || fail "no checkpoint in the interrupted run (did it finish first?)"
"$tf" sweep "${long[@]}" --jobs 1 --threads 2 --out "$scratch/cut" >/dev/null 2>"$scratch/resume.err" \
  || fail "continuing the sweep"
expect_in "$(cat "$scratch/resume.err")" "2 to resume" "the continued sweep resumes the two interrupted runs"
for dir in "model.n_heads=1/seed=5" "model.n_heads=1/seed=6"; do
  cmp -s "$scratch/whole/$dir/model.safetensors" "$scratch/cut/$dir/model.safetensors" \
    && pass "$dir: interrupted + continued = uninterrupted, bit for bit" || fail "$dir differs from the uninterrupted sweep"
done
grep -q '^threads = 2' "$scratch/cut/model.n_heads=2/seed=5/config.toml" \
  && pass "a run first started by the continued sweep takes its --threads" || fail "threads of a run started later"

# --print-commands: one train command per run, which trains exactly the sweep's run.
"$tf" sweep "${grid[@]}" --out "$scratch/printed" --print-commands >"$scratch/commands" 2>/dev/null \
  || fail "--print-commands"
[[ $(wc -l < "$scratch/commands") -eq 4 ]] && pass "--print-commands prints 4 lines" || fail "commands: $(cat "$scratch/commands")"
[[ ! -e "$scratch/printed/model.n_heads=1" ]] && pass "... and trains nothing" || fail "--print-commands trained"
bash -c "$(sed -n 3p "$scratch/commands")" >/dev/null 2>&1 || fail "running a printed command: $(sed -n 3p "$scratch/commands")"
cmp -s "$scratch/a/model.n_heads=2/seed=5/model.safetensors" "$scratch/printed/model.n_heads=2/seed=5/model.safetensors" \
  && pass "a printed command trains the sweep's run, bit for bit" || fail "the printed command's run differs"
"$tf" sweep --collect "$scratch/printed" >"$scratch/collect.out" 2>/dev/null || fail "--collect"
expect_in "$(cat "$scratch/collect.out")" "model.n_heads=2  1/2" "--collect counts 1 of 2 finished runs of a group"

# Refused before any run starts: one line, exit 2, nothing trained.
refuse() {  # DESCRIPTION NEEDLE sweep-arguments...
  local what=$1 needle=$2; shift 2
  expect_exit 2 "$what" -- "$tf" sweep --config "$scratch/tiny.toml" --out "$scratch/bad" "$@"
  expect_in "$err" "$needle" "$what: the message names it"
  one_line "$what"
}
refuse "an unknown key" "did you mean model.n_heads" --vary model.n_head=1,2
refuse "a value that fails validation" "not divisible by n_heads 3" --vary model.n_heads=2,3
refuse "an empty value list" "no values" --vary model.n_heads=
refuse "an empty value" "an empty value" --vary model.n_heads=1,,2
refuse "a duplicate value" "given twice" --vary model.n_heads=1,2,1
refuse "values that give the same config" "give the same config" --vary optim.lr=1e-3,0.001
refuse "a seed that is not a number" "not a seed" --seeds 1,x
refuse "seeds as a --vary axis" "--seeds" --vary train.seed=1,2
refuse "a grid over 1000 runs" "add --force" --vary optim.lr=1,2,3,4,5,6,7,8,9,10,11 --vary optim.min_lr=1,2,3,4,5,6,7,8,9,10 \
  --seeds 1,2,3,4,5,6,7,8,9,10
[[ ! -e "$scratch/bad" ]] && pass "a refused sweep leaves nothing behind" || fail "a refused sweep wrote $scratch/bad"
expect_exit 2 "a directory holding a different sweep" -- "$tf" sweep --config "$scratch/tiny.toml" "${probes[@]}" --vary model.n_heads=1,4 \
  --seeds 5,6 --threads 1 --out "$scratch/a"
expect_in "$err" "holds a different sweep" "the refusal says the directory holds another sweep"
expect_exit 2 "--collect on a directory that is not a sweep's" -- "$tf" sweep --collect "$scratch/a/model.n_heads=1"
finish
