#!/usr/bin/env bash
# Large corpora through the CLI (issue 16): tinyformer prepare, training on prepared ids,
# evaluation on random windows, and bad data — each a one-line error with exit 2.
source "$(dirname "$0")/common.sh"
cat "$src/corpus/lesson_train.txt" "$src/corpus/lesson_val.txt" > "$scratch/A.txt"
sed '1s/小/丁/' "$scratch/A.txt" > "$scratch/B.txt"  # the same vocabulary and length, other text
cat > "$scratch/tiny.toml" <<TOML
[model]
d_model = 16
n_heads = 2
n_layers = 1
context = 16
[data]
path = "A.txt"
[train]
steps = 40
batch_size = 4
eval_every = 20
seed = 7
[logging]
log_every = 10
progress_bar = false
TOML

# prepare, then train on the prepared ids: the same run as on the text.
out=$("$tf" prepare "$scratch/A.txt" --out "$scratch/A") || fail "prepare A.txt"
expect_in "$out" "vocabulary 79, uint8" "prepare reports the vocabulary and the id width"
expect_in "$out" "--set data.prepared=$scratch/A" "prepare says how to train on it"
"$tf" prepare "$scratch/B.txt" --out "$scratch/B" >/dev/null || fail "prepare B.txt"
[[ -f "$scratch/A/train.bin" && -f "$scratch/A/val.bin" && -f "$scratch/A/meta.json" ]] \
  && pass "prepare writes train.bin, val.bin, meta.json" || fail "prepare's files: $(ls "$scratch/A")"
"$tf" train --config "$scratch/tiny.toml" --out "$scratch/text" >/dev/null 2>&1 || fail "train on the text"
"$tf" train --config "$scratch/tiny.toml" --set 'data.path=""' --set "data.prepared=$scratch/A" \
  --out "$scratch/prepared" >/dev/null 2>&1 || fail "train on the prepared ids"
loss_text=$(grep '"val_loss"' "$scratch/text/summary.json"); loss_prepared=$(grep '"val_loss"' "$scratch/prepared/summary.json")
[[ -n "$loss_text" && "$loss_text" == "$loss_prepared" ]] && pass "prepared ids train exactly as the text ($loss_text)" \
  || fail "val loss on the text '$loss_text', on the prepared ids '$loss_prepared'"
grep -q '"over": "the full validation text"' "$scratch/text/summary.json" \
  && pass "summary.json says the final loss is over the full validation text" || fail "no val_eval in summary.json"

# On a terminal, reading a text and a long evaluation show a progress bar (script(1) gives a pty).
tty_out=$(script -qfec "$tf prepare $scratch/A.txt --out $scratch/A_tty" /dev/null)
expect_in "$tty_out" "reading $scratch/A.txt [" "prepare on a terminal draws a progress bar"
expect_in "$tty_out" "B/s  ETA" "the bar shows the reading rate"
tty_out=$(script -qfec "$tf eval --checkpoint $scratch/prepared" /dev/null)
expect_in "$tty_out" "evaluating [" "eval on a terminal draws a progress bar"
expect_in "$tty_out" " windows " "the bar counts windows"
no_tty=$("$tf" prepare "$scratch/A.txt" --out "$scratch/A_tty" 2>&1)
[[ "$no_tty" != *"["* ]] && pass "no bar when stderr is not a terminal" || fail "a bar without a terminal: $no_tty"

# Evaluation on random windows: summary.json says so; eval --batches does the same.
"$tf" train --config "$scratch/tiny.toml" --set train.eval_batches=5 --set train.final_eval=sampled \
  --out "$scratch/sampled" >/dev/null 2>&1 || fail "train with eval_batches"
grep -q '"over": "the evaluations'"'"' sampled windows"' "$scratch/sampled/summary.json" \
  && pass "summary.json says the final loss is over the sampled windows" || fail "sampled final not recorded"
grep -q '"windows": 20' "$scratch/sampled/summary.json" && pass "5 batches of 4 windows" || fail "sampled windows count"
out=$("$tf" eval --checkpoint "$scratch/prepared" --batches 3 --batch-size 4 --json) || fail "eval --batches"
expect_in "$out" '"windows": 12' "eval --batches scores batches × batch size windows"
expect_in "$out" '"text": "'"$scratch/A/val.bin"'"' "eval reads the prepared validation ids"

# --resume on other data is refused, text or prepared.
expect_exit 2 "resume on another prepared corpus" -- "$tf" train --resume "$scratch/prepared" --set "data.prepared=$scratch/B" \
  --set train.steps=60
