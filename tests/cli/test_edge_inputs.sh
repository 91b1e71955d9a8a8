#!/usr/bin/env bash
# Inputs at the edges, through the binary: corpora (empty, too short, invalid UTF-8, a BOM,
# CRLF line ends, characters outside the vocabulary), prompts, sampling numbers, and every
# config key with a wrong type and an impossible value. Each bad input is exit 2 with one
# line naming what is wrong; each odd but valid one (BOM, CRLF, a long prompt) works.
source "$(dirname "$0")/common.sh"
config="$src/tests/data/tiny.toml"
corpus="$src/corpus"
quick=(--set train.steps=3 --set train.eval_every=0 --set "data.probes_path=\"\"")

# one_line: the last error must be a single line starting "tinyformer: error: "
one_line() {
  if [[ "$err" == "tinyformer: error: "* && $(printf '%s\n' "$err" | wc -l) -eq 1 ]]; then pass "$1: one line"
  else fail "$1: not one 'tinyformer: error:' line: $err"; fi
}
refused() {  # refused DESCRIPTION FRAGMENT -- command...: exit 2, one line containing FRAGMENT
  local what=$1 fragment=$2; shift 2
  expect_exit 2 "$what" "$@"
  expect_in "$err" "$fragment" "$what: names '$fragment'"
  one_line "$what"
}
data_of() { tail -c +$((9 + $(od -An -tu8 -N8 "$1" | tr -d ' '))) "$1"; }      # the weights' bytes
vocab_of() { head -c $((8 + $(od -An -tu8 -N8 "$1" | tr -d ' '))) "$1" | grep -ao '"vocab":"[^]]*]"'; }

"$tf" train --config "$config" --out "$scratch/run" "${quick[@]}" >/dev/null 2>&1 || { fail "training the tiny model"; finish; }

# ---- corpora ----
: >"$scratch/empty.txt"
refused "an empty training text" "the training text needs at least 2 characters" -- \
  "$tf" train --config "$config" --out "$scratch/x" --set "data.train_path=$scratch/empty.txt"
printf '\xEF\xBB\xBF' >"$scratch/bom_only.txt"
refused "a training text that is only a BOM" "needs at least 2 characters" -- \
  "$tf" train --config "$config" --out "$scratch/x" --set "data.train_path=$scratch/bom_only.txt"
printf '小丁拿着红色的苹果。' >"$scratch/short.txt"  # 10 characters, context 16
refused "a training text shorter than context + 1" "fewer than one window of model.context + 1 = 17" -- \
  "$tf" train --config "$config" --out "$scratch/x" --set "data.train_path=$scratch/short.txt"
refused "a one-file corpus too short to split" "needs at least 2 characters" -- \
  "$tf" train --config "$config" --out "$scratch/x" --set "data.train_path=\"\"" --set "data.val_path=\"\"" \
  --set "data.path=$scratch/short.txt" --set data.val_fraction=0.01
refused "a corpus that is a directory" "is a directory" -- \
  "$tf" train --config "$config" --out "$scratch/x" --set "data.val_path=$scratch"
for bad in 'cut\xe4\xb8' 'overlong\xc0\xaf' 'surrogate\xed\xa0\x80' 'lone\x80continuation' 'latin1 caf\xe9 au lait'; do
  printf "$bad" >"$scratch/bad.txt"
  refused "invalid UTF-8 ($bad)" "invalid UTF-8 at byte" -- \
    "$tf" train --config "$config" --out "$scratch/x" --set "data.val_path=$scratch/bad.txt"
done

