#!/usr/bin/env bash
# Float32 values in the JSON tinyformer writes print in their shortest form, at most 9
# significant digits (json_number.hpp), not as the 17 digits of the double they convert to
# (0.4365, not 0.43650001287460327): the lesson's weights drawn in float32 (lesson --json),
# inspect's attention maps (attention.json) and grads' loss. The explorer's maps (/api/run)
# are checked in tests/test_explorer.cpp.
source "$(dirname "$0")/common.sh"

# numbers_in: the numbers in the JSON on stdin, one a line (strings' digits too: keep them short).
numbers_in() { grep -oE -- '-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?'; }
# long_numbers: those of them with more than 9 significant digits.
long_numbers() {
  awk '{ m = $0; sub(/[eE].*/, "", m); gsub(/[^0-9]/, "", m); sub(/^0+/, "", m); sub(/0+$/, "", m)
         if (length(m) > 9) print }'
}
# expect_short DESCRIPTION MIN_COUNT < JSON: at least MIN_COUNT numbers, none longer than 9 digits
expect_short() {
  local numbers count long
  numbers=$(numbers_in)
  count=$(grep -c . <<< "$numbers")
  long=$(long_numbers <<< "$numbers")
  if [[ $count -lt $2 ]]; then fail "$1: only $count numbers found"
  elif [[ -n $long ]]; then fail "$1: $(wc -l <<< "$long") of $count numbers have more than 9 digits, e.g. $(head -3 <<< "$long" | tr '\n' ' ')"
  else pass "$1: $count numbers, none longer than 9 significant digits"; fi
}

# lesson --json: q_proj, k_proj, v_proj and out_proj are the float32 weights torch draws.
json=$("$tf" lesson --json 2>"$scratch/err") || fail "lesson --json: $(cat "$scratch/err")"
compact=$(tr -d ' \n' <<< "$json")
for weight in q_proj k_proj v_proj out_proj; do
  expect_short "lesson --json: $weight's values" 16 < <(grep -o "\"$weight\":{[^}]*}" <<< "$compact" | sed 's/.*"values"://')
done

"$tf" train --config "$src/tests/data/tiny.toml" --out "$scratch/run" >/dev/null 2>&1 || fail "training the tiny model"

# inspect: attention.json's weights, the float32 attention maps [L,H,T,T].
"$tf" inspect --checkpoint "$scratch/run" --text "小丁拿着红色的苹果。谁拿着苹果？小丁。" --out "$scratch/inspect" \
  >/dev/null 2>"$scratch/err" || fail "inspect: $(cat "$scratch/err")"
expect_short "attention.json's weights" $((2 * 16 * 16)) < <(grep -o '"weights":.*' "$scratch/inspect/attention.json")

# grads: the loss, a float32 scalar, on stdout and in the file's metadata.
printf '小丁拿着红色的苹果。谁拿着苹果？小丁。\n' > "$scratch/text.txt"
out=$("$tf" grads --checkpoint "$scratch/run" --text "$scratch/text.txt" --out "$scratch/grads.safetensors" 2>"$scratch/err") \
  || fail "grads: $(cat "$scratch/err")"
loss=$(grep -oE '"loss":[^,]*' <<< "$out" | cut -d: -f2)
[[ $loss =~ ^[0-9.e+-]+$ ]] && pass "grads prints its loss: $loss" || fail "grads' output: $out"
expect_short "grads' loss" 1 <<< "$loss"
expect_in "$(head -c 2000 "$scratch/grads.safetensors" | tr -d '\000')" "\"loss\":\"$loss\"" "the file's metadata holds the same loss"
# Its line is JSON whatever the path: a quote and a backslash in --out are escaped.
odd="$scratch/a \"quoted\" \\ name.safetensors"
out=$("$tf" grads --checkpoint "$scratch/run" --text "$scratch/text.txt" --out "$odd" 2>"$scratch/err") \
  || fail "grads --out with a quote: $(cat "$scratch/err")"
escaped=${odd//\\/\\\\}
escaped=${escaped//\"/\\\"}
[[ $out == "{\"loss\":$loss,\"out\":\"$escaped\"}" ]] \
  && pass "grads' line is JSON with a quote in the path" || fail "grads' line is not JSON: $out"
python3 -c 'import json, sys; json.loads(sys.argv[1])' "$out" && pass "... which Python's json reads" || fail "grads' line: $out"
# A loss that is not finite (an LM head near float32's largest: the logits overflow) is refused,
# with one line and exit 1, and no file; finite weights load, so only the loss can tell.
python3 - "$scratch/run/model.safetensors" "$scratch/huge.safetensors" <<'PY'
import json, struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
size = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + size])
begin, end = header["lm_head.weight"]["data_offsets"]
data[8 + size + begin:8 + size + end] = struct.pack("<f", 3e38) * ((end - begin) // 4)
open(sys.argv[2], "wb").write(data)
PY
rm -f "$scratch/huge_grads.safetensors"
expect_exit 1 "grads of a model whose loss overflows: exit 1" -- \
  "$tf" grads --checkpoint "$scratch/huge.safetensors" --text "$scratch/text.txt" --out "$scratch/huge_grads.safetensors"
expect_in "$err" "first window is NaN" "... saying the loss is NaN"
one_line "grads' NaN loss"
[[ ! -e $scratch/huge_grads.safetensors ]] && pass "... and writing no file" || fail "grads wrote a file for a NaN loss"
finish