expect_in "$err" "cannot resume on different data" "the refusal says the data changed"
expect_exit 2 "resume on another text" -- "$tf" train --resume "$scratch/text" --set "data.path=$scratch/B.txt" --set train.steps=60
expect_in "$err" "cannot resume on different data" "the refusal says the data changed"
# ... and the same data prepared is the same data: a text run resumes on its prepared ids.
"$tf" train --resume "$scratch/text" --set 'data.path=""' --set "data.prepared=$scratch/A" --set train.steps=60 \
  >/dev/null 2>&1 && pass "a run on the text resumes on the same text prepared" || fail "resume text → prepared refused"

# Bad data: one line, exit 2, naming the file and what is wrong.
head -c 2500000 /dev/zero | tr '\0' 'a' > "$scratch/deep.txt"; printf '\xff' >> "$scratch/deep.txt"; printf 'tail\n' >> "$scratch/deep.txt"
expect_exit 2 "an invalid byte deep in a text (train)" -- "$tf" train --config "$scratch/tiny.toml" --set "data.path=$scratch/deep.txt" --out "$scratch/x"
expect_in "$err" "deep.txt: invalid UTF-8 at byte 2500000 (0xFF)" "names the byte offset"
one_line "invalid UTF-8"
expect_exit 2 "an invalid byte deep in a text (prepare)" -- "$tf" prepare "$scratch/deep.txt" --out "$scratch/deep"
expect_in "$err" "byte 2500000" "prepare names the byte offset"
[[ ! -e "$scratch/deep/meta.json" ]] && pass "a failed prepare leaves no meta.json" || fail "a failed prepare left meta.json"

cp -r "$scratch/A" "$scratch/A_cut"; truncate -s -1 "$scratch/A_cut/train.bin"
expect_exit 2 "a truncated prepared file" -- "$tf" train --config "$scratch/tiny.toml" --set 'data.path=""' --set "data.prepared=$scratch/A_cut" --out "$scratch/x"
expect_in "$err" "A_cut/train.bin" "names the file"; expect_in "$err" "truncated" "says it is truncated"; one_line "truncated"
cp -r "$scratch/A" "$scratch/A_mixed"; cp "$scratch/B/val.bin" "$scratch/A_mixed/val.bin"
expect_exit 2 "a prepared file from another corpus" -- "$tf" train --config "$scratch/tiny.toml" --set 'data.path=""' --set "data.prepared=$scratch/A_mixed" --out "$scratch/x"
expect_in "$err" "A_mixed/val.bin" "names the file"; expect_in "$err" "another corpus" "says it belongs to another corpus"; one_line "another corpus"
rm "$scratch/A_mixed/meta.json"
expect_exit 2 "a prepared directory without meta.json" -- "$tf" train --config "$scratch/tiny.toml" --set 'data.path=""' --set "data.prepared=$scratch/A_mixed" --out "$scratch/x"
expect_in "$err" "meta.json: missing" "names meta.json"

perl -X -CO -e 'print chr($_) for 0xE000 .. 0xE000 + 65536; print "\n"' > "$scratch/huge_vocab.txt"
cat "$scratch/huge_vocab.txt" "$scratch/huge_vocab.txt" > "$scratch/huge_vocab2.txt"
expect_exit 2 "a vocabulary over 65,536 characters" -- "$tf" prepare "$scratch/huge_vocab2.txt" --out "$scratch/huge"
expect_in "$err" "65538 distinct characters, more than the 65,536" "says how many and the limit"; one_line "vocabulary"

expect_exit 2 "an empty validation split" -- "$tf" train --config "$scratch/tiny.toml" --set data.val_fraction=0.00001 --out "$scratch/x"
expect_in "$err" "A.txt (validation part): the validation text needs at least 2 characters" "names the split"
printf '小丁拿着苹果。\n' > "$scratch/short.txt"
expect_exit 2 "a corpus smaller than one window" -- "$tf" train --config "$scratch/tiny.toml" --set 'data.path=""' \
  --set "data.train_path=$scratch/short.txt" --set "data.val_path=$scratch/short.txt" --out "$scratch/x"
expect_in "$err" "short.txt: 8 characters, fewer than one window of model.context + 1 = 17" "names the text and the window"
"$tf" prepare --train "$scratch/short.txt" --val "$scratch/short.txt" --out "$scratch/short" >/dev/null || fail "prepare short"
expect_exit 2 "a prepared corpus smaller than one window" -- "$tf" train --config "$scratch/tiny.toml" --set 'data.path=""' \
  --set "data.prepared=$scratch/short" --out "$scratch/x"