# A BOM, CRLF line ends or lone CRs read as the same text: the same vocabulary, the same weights.
head -n 300 "$corpus/lesson_train.txt" >"$scratch/lf_train.txt"
head -n 40 "$corpus/lesson_val.txt" >"$scratch/lf_val.txt"
{ printf '\xEF\xBB\xBF'; cat "$scratch/lf_train.txt"; } >"$scratch/bom_train.txt"
sed 's/$/\r/' "$scratch/lf_train.txt" >"$scratch/crlf_train.txt"
sed 's/$/\r/' "$scratch/lf_val.txt" >"$scratch/crlf_val.txt"
tr '\n' '\r' <"$scratch/lf_val.txt" >"$scratch/cr_val.txt"
train_on() {  # train_on NAME TRAIN VAL
  "$tf" train --config "$config" --out "$scratch/$1" "${quick[@]}" --set "data.train_path=$2" --set "data.val_path=$3" \
    >/dev/null 2>"$scratch/$1.err" || fail "training on $1: $(cat "$scratch/$1.err")"
}
train_on lf "$scratch/lf_train.txt" "$scratch/lf_val.txt"
train_on bom "$scratch/bom_train.txt" "$scratch/lf_val.txt"
train_on crlf "$scratch/crlf_train.txt" "$scratch/crlf_val.txt"
train_on cr "$scratch/lf_train.txt" "$scratch/cr_val.txt"
for variant in bom crlf cr; do
  [[ "$(vocab_of "$scratch/$variant/model.safetensors")" == "$(vocab_of "$scratch/lf/model.safetensors")" ]] \
    && pass "$variant: the same vocabulary as plain LF text (no U+FEFF, no U+000D)" \
    || fail "$variant: vocabulary differs: $(vocab_of "$scratch/$variant/model.safetensors" | head -c 80)"
  cmp -s <(data_of "$scratch/$variant/model.safetensors") <(data_of "$scratch/lf/model.safetensors") \
    && pass "$variant: the same weights as plain LF text" || fail "$variant: weights differ from plain LF text"
done
lf_loss=$("$tf" eval --checkpoint "$scratch/lf" --text "$scratch/lf_val.txt" --json | grep '"loss"')
crlf_loss=$("$tf" eval --checkpoint "$scratch/lf" --text "$scratch/crlf_val.txt" --json | grep '"loss"')
[[ -n "$lf_loss" && "$lf_loss" == "$crlf_loss" ]] && pass "eval scores CRLF text as the LF text ($lf_loss)" \
  || fail "eval of CRLF text: '$crlf_loss' vs LF '$lf_loss'"

# Eval texts.
printf '小丁拿着X色的苹果。' >"$scratch/unknown.txt"
refused "eval: a character outside the vocabulary" "character 'X' (U+0058) at character 4 is not in the model's 79-character vocabulary" -- \
  "$tf" eval --checkpoint "$scratch/run" --text "$scratch/unknown.txt"
expect_in "$err" "unknown.txt" "eval: the error names the text file"
refused "eval: an empty text" "needs at least 2 characters" -- "$tf" eval --checkpoint "$scratch/run" --text "$scratch/empty.txt"
printf '小' >"$scratch/one.txt"
refused "eval: a one-character text" "needs at least 2 characters" -- "$tf" eval --checkpoint "$scratch/run" --text "$scratch/one.txt"
refused "eval: invalid UTF-8" "invalid UTF-8 at byte 10" -- "$tf" eval --checkpoint "$scratch/run" --text "$scratch/bad.txt"
refused "eval: a directory as text" "is a directory" -- "$tf" eval --checkpoint "$scratch/run" --text "$scratch"
refused "eval: no such text" "nothing.txt" -- "$tf" eval --checkpoint "$scratch/run" --text "$scratch/nothing.txt"
printf '谁拿着苹果？\t小丁\n谁拿着Y？\t小丁\n' >"$scratch/probes.tsv"
refused "eval: a probe outside the vocabulary" "'Y' (U+0059)" -- \
  "$tf" eval --checkpoint "$scratch/run" --probes "$scratch/probes.tsv"
