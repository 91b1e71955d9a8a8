#!/usr/bin/env bash
# A clone stands on its own: no file of the project refers to ../shared, the folder that sits
# beside the checkout on developer machines only. What the project needed from it now lives
# here: docs/model.md, scripts/torch_reference.py and scripts/get-shakespeare.sh.
#
#   tests/test_self_contained.sh SOURCE_DIR
#
# Checks SOURCE_DIR's files (git's tracked and untracked-but-not-ignored files in a checkout;
# otherwise every file outside build*/, runs/, data/, node_modules/ and .git/) for
# "../shared", "shared/reference", "shared/docs" and "shared/data", and prints each as
#   FAIL: docs/x.md:12: refers to ../shared, which a clone does not have: <the line>
# Only the files in `allowed` may: the benchmarks that take the shared copy of Tiny
# Shakespeare when data/ has none, and this test. Then it shows the check refusing a scratch
# tree with one such reference. ctest runs it (build.self_contained).
set -uo pipefail
src=${1:?usage: test_self_contained.sh SOURCE_DIR}
allowed=(scripts/bench_vs_torch.py scripts/bench_large_corpus.sh scripts/bench_contention.sh tests/test_self_contained.sh)
pattern='\.\./shared|shared/(reference|docs|data)'

# files DIR: the files to check, NUL-separated, relative to DIR
files() {
  if command -v git >/dev/null && [[ $(git -C "$1" rev-parse --show-toplevel 2>/dev/null) == "$(cd "$1" && pwd -P)" ]]; then
    git -C "$1" ls-files -z --cached --others --exclude-standard
  else
    (cd "$1" && find . \( -name .git -o -name 'build*' -o -name runs -o -name data -o -name node_modules \
      -o -name __pycache__ \) -prune -o -type f -print0 | sed -z 's|^\./||')
  fi
}

# check DIR: prints a FAIL line per reference outside `allowed`; exit status 1 if any
check() {
  local dir=$1 file line text found=0
  while IFS=: read -r file line text; do
    echo "FAIL: $file:$line: refers to ../shared, which a clone does not have: $text"
    found=1
  done < <(files "$dir" | grep -zvxF "${allowed[@]/#/-e}" |
           (cd "$dir" && xargs -0 -r grep -nIHE "$pattern" -- 2>/dev/null))  # a file gone since listing: skipped
  return $found
}

failures=0
if out=$(check "$src"); then
  echo "ok: no file of $src refers to ../shared but ${allowed[*]}"
else
  echo "$out"
  failures=$((failures + 1))
fi

# The check itself: a scratch tree with one reference outside the allow-list is refused,
# naming the file and the line; the same reference in an allowed file, or in a build
# folder, is not.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/docs" "$scratch/scripts" "$scratch/build-x"
printf '# Notes\nThe math: ../shared/docs/model-contract.md\n' > "$scratch/docs/notes.md"
printf 'text = "../shared/data/tinyshakespeare.txt"\n' > "$scratch/scripts/bench_vs_torch.py"
printf '../shared/reference/torch_model.py\n' > "$scratch/build-x/log.txt"
out=$(check "$scratch"); code=$?
expected="FAIL: docs/notes.md:2: refers to ../shared, which a clone does not have: The math: ../shared/docs/model-contract.md"
if [[ $code -eq 1 && "$out" == "$expected" ]]; then
  echo "ok: a scratch tree citing ../shared/docs in docs/notes.md:2 is refused, its allowed and build files are not"
else
  echo "FAIL: the scratch tree: exit $code, expected 1 and exactly '$expected' in: $out"
  failures=$((failures + 1))
fi
rm "$scratch/docs/notes.md"
if out=$(check "$scratch"); then echo "ok: without it the scratch tree passes"; else
  echo "FAIL: the scratch tree without docs/notes.md still fails: $out"; failures=$((failures + 1)); fi

if [[ $failures -eq 0 ]]; then echo "all passed"; exit 0; else echo "$failures failed"; exit 1; fi
