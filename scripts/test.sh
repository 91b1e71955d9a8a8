#!/usr/bin/env bash
# The test command: installs whatever Debian packages are missing, builds (Release), runs
# the whole suite with ctest (with `cmake --install` and the man page and completions it
# installs), builds the .deb and checks it (scripts/package-deb.sh, scripts/check-deb.sh),
# drives the explorer in headless Chromium, builds and runs the
# suite once more under AddressSanitizer + UndefinedBehaviorSanitizer, runs the concurrency
# tests under ThreadSanitizer, then fuzzes the checkpoint reader and the config loader
# (scripts/fuzz.sh). The exit status is the tests' status. Each build is made in CMake unity
# batches (CMAKE_UNITY_BUILD: 238 s instead of 555 s for Release on 2 cores) through ccache,
# whose cache is outside the clone (~/.cache/ccache), so a later run on the same machine
# reuses it; an empty one only costs its lookups. Every stage's wall-clock time is printed
# in a table at the end (and kept in build/stages.tsv for .ci/run).
#   scripts/test.sh             all of them
#   scripts/test.sh --release   the Release suite and the .deb alone (CI's Debian 13 step)
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
release_only=false
[[ "${1:-}" == "--release" ]] && release_only=true

source scripts/lib/stages.sh
mkdir -p build
export STAGES_FILE=${STAGES_FILE:-$PWD/build/stages.tsv}
: >"$STAGES_FILE"
if $release_only; then
  stage "install missing Debian packages" scripts/install-deps.sh --packaging --ccache
else
  stage "install missing Debian packages" scripts/install-deps.sh --packaging --ccache --fuzz --browser
fi || { echo "test.sh: installing dependencies failed" >&2; exit 2; }
# Every build below: unity batches, through ccache (CMAKE_CXX_COMPILER_LAUNCHER).
export TINYFORMER_BUILD_OPTIONS="-DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1  # the same files in another clone hit the cache

build_tree() {  # build_tree BUILD_DIR [cmake options...] [-- TARGET...]
  local dir=$1 options=() targets=(); shift
  while [[ $# -gt 0 && $1 != -- ]]; do options+=("$1"); shift; done
  [[ ${1:-} == -- ]] && { shift; targets=(--target "$@"); }
  echo "== $dir: configure, build ${targets[*]} =="
  mkdir -p "$dir"
  # shellcheck disable=SC2086  # the options are words
  cmake -S . -B "$dir" $TINYFORMER_BUILD_OPTIONS "${options[@]}" >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; return 1; }
  cmake --build "$dir" -j "$jobs" "${targets[@]}"
}

status=0
stage "Release: build" build_tree build -DCMAKE_BUILD_TYPE=Release &&
  stage "Release: ctest" ctest --test-dir build --output-on-failure -j "$jobs" || status=1

# The .deb, built portable in build-deb: its dependencies, files and man page. (Installing it
# on a fresh Debian root is scripts/fresh-machine-check.sh --deb.)
echo "== the .deb: scripts/package-deb.sh, scripts/check-deb.sh =="
if deb=$(stage "the .deb: portable build, [parity], cpack" scripts/package-deb.sh build-deb); then
  stage "the .deb: check-deb" scripts/check-deb.sh "$deb" || status=1
else
  echo "test.sh: building the .deb failed" >&2; status=1
fi
if $release_only; then
  stage_table "$STAGES_FILE"
  if [[ $status -eq 0 ]]; then echo "test.sh: the Release suite passed"; else echo "test.sh: FAILED" >&2; fi
  exit $status
fi
# The explorer in a real browser: the lesson model trained (seconds), then
# scripts/check-explorer.sh serves it and drives Debian's headless chromium through the page
# (npm's puppeteer-core, installed from its lock file on first use); screenshots in
# build/explorer-check/.
echo "== the explorer in headless Chromium =="
if [[ $status -eq 0 ]]; then
  mkdir -p build/explorer-check
  if stage "explorer: train the lesson" build/tinyformer train --config configs/lesson12.toml \
       --out build/explorer-check/lesson12 --force >build/explorer-check/train.log 2>&1; then
    stage "explorer: headless Chromium" scripts/check-explorer.sh build/tinyformer build/explorer-check/lesson12 \
      build/explorer-check || status=1
  else
    tail -5 build/explorer-check/train.log; status=1
  fi
else
  echo "skipped: the Release suite failed"
fi

# -O1 keeps the sanitized run fast; halt_on_error makes any report fail its test. Built with
# clang (as the fuzzers are), which compiles it in half GCC's time (378 s instead of 743 s
# on 2 cores); its OpenMP runtime runs the own kernels' loops, libgomp oneDNN's, as in the
# fuzzers. The Release suite above (GCC, libgomp throughout) is the build users make. It is
# built without MPI (whose library's allocations at start-up LeakSanitizer would report), so
# its test_distributed.sh checks that such a binary refuses to be one of several processes.
# Nor is the Python module: a sanitized extension loads into python3 only with the sanitizer's
# runtime preloaded (the Release suite tests it).
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
stage "ASan+UBSan: build (clang)" build_tree build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DTINYFORMER_SANITIZE=ON -DTINYFORMER_MPI=OFF -DTINYFORMER_PYTHON=OFF &&
  stage "ASan+UBSan: ctest" ctest --test-dir build-asan --output-on-failure -j "$jobs" || status=1

# ThreadSanitizer: the explorer's API answering 16 threads at once (tinyformer serve answers
# requests concurrently with no lock on the model); any data race fails the run. Only the
# explore layer, the layers below it and test_explorer.cpp are built (tinyformer_concurrency_tests).
stage "TSan: build (explore and below + test_explorer.cpp)" build_tree build-tsan -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DTINYFORMER_TSAN=ON -- tinyformer_concurrency_tests &&
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    stage "TSan: [concurrency]" build-tsan/tests/tinyformer_concurrency_tests "[concurrency]" || status=1

# Fuzzing (clang + libFuzzer, ASan + UBSan): the checkpoint reader and the config loader,
# FUZZ_SECONDS (default 45) each from the committed seed corpora; a crash fails the suite.
stage "fuzzing: clang build, ${FUZZ_SECONDS:-45} s each target" scripts/fuzz.sh "${FUZZ_SECONDS:-45}" || status=1

stage_table "$STAGES_FILE"

if [[ $status -eq 0 ]]; then echo "test.sh: all tests passed (Release, the browser, ASan+UBSan, TSan, fuzzing)"; else echo "test.sh: FAILED" >&2; fi
exit $status
