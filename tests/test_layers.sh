#!/usr/bin/env bash
# The layer check (scripts/check-layers.sh): the tree as it is passes, and a copy of it with
# one wrong include or folder fails, naming the file, the line and the rule.
set -uo pipefail
src=${1:?usage: test_layers.sh SOURCE_DIR}
check="$src/scripts/check-layers.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

out=$(bash "$check" "$src" 2>&1) && pass "the tree: $out" || fail "the tree itself fails the check: $out"

# expect_refused DESCRIPTION EXPECTED_TEXT: the copy in $scratch/tree fails, saying EXPECTED_TEXT
expect_refused() {
  out=$(bash "$check" "$scratch/tree" 2>&1); local code=$?
  if [[ $code -eq 1 && "$out" == *"$2"* ]]; then pass "$1 is refused"; else fail "$1: exit $code, expected 1 and '$2' in: $out"; fi
}
fresh_copy() { rm -rf "$scratch/tree"; mkdir "$scratch/tree"; cp -r "$src/CMakeLists.txt" "$src/src" "$src/include" "$scratch/tree/"; }
# add_include FILE TEXT: TEXT becomes line 2 of FILE
add_include() { sed -i "1a $2" "$scratch/tree/$1"; }

fresh_copy; add_include src/engine/tensor.cpp '#include "tinyformer/train/config.hpp"'
expect_refused "an upward include (engine -> train)" \
  "src/engine/tensor.cpp:2: includes tinyformer/train/config.hpp, but engine may use only support"
fresh_copy; add_include include/tinyformer/data/text.hpp '#include "tinyformer/model/model.hpp"'
expect_refused "an upward include in a header (data -> model)" \
  "include/tinyformer/data/text.hpp:2: includes tinyformer/model/model.hpp, but data may use only support, engine"
fresh_copy; add_include src/lesson/lesson.cpp '#include "tinyformer/inspect/heatmap.hpp"'
expect_refused "a sideways include (lesson -> inspect)" "src/lesson/lesson.cpp:2: includes tinyformer/inspect/heatmap.hpp, but lesson may use only"
fresh_copy; add_include src/model/model.cpp '#include "tinyformer/tensor.hpp"'
expect_refused "an include that names no layer" "src/model/model.cpp:2: includes tinyformer/tensor.hpp, which names no layer"
fresh_copy; add_include src/train/config.cpp '#include "../support/x.hpp"'
expect_refused "a relative include out of its folder" "src/train/config.cpp:2: includes ../support/x.hpp, which climbs out"
fresh_copy; mkdir "$scratch/tree/src/util"
expect_refused "a folder that is no layer" "src/util: a folder that is no layer"
fresh_copy; sed -i 's/^tinyformer_layer(model BELOW data /tinyformer_layer(model BELOW engine /' "$scratch/tree/CMakeLists.txt"
expect_refused "an include the build graph does not allow (model no longer on data)" \
  "includes tinyformer/data/text.hpp, but model may use only support, engine"
# and down the layers, several floors at once, is fine
fresh_copy; add_include src/explore/explorer.cpp '#include "tinyformer/support/errors.hpp"'
out=$(bash "$check" "$scratch/tree" 2>&1) && pass "an include several layers down passes" || fail "explore -> support refused: $out"

if [[ $failures -eq 0 ]]; then echo "all passed"; exit 0; else echo "$failures failed"; exit 1; fi
