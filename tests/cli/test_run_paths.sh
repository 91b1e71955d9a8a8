#!/usr/bin/env bash
# A run travels: trained in one folder with paths relative to its config, it is evaluated,
# inspected, sampled and resumed from any other working directory, and still after the
# project folder moves as a whole; a data file that has gone is named (as stored and as
# tried) with the option that passes a new one. `inspect` alone uses the run's own probes.
source "$(dirname "$0")/common.sh"

project="$scratch/project"
mkdir -p "$project/configs" "$project/corpus" "$scratch/elsewhere"
cp "$src/corpus/lesson_train.txt" "$src/corpus/lesson_val.txt" "$src/corpus/lesson_probes.tsv" "$project/corpus/"
sed -e 's|"../../corpus/|"../corpus/|' -e 's|^steps = 40|steps = 20|' "$src/tests/data/tiny.toml" > "$project/configs/tiny.toml"
(cd "$project" && "$tf" train --config configs/tiny.toml --out runs/tiny >/dev/null 2>"$scratch/err") \
  || fail "training in the project folder: $(cat "$scratch/err")"

# The checkpoint holds its data paths relative to its own folder, and says so.
meta=$(head -c 4096 "$project/runs/tiny/model.safetensors" | tr -d '\000')
expect_in "$meta" '\"val_path\":\"../../corpus/lesson_val.txt\"' "the checkpoint's val_path is relative to runs/tiny"
expect_in "$meta" '"data_paths":"relative to this file'"'"'s folder"' "the checkpoint says what its paths are relative to"

from_elsewhere() {  # from_elsewhere RUN_DIR: eval, inspect, sample and resume from another folder
  local run=$1 label=$2 out
  out=$(cd "$scratch/elsewhere" && "$tf" eval --checkpoint "$run" --json 2>"$scratch/err")
  [[ $? -eq 0 ]] && pass "$label: eval finds the validation text and probes" || fail "$label: eval: $(cat "$scratch/err")"
  expect_in "$out" '"probe_total": 320' "$label: eval scores the run's 320 probes"
  (cd "$scratch/elsewhere" && "$tf" inspect --checkpoint "$run" --out "$scratch/inspected" >/dev/null 2>"$scratch/err")
  [[ $? -eq 0 ]] && pass "$label: inspect with neither --text nor --probes" || fail "$label: inspect: $(cat "$scratch/err")"
  expect_in "$(cat "$scratch/err")" "no --text or --probes: the run's own probes" "$label: inspect says it uses the run's probes"
  [[ $(grep -c "the run's own probes" "$scratch/err") -eq 1 ]] && pass "$label: in one line" || fail "$label: not one line"
  grep -q '"total": 320' "$scratch/inspected/heads.json" && pass "$label: inspect measured the 320 probes" \
    || fail "$label: heads.json has no probe total of 320"
  [[ "$(cat "$scratch/err")" != *"no validation text"* ]] && pass "$label: inspect read the validation text" \
    || fail "$label: inspect found no validation text: $(grep 'no validation' "$scratch/err")"
  (cd "$scratch/elsewhere" && "$tf" sample --checkpoint "$run" --prompt "小丁" --max-new 5 >/dev/null 2>"$scratch/err") \
    && pass "$label: sample" || fail "$label: sample: $(cat "$scratch/err")"
}
from_elsewhere "$project/runs/tiny" "absolute run path"
from_elsewhere "../project/runs/tiny" "relative run path"
(cd "$scratch/elsewhere" && "$tf" train --resume ../project/runs/tiny --set train.steps=30 >/dev/null 2>"$scratch/err") \
  && pass "train --resume from another folder" || fail "train --resume: $(cat "$scratch/err")"

# The project folder moves as a whole: the run still finds its data.
mv "$project" "$scratch/moved"
from_elsewhere "$scratch/moved/runs/tiny" "after the project moved"

# The data moves without the run: one line naming the key, the stored and the tried path,
# and how to pass the new one.
mv "$scratch/moved/corpus" "$scratch/corpus-away"
expect_exit 2 "eval, the probes gone" -- "$tf" eval --checkpoint "$scratch/moved/runs/tiny"
expect_in "$err" "data.probes_path ../../corpus/lesson_probes.tsv (from $scratch/moved/runs/tiny): no such file $scratch/moved/corpus/lesson_probes.tsv" \
  "names the probes' stored and tried paths"
expect_in "$err" "give the probes with --probes FILE" "says how to pass the probes"
one_line "the probes gone"
expect_exit 2 "eval --probes, the validation text gone" -- \
  "$tf" eval --checkpoint "$scratch/moved/runs/tiny" --probes "$scratch/corpus-away/lesson_probes.tsv"
expect_in "$err" "data.train_path ../../corpus/lesson_train.txt" "names the missing corpus file"
expect_in "$err" "score a text with --text FILE" "says how to pass a text"
one_line "the corpus gone"
out=$("$tf" eval --checkpoint "$scratch/moved/runs/tiny" --probes "$scratch/corpus-away/lesson_probes.tsv" \
        --text "$scratch/corpus-away/lesson_val.txt" --json 2>"$scratch/err")
[[ $? -eq 0 ]] && pass "eval with the new paths given" || fail "eval with the new paths: $(cat "$scratch/err")"
expect_exit 2 "inspect alone, the probes gone" -- "$tf" inspect --checkpoint "$scratch/moved/runs/tiny" --out "$scratch/x"
expect_in "$err" "no such file $scratch/moved/corpus/lesson_probes.tsv; give the probes with --probes FILE, or a text with --text TEXT" \
  "inspect names the tried path and both options"
one_line "inspect, the probes gone"

# A run whose config names no probes: inspect alone says what to give.
"$tf" train --config "$src/tests/data/tiny.toml" --set data.probes_path= --set train.steps=2 --out "$scratch/noprobes" \
  >/dev/null 2>&1 || fail "training without probes"
expect_exit 2 "inspect alone, no probes in the config" -- "$tf" inspect --checkpoint "$scratch/noprobes" --out "$scratch/x"
expect_in "$err" "config names no probes; give --text TEXT or --probes FILE" "says what to give"
one_line "no probes in the config"
finish
