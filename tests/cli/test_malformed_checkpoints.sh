#!/usr/bin/env bash
# Checkpoints tinyformer did not write, through the real binary: each malformed file below
# must give exit code 2 and one line on stderr, "tinyformer: error: <file>: <what is wrong>",
# never a crash, a hang or a sanitizer report. (tests/test_checkpoint.cpp checks the reader
# itself; this table checks what a user sees.)
#
# Every row starts from a good checkpoint of the tiny model and breaks one thing in it, with
# coreutils only: a safetensors file is an 8-byte little-endian length N, N bytes of JSON
# header, then the raw data, so the header can be cut out, edited with sed and put back.
source "$(dirname "$0")/common.sh"
export LC_ALL=C  # ${#text} and sed count and edit bytes, not characters
config="$src/tests/data/tiny.toml"

"$tf" train --config "$config" --out "$scratch/run" >/dev/null 2>&1 || { fail "training the tiny model"; finish; }
good="$scratch/run/model.safetensors"
good_state="$scratch/run/train_state.safetensors"

# ---- taking a safetensors file apart and putting it back together ----
header_length() { od -An -tu8 -N8 "$1" | tr -d ' '; }
header_of() { tail -c +9 "$1" | head -c "$(header_length "$1")"; }
data_of() { tail -c +$((9 + $(header_length "$1"))) "$1"; }
u64_le() {  # the 8 little-endian bytes of $1 (bash arithmetic is 64-bit two's complement)
  local i escaped=""
  for i in 0 1 2 3 4 5 6 7; do escaped+=$(printf '\\%03o' $((($1 >> (8 * i)) & 255))); done
  printf "$escaped"
}
assemble() {  # assemble OUT HEADER DATA_FILE: a file with this header text and this data
  { u64_le "${#2}"; printf '%s' "$2"; cat "$3"; } >"$1"
}
header=$(header_of "$good")
data_of "$good" >"$scratch/data.bin"
data_bytes=$(stat -c %s "$scratch/data.bin")
file_bytes=$(stat -c %s "$good")
[[ $file_bytes -eq $((8 + ${#header} + data_bytes)) ]] && pass "the good checkpoint comes apart into length, header, data" \
  || fail "taking the good checkpoint apart: $file_bytes != 8 + ${#header} + $data_bytes"

# with_header NAME SED_SCRIPT: the good data under the good header edited by sed
with_header() {
  local edited
  edited=$(printf '%s' "$header" | sed -e "$2")
  [[ "$edited" != "$header" ]] || fail "row $1: the sed edit changed nothing (the test is out of date)"
  assemble "$scratch/$1" "$edited" "$scratch/data.bin"
}
# with_data NAME OFFSET HEX_BYTES: the good file with bytes overwritten at OFFSET of the data
with_data() {
  cp "$good" "$scratch/$1"
  printf "$3" | dd of="$scratch/$1" bs=1 seek=$((8 + ${#header} + $2)) conv=notrunc status=none
}

# ---- the table ----
# row NAME EXPECTED_MESSAGE_FRAGMENT [PATH]: `tinyformer eval --checkpoint` must refuse it
# with exit 2 and one line naming the file and containing the fragment.
rows=0
row() {
  local name=$1 message=$2 path=${3:-$scratch/$1}
  rows=$((rows + 1))
  local err code
  err=$(timeout 60 "$tf" eval --checkpoint "$path" 2>&1 >/dev/null)
  code=$?
  if [[ $code -ne 2 ]]; then fail "$name: exit $code, expected 2; stderr: ${err:0:400}"; return; fi
  if [[ "$err" != "tinyformer: error: $path"* ]]; then fail "$name: stderr does not start with the file: $err"; return; fi
  if [[ "$err" != *"$message"* ]]; then fail "$name: '$message' not in: $err"; return; fi
  if [[ $(printf '%s\n' "$err" | wc -l) -ne 1 ]]; then fail "$name: more than one line: $err"; return; fi
  pass "$name: exit 2, \"${err#tinyformer: error: $path: }\""
}

err=$("$tf" eval --checkpoint "$good" 2>&1 >/dev/null) && pass "the good checkpoint evaluates (exit 0)" \
  || fail "the good checkpoint does not evaluate: $err"

# Truncated at several points, and lengths that do not fit.
: >"$scratch/empty";                              row empty "file is 0 bytes, expected at least 8"
head -c 5 "$good" >"$scratch/five_bytes";         row five_bytes "file is 5 bytes"
head -c $((8 + ${#header} / 2)) "$good" >"$scratch/cut_in_header"
row cut_in_header "header length ${#header} runs past the end of the file"
head -c $((8 + ${#header})) "$good" >"$scratch/cut_after_header"
row cut_after_header "within the 0-byte data section"
head -c $((8 + ${#header} + data_bytes / 2)) "$good" >"$scratch/cut_in_data"
row cut_in_data "within the $((data_bytes / 2))-byte data section"
head -c $((file_bytes - 1)) "$good" >"$scratch/one_byte_short"
row one_byte_short "tensor tok_emb.weight: data_offsets"
{ u64_le $((file_bytes - 7)); tail -c +9 "$good"; } >"$scratch/length_past_end"
row length_past_end "header length $((file_bytes - 7)) runs past the end of the file"
{ u64_le -1; tail -c +9 "$good"; } >"$scratch/length_2_64"
row length_2_64 "header length 18446744073709551615 runs past the end"
{ u64_le $(((100 << 20) + 8)); } >"$scratch/length_over_100MB"
truncate -s $((16 + (100 << 20))) "$scratch/length_over_100MB"  # sparse: no disk used
row length_over_100MB "header length 104857608 bytes, expected at most 104857600"
{ u64_le 0; tail -c +9 "$good"; } >"$scratch/length_zero";   row length_zero "header is not valid JSON"

# The header.
with_header not_json 's/^{/{{/';                  row not_json "header is not valid JSON (at byte 2)"
with_header not_utf8_metadata 's/\\"name\\":\\"tiny\\"/\\"name\\":\\"ti\xff\xfe\\"/'
row not_utf8_metadata "invalid UTF-8 at byte"
assemble "$scratch/header_array" "[1,2]" "$scratch/data.bin";  row header_array "header is an array, expected a JSON object"
with_header wrong_dtype 's/"ln_f.bias":{"dtype":"F32"/"ln_f.bias":{"dtype":"F16"/'
row wrong_dtype "tensor ln_f.bias: dtype F16, expected F32"
with_header wrong_shape 's/"ln_f.bias":{"dtype":"F32","shape":\[16\]/"ln_f.bias":{"dtype":"F32","shape":[4,4]/'
row wrong_shape "tensor ln_f.bias has shape [4,4], expected [16]"
with_header shape_offsets_disagree 's/"ln_f.bias":{"dtype":"F32","shape":\[16\]/"ln_f.bias":{"dtype":"F32","shape":[17]/'
row shape_offsets_disagree "tensor ln_f.bias: shape [17] needs 68 bytes"
with_header overlapping 's/\[17920,17984\]/[17916,17980]/'
row overlapping "tensor ln_f.bias (bytes 17916..17980) overlaps tensor lm_head.weight"
with_header gapped 's/\[17920,17984\]/[17924,17988]/'; row gapped "a gap of 4 bytes before tensor ln_f.bias"
{ cat "$good"; printf '\0\0\0\0'; } >"$scratch/trailing_bytes"; row trailing_bytes "4 bytes after the last tensor"
with_header offsets_backwards 's/\[17920,17984\]/[17984,17920]/'; row offsets_backwards "run backwards"

# The tensors against the contract.
head -c 18048 "$scratch/data.bin" >"$scratch/data_without_tok_emb.bin"
assemble "$scratch/missing_tensor" "$(printf '%s' "$header" | sed 's/,"tok_emb.weight":{[^}]*}//')" \
  "$scratch/data_without_tok_emb.bin"
row missing_tensor "missing tensors tok_emb.weight, expected exactly the contract's tensors"
{ cat "$scratch/data.bin"; printf '\0\0\0\0'; } >"$scratch/data_plus_4.bin"
assemble "$scratch/extra_tensor" \
  "$(printf '%s' "$header" | sed 's/} *$/,"extra.bias":{"dtype":"F32","shape":[1],"data_offsets":[23104,23108]}}/')" \
  "$scratch/data_plus_4.bin"
row extra_tensor "unknown tensors extra.bias"
with_header renamed_tensor 's/"ln_f.bias"/"ln_f.biaz"/'
row renamed_tensor "missing tensors ln_f.bias; unknown tensors ln_f.biaz"
with_header tensor_twice 's/"ln_f.weight"/"ln_f.bias"/'; row tensor_twice "header names \"ln_f.bias\" twice"
with_data nan_weight 4 '\000\000\300\177'  # quiet NaN as element 1 of the first tensor
row nan_weight "tensor blocks.0.attn.k_proj.weight has 1 NaN value"
with_data inf_weight 8 '\000\000\200\377'  # -inf as element 2
row inf_weight "tensor blocks.0.attn.k_proj.weight has 1 infinite value"

# The metadata: format, config, vocabulary, step.
with_header wrong_format 's/"format":"tinyformer\/1"/"format":"tinyformer\/9"/'
row wrong_format "format \"tinyformer/9\", expected \"tinyformer/1\""
with_header no_config 's/"config":/"konfig":/';   row no_config "__metadata__ has no config"
with_header config_not_json 's/"config":"{/"config":"{{/'; row config_not_json "config is not a JSON object"
with_header config_bad_heads 's/\\"n_heads\\":2/\\"n_heads\\":3/'
row config_bad_heads "model.n_heads: d_model 16 is not divisible by n_heads 3"
with_header config_other_width 's/\\"d_model\\":16/\\"d_model\\":32/'
row config_other_width "has shape [79,16], expected [79,32] (from its config)"
with_header config_wrong_type 's/\\"n_layers\\":1/\\"n_layers\\":\\"1\\"/'
row config_wrong_type "model.n_layers: got the string \"1\", expected a 64-bit integer"
with_header vocab_not_array 's/"vocab":"\[[^]]*\]"/"vocab":"\\"abc\\""/'; row vocab_not_array "vocab is not a JSON array"
with_header vocab_duplicate 's/\\"丁\\"/\\"。\\"/'
row vocab_duplicate "vocab entry 2 '。' (U+3002) appears twice, expected distinct characters"
with_header vocab_two_chars 's/\\"丁\\"/\\"丁丁\\"/'; row vocab_two_chars "vocab entry 2 \"丁丁\" has 2 characters"
with_header vocab_short 's/,\\"？\\"//';           row vocab_short "vocab has 78 characters, expected model.vocab_size = 79"
with_header vocab_number 's/\\"丁\\"/7/';          row vocab_number "vocab entry 2 is 7, expected a one-character string"
with_header step_not_number 's/"step":"40"/"step":"4x"/'; row step_not_number "step \"4x\", expected a non-negative integer"

# Paths that are not checkpoint files.
mkdir -p "$scratch/directory.safetensors"
row directory_named_like_a_file "directory has no model.safetensors" "$scratch/directory.safetensors"
mkdir -p "$scratch/run_without_model";             row run_without_model "directory has no model.safetensors"
mkdir -p "$scratch/odd_run/model.safetensors"
row run_with_model_directory "model.safetensors: is a directory" "$scratch/odd_run"
row no_such_file "no such file, expected a safetensors file" "$scratch/nothing.safetensors"
row text_file "runs past the end of the file" "$config"
mkfifo "$scratch/fifo";                            row fifo "is not a regular file"
row device "is not a regular file" /dev/zero

[[ $rows -ge 20 ]] && pass "$rows malformed checkpoints in the table" || fail "only $rows rows"

# A malformed training state is refused by --resume the same way (exit 2, naming it).
resume_row() {  # resume_row NAME MESSAGE [RUN]: RUN's (default run) train_state.safetensors replaced by $scratch/NAME
  rows=$((rows + 1))
  rm -rf "$scratch/resume_run" && cp -r "$scratch/${3:-run}" "$scratch/resume_run"
  cp "$scratch/$1" "$scratch/resume_run/train_state.safetensors"
  expect_exit 2 "--resume with $1" -- timeout 60 "$tf" train --resume "$scratch/resume_run" --set train.steps=50
  expect_in "$err" "$2" "--resume with $1 names it: $err"
  [[ $(printf '%s\n' "$err" | wc -l) -eq 1 ]] || fail "--resume with $1: more than one line: $err"
}
state_header=$(header_of "$good_state")
data_of "$good_state" >"$scratch/state_data.bin"
head -c 1000 "$good_state" >"$scratch/state_cut";   resume_row state_cut "train_state.safetensors: header length"
assemble "$scratch/state_config_not_json" "$(printf '%s' "$state_header" | sed 's/"config":"{/"config":"{{/')" \
  "$scratch/state_data.bin"
resume_row state_config_not_json "config is not a JSON object"
assemble "$scratch/state_no_moments" "$(printf '%s' "$state_header" | sed 's/"optimizer\.m"/"optimizer.x"/')" \
  "$scratch/state_data.bin"
resume_row state_no_moments "optimizer.m"
assemble "$scratch/state_bad_rng" "$(printf '%s' "$state_header" | sed 's/"rng\.0":"[0-9]*"/"rng.0":"-1"/')" \
  "$scratch/state_data.bin"
resume_row state_bad_rng "rng.0"
cp "$good_state" "$scratch/state_nan"
printf '\000\000\300\177' | dd of="$scratch/state_nan" bs=1 seek=$((8 + ${#state_header})) conv=notrunc status=none
resume_row state_nan "NaN"
# A run with train.rng = "torch" keeps PyTorch's generator as text: the twister's 624 words,
# its position and the kept normal.
"$tf" train --config "$config" --out "$scratch/run_torch" --set train.rng=torch >/dev/null 2>&1 \
  || fail "training the tiny model with train.rng=torch"
torch_state="$scratch/run_torch/train_state.safetensors"
torch_header=$(header_of "$torch_state")
data_of "$torch_state" >"$scratch/torch_state_data.bin"
assemble "$scratch/state_bad_torch_rng" "$(printf '%s' "$torch_header" | sed 's/"rng\.torch":"[0-9]*/"rng.torch":"x/')" \
  "$scratch/torch_state_data.bin"
resume_row state_bad_torch_rng '"rng.torch": not a torch generator state' run_torch
assemble "$scratch/state_short_torch_rng" \
  "$(printf '%s' "$torch_header" | sed 's/"rng\.torch":"[0-9 ]*/"rng.torch":"1 2 3 /')" "$scratch/torch_state_data.bin"
resume_row state_short_torch_rng '"rng.torch": not a torch generator state' run_torch
finish