printf '谁拿着苹果？小丁\n' >"$scratch/probes_no_tab.tsv"
refused "eval: a probe line without a tab" "probes_no_tab.tsv:1" -- \
  "$tf" eval --checkpoint "$scratch/run" --probes "$scratch/probes_no_tab.tsv"

# ---- prompts ----
refused "an empty prompt" "--prompt: empty" -- "$tf" sample --checkpoint "$scratch/run" --prompt "" --num-samples 2
[[ -z "$("$tf" sample --checkpoint "$scratch/run" --prompt "" --num-samples 2 2>/dev/null)" ]] \
  && pass "an empty prompt prints nothing before its error" || fail "an empty prompt printed output first"
refused "a prompt outside the vocabulary (beyond the BMP)" "'😀' (U+1F600)" -- \
  "$tf" sample --checkpoint "$scratch/run" --prompt "小丁😀"
refused "a prompt that is not UTF-8" "--prompt: invalid UTF-8 at byte 3" -- \
  "$tf" sample --checkpoint "$scratch/run" --prompt $'小\xff'
refused "a stop text that is not UTF-8" "--stop: invalid UTF-8 at byte 0" -- \
  "$tf" sample --checkpoint "$scratch/run" --stop $'\xff'
long_prompt=$(tr -d '\n' <"$scratch/lf_val.txt" | head -c 300)  # 100 three-byte characters; context 16
"$tf" train --config "$config" --out "$scratch/learned" "${quick[@]}" --set model.positions=learned >/dev/null 2>&1 \
  || fail "training a learned-positions model"