expect_in "$err" "short/train.bin: 8 characters, fewer than one window" "names the prepared file"
expect_exit 2 "eval_batches on a validation text shorter than a window" -- "$tf" train --config "$scratch/tiny.toml" --set 'data.path=""' \
  --set "data.train_path=$scratch/A.txt" --set "data.val_path=$scratch/short.txt" --set train.eval_batches=2 --out "$scratch/x"
expect_in "$err" "short.txt: the validation text has 8 characters, fewer than one window" "names the validation text"
expect_in "$err" "train.eval_batches" "names the key that needs the windows"

# A vocabulary of thousands of characters: train, sample, eval and inspect, characters labelled.
perl -X -CO -e 'srand(3); my @c = map { chr(0x4E00 + $_) } 0 .. 2999;
  for (1 .. 80000) { print $c[int(3000 * rand() ** 2)]; print "。\n" if rand() < 0.05 }' > "$scratch/zh.txt"
"$tf" prepare "$scratch/zh.txt" --out "$scratch/zh_ids" >/dev/null || fail "prepare the Chinese text"
grep -q '"dtype": "uint16"' "$scratch/zh_ids/meta.json" && pass "thousands of characters take uint16 ids" || fail "not uint16"
"$tf" train --config "$scratch/tiny.toml" --set 'data.path=""' --set "data.prepared=$scratch/zh_ids" --set train.steps=20 \
  --set train.eval_batches=2 --out "$scratch/zh" >/dev/null 2>&1 || fail "train on the Chinese text"
vocab=$(grep -o '"vocab_size": [0-9]*' "$scratch/zh/summary.json" | grep -o '[0-9]*$')
[[ ${vocab:-0} -ge 2500 ]] && pass "a vocabulary of $vocab characters" || fail "vocabulary ${vocab:-none}"
out=$("$tf" sample --checkpoint "$scratch/zh" --prompt "一丁" --max-new 8 --seed 2) || fail "sample"
[[ "$out" == 一丁* && ${#out} -eq 10 ]] && pass "sample continues a Chinese prompt (${out})" || fail "sample: '$out'"
"$tf" eval --checkpoint "$scratch/zh" --batches 2 >/dev/null 2>&1 && pass "eval on random windows" || fail "eval"
start=$SECONDS
"$tf" inspect --checkpoint "$scratch/zh" --text "一丁七万" --out "$scratch/zh_inspect" >/dev/null 2>&1 \
  && pass "inspect a model of $vocab characters in $((SECONDS - start)) s" || fail "inspect on $vocab characters"
grep -q '"一"' "$scratch/zh_inspect/attention.json" && grep -q '"万"' "$scratch/zh_inspect/attention.json" \
  && pass "the maps label the Chinese characters" || fail "attention.json lacks the characters"
grep -q '万' "$scratch/zh_inspect/L0H0.svg" && pass "the SVG maps label them too" || fail "L0H0.svg lacks 万"
size=$(stat -c %s "$scratch/zh_inspect/L0H0_ov.svg" 2>/dev/null || echo 0)
[[ $size -gt 0 && $size -lt 2000000 ]] && pass "the OV view stays small ($size bytes), not a ${vocab}×${vocab} grid" \
  || fail "L0H0_ov.svg is $size bytes"

# prepare's own usage errors.
expect_exit 2 "prepare without a corpus" -- "$tf" prepare --out "$scratch/x"
expect_exit 2 "prepare with two corpora" -- "$tf" prepare "$scratch/A.txt" --train "$scratch/A.txt" --val "$scratch/B.txt" --out "$scratch/x"
expect_exit 2 "prepare --train without --val" -- "$tf" prepare --train "$scratch/A.txt" --out "$scratch/x"
expect_exit 2 "prepare --val-fraction 1" -- "$tf" prepare "$scratch/A.txt" --val-fraction 1 --out "$scratch/x"
expect_exit 2 "a config with both a text and prepared ids" -- "$tf" train --config "$scratch/tiny.toml" --set "data.prepared=$scratch/A" --out "$scratch/x"
expect_in "$err" "data.path: given together with data.prepared" "names both keys"
expect_exit 2 "train.final_eval misspelt" -- "$tf" train --config "$scratch/tiny.toml" --set train.final_eval=sample --out "$scratch/x"
expect_in "$err" '"full" or "sampled"' "says what is expected"
finish
