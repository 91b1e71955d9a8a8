#!/usr/bin/env bash
# tinyformer inspect as a user runs it: the files it writes (well-formed SVG and HTML, checked
# with xmllint; a .npy header; JSON with the numbers), the terminal view, and bad input
# answered with one line and exit code 2.
source "$(dirname "$0")/common.sh"
command -v xmllint >/dev/null || { fail "xmllint is missing (Debian package libxml2-utils; scripts/install-deps.sh installs it)"; finish; }
"$tf" train --config "$src/tests/data/tiny.toml" --out "$scratch/run" >/dev/null 2>&1 || fail "training the tiny model"

out="$scratch/out"
view=$("$tf" inspect --checkpoint "$scratch/run" --text "小丁拿着红色的苹果。" --out "$out" --view terminal 2>"$scratch/err")
[[ $? -eq 0 ]] && pass "inspect --text exits 0" || fail "inspect --text: $(cat "$scratch/err")"
for f in attention.json attention.npy heads.json report.html L0H0.svg L0H1.svg; do
  [[ -s "$out/$f" ]] && pass "wrote $f" || fail "no $f in $out"
done
[[ ! -e "$out/L0H2.svg" && ! -e "$out/L1H0.svg" ]] && pass "one SVG per head, no more" || fail "unexpected SVGs: $(ls "$out")"
for f in "$out"/L0H0.svg "$out"/L0H1.svg "$out"/report.html; do
  xmllint --noout --nonet "$f" 2>"$scratch/xml" && pass "$(basename "$f") is well-formed XML" \
    || fail "$(basename "$f") is not well-formed: $(head -3 "$scratch/xml")"
done
[[ "$(head -c 6 "$out/attention.npy" | od -An -tx1 | tr -d ' \n')" == "934e554d5059" ]] \
  && pass "attention.npy starts with \\x93NUMPY" || fail "attention.npy magic"
expect_in "$(head -c 128 "$out/attention.npy" | tr -d '\000')" "'shape': (1, 2, 10, 10)" "attention.npy is [L,H,T,T] = [1,2,10,10]"
[[ $(( $(stat -c %s "$out/attention.npy") - 128 )) -eq $(( 1 * 2 * 10 * 10 * 4 )) ]] \
  && pass "attention.npy holds 200 float32 after a 128-byte header" || fail "attention.npy size $(stat -c %s "$out/attention.npy")"
json=$(cat "$out/attention.json")
expect_in "$json" '"characters":["小","丁","拿","着","红","色","的","苹","果","。"]' "attention.json lists the characters"
expect_in "$json" '"code_points":[23567,19969,' "attention.json lists the code points"
heads=$(cat "$out/heads.json")
for key in '"roles"' '"previous"' '"induction"' '"ablation"' '"zero"' '"mean"' '"val_loss_delta"' '"finding"' '"by_kind"' '"definitions"'; do
  expect_in "$heads" "$key" "heads.json has $key"
done
val_loss=$(grep -o '"val_loss": [0-9.e-]*' "$scratch/run/summary.json" | awk '{print $2}')
heads_loss=$(grep -A3 '"validation"' "$out/heads.json" | grep -o '"loss": [0-9.e-]*' | awk '{print $2}')
awk -v a="$val_loss" -v b="$heads_loss" 'BEGIN { exit !(a - b < 1e-6 && b - a < 1e-6) }' \
  && pass "heads.json's validation loss is the run's ($heads_loss)" || fail "heads.json loss $heads_loss vs summary $val_loss"
expect_in "$view" "== L0H1: layer 0, head 1" "the terminal view names each head"
expect_in "$view" "  9 。 → " "the terminal view lists each character's top reads"
expect_in "$(cat "$out/report.html")" "<figure><svg" "the report inlines the heatmaps"
expect_in "$(cat "$out/report.html")" "<h2>Training</h2>" "the report shows the run's loss curve"
[[ "$(cat "$out/report.html")" != *"<script"* ]] && pass "the report has no script" || fail "the report has a script"