for model in run learned; do
  out=$("$tf" sample --checkpoint "$scratch/$model" --prompt "$long_prompt" --max-new 40 --seed 2 2>&1)
  [[ $? -eq 0 && "$out" == "$long_prompt"* && ${#out} -gt ${#long_prompt} ]] \
    && pass "$model: a prompt longer than the context is continued (its last T characters are read)" \
    || fail "$model: long prompt: $out"
done

# ---- sampling numbers ----
V=79
for bad in "--temperature -0.5" "--temperature nan" "--temperature inf" "--top-p 0" "--top-p -0.1" "--top-p 1.0001" \
           "--top-p nan" "--top-k -1" "--top-k $((V + 1))" "--top-k 99999999999" "--max-new 0" "--max-new -5" \
           "--max-new 10000001" "--max-new 99999999999999999999999" "--num-samples 0" \
           "--backend gpu"; do
  option=${bad%% *}
  # shellcheck disable=SC2086
  refused "sample $bad" "$option" -- "$tf" sample --checkpoint "$scratch/run" $bad
done
# (a number that is not a number is CLI11's to report: exit 2, naming the option)
expect_exit 2 "sample --temperature abc" -- "$tf" sample --checkpoint "$scratch/run" --temperature abc
expect_in "$err" "--temperature" "sample --temperature abc: names the option"
default=$("$tf" sample --checkpoint "$scratch/run" --max-new 30 --seed 5)
for same in "--top-k 0" "--top-k $V" "--top-p 1"; do
  # shellcheck disable=SC2086
  out=$("$tf" sample --checkpoint "$scratch/run" --max-new 30 --seed 5 $same)
  [[ "$out" == "$default" ]] && pass "sample $same keeps every character (as the default)" || fail "sample $same differs"
done
out=$("$tf" sample --checkpoint "$scratch/run" --max-new 30 --seed 5 --top-k 1)
greedy=$("$tf" sample --checkpoint "$scratch/run" --max-new 30 --seed 9 --temperature 0)
[[ "$out" == "$greedy" ]] && pass "--top-k 1 is greedy decoding" || fail "--top-k 1 '$out' vs greedy '$greedy'"

# ---- config: every key with a wrong type (in a file and with --set) and an impossible value ----
# key | a value of the wrong type | what the message expects | an impossible value | its message
keys=(
  "name|5|a string|\"a/b\"|a plain directory name"
  "model.vocab_size|\"ten\"|an integer|-1|an integer >= 0"
  "model.d_model|2.5|an integer|0|an integer >= 1"
  "model.n_heads|true|an integer|0|an integer >= 1"
  "model.n_layers|\"2\"|an integer|0|an integer >= 1"
  "model.context|[16]|an integer|0|an integer >= 1"
  "model.positions|1|a string|\"absolute\"|\"rope\" or \"learned\""
  "data.path|1|a string|\"$scratch/nothing.txt\"|no such file"
  "data.train_path|false|a string|\"$scratch\"|is a directory"
  "data.val_path|2.0|a string|\"$scratch/nothing.txt\"|no such file"
  "data.prepared|7|a string|\"$scratch/nothing\"|no such directory"
  "data.probes_path|{a=1}|a string|\"$scratch/nothing.tsv\"|no such file"
  "data.val_fraction|\"half\"|a finite number|1.0|a number in (0, 1)"
  "train.steps|1.5|an integer|0|an integer >= 1"
  "train.batch_size|\"4\"|an integer|0|an integer >= 1"
  "train.eval_every|true|an integer|-1|an integer >= 0"
  "train.eval_windows|[]|an integer|0|an integer >= 1"
  "train.eval_batches|\"5\"|an integer|-1|an integer >= 0"
  "train.final_eval|1|a string|\"sample\"|\"full\" or \"sampled\""
  "train.checkpoint_every|0.5|an integer|-1|an integer >= 0"
  "train.seed|\"x\"|an integer|-1|an integer >= 0"
  "train.rng|7|a string|\"numpy\"|\"tinyformer\" or \"torch\""
  "train.threads|1e3|an integer|-1|an integer >= 0"
  "train.precision|16|a string|\"fp16\"|\"float32\" or \"bf16\""
  "train.exchange|2|a string|\"sometimes\"|\"auto\", \"overlap\" or \"after\""
  "optim.lr|\"fast\"|a finite number|0|a number > 0"
  "optim.min_lr|nan|a finite number|1.0|a number in [0, optim.lr"
  "optim.warmup_steps|1.5|an integer|-1|an integer >= 0"
  "optim.weight_decay|inf|a finite number|-0.1|a number >= 0"
  "optim.beta1|true|a finite number|1.0|a number in [0, 1)"
  "optim.beta2|-inf|a finite number|-0.5|a number in [0, 1)"
  "optim.eps|\"tiny\"|a finite number|0|a number > 0"
  "optim.grad_clip|[1]|a finite number|-1|a number >= 0"
  "logging.log_every|\"10\"|an integer|0|an integer >= 1"
  "logging.progress_bar|3|true or false||"
)
listed=$("$tf" train --help | grep -o '^| `[a-z0-9_.]*`' | tr -d '|` ' | sort)
covered=$(for k in "${keys[@]}"; do echo "${k%%|*}"; done | sort)
[[ "$listed" == "$covered" ]] && pass "the table covers every key in train --help" \
  || fail "keys in --help and in this test differ: $(diff <(echo "$listed") <(echo "$covered") | tr '\n' ' ')"

# A config file with the corpus and one key set to VALUE (data keys replace the corpus's own).
config_with() {  # config_with FILE KEY VALUE
  local file=$1 key=$2 value=$3 section=${2%%.*} name=${2#*.}
  {
    [[ $key == name ]] && echo "name = $value"
    echo "[data]"
    case $key in
      data.path) echo "path = $value" ;;
      data.train_path) echo "train_path = $value"; echo "val_path = \"$corpus/lesson_val.txt\"" ;;
      data.val_path) echo "train_path = \"$corpus/lesson_train.txt\""; echo "val_path = $value" ;;
      *) echo "train_path = \"$corpus/lesson_train.txt\""; echo "val_path = \"$corpus/lesson_val.txt\""
         [[ $section == data ]] && echo "$name = $value" ;;
    esac
    if [[ $key != name && $section != data ]]; then echo "[$section]"; echo "$name = $value"; fi
  } >"$file"
}
for entry in "${keys[@]}"; do
  IFS='|' read -r key wrong wrong_message impossible impossible_message <<<"$entry"
  one_corpus=()  # data.path replaces tiny.toml's train_path and val_path
  [[ $key == data.path || $key == data.prepared ]] && one_corpus=(--set "data.train_path=\"\"" --set "data.val_path=\"\"")
  config_with "$scratch/key.toml" "$key" "$wrong"
  refused "file: $key = $wrong" "$key: got " -- "$tf" train --config "$scratch/key.toml" --out "$scratch/x"
  expect_in "$err" "key.toml:" "file: $key = $wrong: names the file and line"
  expect_in "$err" "expected $wrong_message" "file: $key = $wrong: says what was expected"
  refused "--set $key=$wrong" "--set $key=$wrong: $key: got " -- \
    "$tf" train --config "$config" --out "$scratch/x" --set "$key=$wrong"
  [[ -z "$impossible" ]] && continue
  refused "--set $key=$impossible" "$impossible_message" -- \
    "$tf" train --config "$config" --out "$scratch/x" "${one_corpus[@]}" --set "$key=$impossible"
