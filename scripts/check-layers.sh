#!/usr/bin/env bash
# Checks that every include runs down the layers, never up or sideways.
#
#   scripts/check-layers.sh [SOURCE_DIR]
#
# The layers are the folders src/<layer>/ and include/tinyformer/<layer>/, and which layer
# sits on which is read from CMakeLists.txt's `tinyformer_layer(NAME BELOW lower...)` calls:
# the build graph is the one place it is written. A file may include its own layer's headers
# and those of every layer below its own (below the ones below, too); src/cli/ and src/python/
# (the two front ends: the executable and the Python module) may include
# any. Anything else is printed as
#   src/engine/tensor.cpp:7: includes tinyformer/train/config.hpp, but engine may use only support
# and the script exits 1. So does an include of "tinyformer/<name>.hpp" outside any layer's
# folder, a quoted include that climbs out of its folder ("../"), and a folder of src/ or
# include/tinyformer/ that is not a layer. ctest runs it (build.layers).
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# name below1 below2 ... for each tinyformer_layer() call, one line each
layers=$(awk '
  /^tinyformer_layer\(/ { call = ""; inside = 1 }
  inside { call = call " " $0; if ($0 ~ /\)/) { inside = 0; calls[++n] = call } }
  END {
    for (i = 1; i <= n; ++i) {
      c = calls[i]; sub(/^ *tinyformer_layer\(/, "", c); sub(/SOURCES.*/, "", c); gsub(/BELOW/, "", c)
      gsub(/[ \t]+/, " ", c); sub(/^ /, "", c); sub(/ $/, "", c); print c
    }
  }' CMakeLists.txt)
[[ -n "$layers" ]] || { echo "check-layers: no tinyformer_layer() calls in $root/CMakeLists.txt" >&2; exit 2; }

# Every quoted include: file:line:text
includes=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src include --include='*.cpp' --include='*.hpp' || true)
folders=$(find src include/tinyformer -mindepth 1 -maxdepth 1 | sort)

awk -v layers="$layers" -v folders="$folders" '
  function allowed_list(layer,   out, other, i) {
    out = ""
    for (i = 1; i <= count; ++i) {
      other = order[i]
      if (other != layer && (layer SUBSEP other) in reach) out = out (out == "" ? "" : ", ") other
    }
    return out == "" ? "nothing else" : out
  }
  BEGIN {
    n = split(layers, rows, "\n")
    for (i = 1; i <= n; ++i) {
      m = split(rows[i], word, " "); known[word[1]] = 1; below[word[1]] = ""; order[++count] = word[1]
      for (j = 2; j <= m; ++j) { below[word[1]] = below[word[1]] " " word[j]; direct[word[1] SUBSEP word[j]] = 1 }
    }
    # reach = the transitive closure of "sits directly on"
    for (a in known) for (b in known) if ((a SUBSEP b) in direct) reach[a SUBSEP b] = 1
    for (k in known) for (a in known) for (b in known)
      if ((a SUBSEP k) in reach && (k SUBSEP b) in reach) reach[a SUBSEP b] = 1
    bad = 0
    f = split(folders, entries, "\n")
    for (i = 1; i <= f; ++i) {
      path = entries[i]; if (path == "") continue
      name = path; sub(/^(src|include\/tinyformer)\//, "", name)
      if (name ~ /\./) { print path ": a file outside any layer'"'"'s folder"; bad = 1; continue }
      if (!(name in known) && !(path == "src/cli" || path == "src/python")) { print path ": a folder that is no layer of CMakeLists.txt (tinyformer_layer)"; bad = 1 }
    }
  }
  {
    line = $0
    file = line; sub(/:.*/, "", file)
    rest = substr(line, length(file) + 2); number = rest; sub(/:.*/, "", number)
    text = substr(rest, length(number) + 2)
    included = text; sub(/^[^"]*"/, "", included); sub(/".*/, "", included)
    own = file; sub(/^(src|include\/tinyformer)\//, "", own); sub(/\/.*/, "", own)
    where = file ":" number ": includes " included
    if (included ~ /(^|\/)\.\.\//) { print where ", which climbs out of its folder (\"../\")"; bad = 1; next }
    if (included !~ /^tinyformer\//) next  # a private header beside its source, or a generated one
    target = included; sub(/^tinyformer\//, "", target)
    if (target !~ /\//) { print where ", which names no layer (tinyformer/<layer>/<name>.hpp)"; bad = 1; next }
    sub(/\/.*/, "", target)
    if (!(target in known)) { print where ", but " target " is no layer of CMakeLists.txt"; bad = 1; next }
    if (own == "cli" || own == "python" || own == target || (own SUBSEP target) in reach) next
    print where ", but " own " may use only " allowed_list(own); bad = 1
  }
  END { exit bad }
' <<<"$includes" && echo "check-layers: every include runs down the layers" || {
  echo "check-layers: the includes above run up or across the layers (CMakeLists.txt: tinyformer_layer)" >&2; exit 1; }