# The weights: circuits.json with every weight-only number, three pictures per head, the report's sections.
for f in circuits.json L0H0_weights.svg L0H1_weights.svg L0H0_ov.svg L0H0_qk.svg L0H1_ov.svg L0H1_qk.svg; do
  [[ -s "$out/$f" ]] && pass "wrote $f" || fail "no $f in $out"
done
for f in "$out"/L0H1_weights.svg "$out"/L0H1_ov.svg "$out"/L0H1_qk.svg; do
  xmllint --noout --nonet "$f" 2>"$scratch/xml" && pass "$(basename "$f") is well-formed XML" \
    || fail "$(basename "$f") is not well-formed: $(head -3 "$scratch/xml")"
done
circuits=$(cat "$out/circuits.json")
for key in '"copying_score"' '"top_pairs"' '"frobenius_norm"' '"composition"' '"baseline"' '"index_order"' '"definitions"' '"names"'; do
  expect_in "$circuits" "$key" "circuits.json has $key"
done
# One layer: no pair of layers to compose, said so.
expect_in "$circuits" '"one layer: no pair of layers, so no composition scores"' "circuits.json says a one-layer model has no composition"
report=$(cat "$out/report.html")
for section in "<h2>Head weights</h2>" "<h2>Circuits through the vocabulary</h2>" "<h2>Composition between layers</h2>" "<h2>Ablation"; do
  expect_in "$report" "$section" "the report has $section"
done
expect_in "$view" "weights: copying score" "inspect prints the copying scores"

# A checkpoint whose config has no probes: the weight-only circuits still work, without groups.
"$tf" train --config "$src/tests/data/tiny.toml" --set data.probes_path= --set train.steps=2 --out "$scratch/noprobes" >/dev/null 2>&1 \
  || fail "training without probes"
"$tf" inspect --checkpoint "$scratch/noprobes" --text "小丁" --out "$scratch/noprobes_out" >/dev/null 2>"$scratch/err" \
  && pass "inspect without probes exits 0" || fail "inspect without probes: $(cat "$scratch/err")"
expect_in "$(cat "$scratch/noprobes_out/circuits.json" 2>/dev/null)" '"groups": null' "without probes: circuits.json has no groups"
expect_in "$(cat "$scratch/noprobes_out/circuits.json" 2>/dev/null)" '"copying_score"' "without probes: circuits.json has the copying scores"

# A vocabulary above the grid limit (256): 400 CJK ideographs from U+4E00 and the newline. The circuit pictures
# show the top pairs, not a 401×401 grid, and label them with the characters.
big="$scratch/big"
mkdir -p "$big"
for part in train:300:0 val:20:5; do  # name:lines:shift
  IFS=: read -r name lines shift <<<"$part"
  for ((line = 0; line < lines; ++line)); do
    text=""
    for ((k = 0; k < 24; ++k)); do
      printf -v hex '%08X' $((0x4E00 + (line * 7 + k * 13 + shift) % 400))
      LC_ALL=C.UTF-8 printf -v ch "\\U$hex"
      text+=$ch
    done
    printf '%s\n' "$text"
  done >"$big/$name.txt"
done
printf '[model]\nd_model = 16\nn_heads = 2\nn_layers = 1\ncontext = 16\n[data]\ntrain_path = "train.txt"\nval_path = "val.txt"\n[train]\nsteps = 2\nbatch_size = 4\neval_windows = 2\n' >"$big/big.toml"
"$tf" train --config "$big/big.toml" --out "$big/run" >/dev/null 2>"$scratch/err" || fail "training on 401 characters: $(cat "$scratch/err")"
"$tf" inspect --checkpoint "$big/run" --text "$(head -c 30 "$big/val.txt")" --out "$big/out" >/dev/null 2>"$scratch/err" \
  && pass "inspect of a 401-character vocabulary exits 0" || fail "inspect of 401 characters: $(cat "$scratch/err")"