done

# Sizes no machine here can train: refused before anything is allocated.
refused "a model too large for memory" "more than this machine's" -- \
  "$tf" train --config "$config" --out "$scratch/x" --set model.d_model=40000 --set model.n_heads=1
refused "a batch too large for memory" "more than this machine's" -- \
  "$tf" train --config "$config" --out "$scratch/x" --set train.batch_size=100000000000
refused "a billion layers" "more than this machine's" -- \
  "$tf" train --config "$config" --out "$scratch/x" --set model.n_layers=1000000000

# Duplicated keys and sections, unknown sections and keys, a file that is not TOML or not UTF-8.
printf '[train]\nsteps = 5\nsteps = 6\n' >"$scratch/dup_key.toml"
refused "a key given twice" "dup_key.toml:3" -- "$tf" train --config "$scratch/dup_key.toml"
expect_in "$err" "steps" "a key given twice: names the key"
printf '[train]\nsteps = 5\n[train]\nseed = 1\n' >"$scratch/dup_section.toml"
refused "a section given twice" "dup_section.toml:3" -- "$tf" train --config "$scratch/dup_section.toml"
printf '[trian]\nsteps = 5\n' >"$scratch/unknown_section.toml"
refused "an unknown section" "unknown section [trian]" -- "$tf" train --config "$scratch/unknown_section.toml"
expect_in "$err" "did you mean train.steps" "an unknown section: suggests the key"
printf '[model]\nd_model = 16\n[extra]\n' >"$scratch/empty_unknown_section.toml"
refused "an empty unknown section" "unknown section [extra]" -- "$tf" train --config "$scratch/empty_unknown_section.toml"
printf 'steps = 5\n' >"$scratch/top_level.toml"
refused "a key outside its section" "did you mean train.steps" -- "$tf" train --config "$scratch/top_level.toml"
printf 'model = 5\n' >"$scratch/section_value.toml"
refused "a section given a value" "expected a table [model]" -- "$tf" train --config "$scratch/section_value.toml"
printf 'name = "caf\xe9"\n' >"$scratch/latin1.toml"
refused "a config that is not UTF-8" "latin1.toml:1" -- "$tf" train --config "$scratch/latin1.toml"
printf '[model\n' >"$scratch/syntax.toml"
refused "a TOML syntax error" "syntax.toml:1" -- "$tf" train --config "$scratch/syntax.toml"
refused "--set without =" "expected section.key=value" -- "$tf" train --config "$config" --set train.steps
refused "--set an unknown key" "did you mean train.steps" -- "$tf" train --config "$config" --set train.step=3
finish
