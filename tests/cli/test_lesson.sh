#!/usr/bin/env bash
# tinyformer lesson as a user runs it: exit 0, the lesson's numbers in the report and in
# --json, --html writing the self-contained demo page, and bad usage answered with exit 2.
source "$(dirname "$0")/common.sh"

report=$("$tf" lesson 2>"$scratch/err")
[[ $? -eq 0 ]] && pass "lesson exits 0" || fail "lesson: $(cat "$scratch/err")"
expect_in "$report" "split_heads holds [4, 5], the reshape without transpose [2, 3]" "the split and the forgotten transpose at head 0, position 1"
expect_in "$report" "merge_heads(split_heads(X, 2)) == X: yes" "merge_heads undoes split_heads"
# The weights at query position 1, each within 1e-6 of PyTorch's (head 0 [2.9784e-03, 9.9702e-01, 0],
# head 1 [9.99997497e-01, 2.4488e-06, 0]).
close_to() {  # close_to LINE_LABEL EXPECTED... : the numbers after the label, each within 1e-6
  local label=$1; shift
  local line; line=$(printf '%s\n' "$report" | grep -m1 "^ *$label") || { fail "no line '$label'"; return; }
  awk -v line="${line#*:}" -v want="$*" -v label="$label" 'BEGIN {
    n = split(line, got, " "); m = split(want, expect, " ");
    if (n != m) { print "FAIL: " label " has " n " numbers, expected " m; exit }
    for (i = 1; i <= n; i++) { d = got[i] - expect[i]; if (d < 0) d = -d; if (d > 1e-6) { print "FAIL: " label " number " i ": " got[i] " vs " expect[i]; exit } }
    print "ok: " label " within 1e-6 of PyTorch" }'
}
close_to "head 0:" 2.9783810023e-03 9.9702161551e-01 0
close_to "head 1:" 9.9999749660e-01 2.4488035706e-06 0
expect_in "$report" "(<= 1e-6: yes)" "batched heads equal the per-head loop"
for row in "4 2 64 64" "64 1 16,384 16,384" "64 2 16,384 16,384" "64 4 16,384 16,384"; do  # D H counted 4D^2
  printf '%s\n' "$report" | grep -Eq "^ +${row// / +}\$" && pass "parameter row D H counted 4D^2 = $row" \
    || fail "no parameter row $row"
done
expect_in "$report" "split_heads: d_model 5 is not divisible by n_heads 2" "the engine's D=5 error"
expect_in "$report" "No: both are [1,2,2,2], but at head 0, position 1 the split holds [4, 5]" "check question 2, answered"
expect_in "$report" "[1,1,3,4]; head 0, position 1 holds [4, 5, 6, 7]" "check question 1, answered"
expect_in "$report" "head 1:  0.999998  0.000002  0.000000" "head 1's weights in the lesson's six digits"
expect_in "$report" "no single a reaches the target" "the single-row limit"

json=$("$tf" lesson --json 2>/dev/null)
[[ $? -eq 0 ]] && pass "lesson --json exits 0" || fail "lesson --json"
# The JSON read with grep and awk (no Python on a fresh machine): the weights at query 1
# within 1e-6 of the lesson's, the check question's cells, the counts, the D=5 error.
compact=$(tr -d ' \n' <<<"$json")
weights=$(grep -o '"weights_at_query1":\[\[[^]]*\],\[[^]]*\]\]' <<<"$compact" | sed 's/.*:\[\[//; s/\]\]$//; s/\],\[/,/')
awk -v got="$weights" 'BEGIN {
  n = split(got, w, ","); split("0.002978,0.997022,0,0.999998,0.000002,0", want, ",")
  if (n != 6) exit 1
  for (i = 1; i <= 6; ++i) if (w[i] - want[i] > 1e-6 || want[i] - w[i] > 1e-6) exit 1
}' && pass "the JSON's weights at query 1 are the lesson's, within 1e-6 ($weights)" \
  || fail "the JSON's weights at query 1: '$weights'"
[[ $compact == *'"head0_position1":{"split":[4.0,5.0],"wrong":[2.0,3.0]}'* ]] && pass "the JSON's check question 1" || fail "the JSON's check question 1: $(grep -o '"head0_position1":{[^}]*}' <<<"$compact")"
counts=$(grep -o '"counted":[0-9]*' <<<"$compact" | cut -d: -f2 | tr '\n' ' ')
[[ $counts == "64 16384 16384 16384 " ]] && pass "the JSON's parameter counts" || fail "the JSON's counts: $counts"
expect_in "$compact" '"d5_error":"split_heads:d_model5isnotdivisible' "the JSON's D=5 error"

"$tf" lesson --html "$scratch/demo.html" >/dev/null 2>"$scratch/err"
[[ $? -eq 0 && -s "$scratch/demo.html" ]] && pass "--html writes the page" || fail "--html: $(cat "$scratch/err")"
page=$(cat "$scratch/demo.html" 2>/dev/null)
expect_in "$page" 'id="forget-transpose"' "the page has the switch"
expect_in "$page" '<script id="lesson-tables" type="application/json">' "the page embeds the engine's tables"
expect_in "$page" '"wrong":{"from":[[0,0,0],[0,0,1],[0,0,2]' "the wrong reshape's table"
expect_in "$page" '>[4, 5]</strong>' "the page shows the split's [4, 5]"
expect_in "$page" '>[2, 3]</strong>' "the page shows the forgotten transpose's [2, 3]"
[[ "$page" != *"http://"* && "$page" != *"https://"* && "$page" != *"src="* ]] && pass "the page loads nothing from outside" \
  || fail "the page refers to something outside"
[[ -z $(ls -A "$scratch" | grep '^\.demo') ]] && pass "no temporary file left behind" || fail "left: $(ls -A "$scratch")"

expect_exit 2 "an unknown flag" -- "$tf" lesson --frobnicate
expect_in "$err" "tinyformer: error:" "a one-line error"
expect_exit 2 "--html without a file" -- "$tf" lesson --html
expect_exit 2 "--html with an empty path" -- "$tf" lesson --html ""
expect_exit 1 "--html into a missing directory (a failed write)" -- "$tf" lesson --html "$scratch/no/such/dir/demo.html"
finish