expect_in "$(cat "$big/out/circuits.json" 2>/dev/null)" '"vocab_size": 401' "the big vocabulary has 401 characters"
expect_in "$(cat "$big/out/circuits.json" 2>/dev/null)" '"drawn": "top_pairs"' "circuits.json says the top pairs were drawn"
for f in "$big"/out/L0H0_ov.svg "$big"/out/L0H1_qk.svg "$big"/out/report.html; do
  xmllint --noout --nonet "$f" 2>"$scratch/xml" && pass "$(basename "$f") (401 characters) is well-formed XML" \
    || fail "$(basename "$f") (401 characters) is not well-formed: $(head -3 "$scratch/xml")"
done
ov=$(cat "$big/out/L0H0_ov.svg" 2>/dev/null)
expect_in "$ov" "OV circuit E·W_V·W_O·U: its 24 largest entries" "the OV picture shows the 24 largest entries"
[[ $(stat -c %s "$big/out/L0H0_ov.svg") -lt 200000 ]] && pass "the OV picture is small ($(stat -c %s "$big/out/L0H0_ov.svg") bytes)" \
  || fail "the OV picture has $(stat -c %s "$big/out/L0H0_ov.svg") bytes"
# The largest OV pair of L0H0 in circuits.json, drawn with its characters in the picture's list.
from=$(grep -m1 -A8 '"top_pairs": \[' "$big/out/circuits.json" | grep -m1 '"from":' | sed 's/.*"from": "\(.*\)",/\1/')
to=$(grep -m1 -A8 '"top_pairs": \[' "$big/out/circuits.json" | grep -m1 '"to":' | sed 's/.*"to": "\(.*\)",/\1/')
expect_in "$ov" ">$from → $to<" "the picture lists L0H0's largest OV pair, $from → $to"
expect_in "$(cat "$big/out/report.html")" "The vocabulary has 401 characters" "the report says why it shows top pairs"

# Defaults: the run directory's inspect/; --probes alone shows the first probe.
"$tf" inspect --checkpoint "$scratch/run" --probes "$src/tests/data/inspect_probes.tsv" >/dev/null 2>"$scratch/err" \
  && [[ -s "$scratch/run/inspect/report.html" ]] && pass "without --out it writes <run dir>/inspect" \
  || fail "default output directory: $(cat "$scratch/err")"
expect_in "$(cat "$scratch/run/inspect/attention.json")" '"source":"probe 1 of 2' "--probes alone: the maps show probe 1"
expect_in "$(cat "$scratch/run/inspect/attention.json")" '"text":"小丁拿着苹果。谁拿着苹果？小丁"' "probe 1 is prompt + answer"

# A text longer than the context (16): the first 16 characters, with a warning.
"$tf" inspect --checkpoint "$scratch/run" --text "小丁拿着红色的苹果。谁拿着苹果？小丁。" --out "$scratch/long" >/dev/null 2>"$scratch/err"
expect_in "$(cat "$scratch/err")" "the maps show the first 16" "a long text is cut to the context, with a warning"
expect_in "$(head -c 128 "$scratch/long/attention.npy" | tr -d '\000')" "(1, 2, 16, 16)" "a long text's maps are 16 x 16"

expect_exit 2 "a character outside the vocabulary" -- "$tf" inspect --checkpoint "$scratch/run" --text "小丁X" --out "$scratch/x"
expect_in "$err" "'X' (U+0058)" "names the character"
[[ $(printf '%s' "$err" | wc -l) -le 1 ]] && pass "the error is one line" || fail "multi-line error: $err"
# Neither --text nor --probes: the run's own probes (test_run_paths.sh).
expect_exit 2 "an unknown --view" -- "$tf" inspect --checkpoint "$scratch/run" --text "小丁" --view browser
expect_exit 2 "a missing probes file" -- "$tf" inspect --checkpoint "$scratch/run" --probes "$scratch/none.tsv"
expect_in "$err" "none.tsv" "names the probes file"
expect_exit 2 "no such checkpoint" -- "$tf" inspect --checkpoint "$scratch/none" --text "小丁"
# --probes '' means the config's probes; when it has none there is no first probe to show.
expect_exit 2 "--probes '' without --text, and no probes in the config" -- \
  "$tf" inspect --checkpoint "$scratch/noprobes" --probes "" --out "$scratch/x"
expect_in "$err" "give --text TEXT or --probes FILE" "says what to give"
one_line "no probes to show"
finish
