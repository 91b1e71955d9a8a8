#!/usr/bin/env bash
# The test command: installs whatever Debian packages are missing, builds (Release), runs
# the whole suite with ctest (with `cmake --install` and the man page and completions it
# installs), builds the .deb and checks it (scripts/package-deb.sh, scripts/check-deb.sh),
# drives the explorer in headless Chromium, builds and runs the
# suite once more under AddressSanitizer + UndefinedBehaviorSanitizer, runs the concurrency
# tests under ThreadSanitizer, then fuzzes the checkpoint reader and the config loader
# (scripts/fuzz.sh). The exit status is the tests' status.
#   scripts/test.sh             all of them
#   scripts/test.sh --release   the Release suite and the .deb alone (CI's Debian 13 step)
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
release_only=false
[[ "${1:-}" == "--release" ]] && release_only=true

if $release_only; then scripts/install-deps.sh --packaging; else scripts/install-deps.sh --packaging --fuzz --browser; fi ||
  { echo "test.sh: installing dependencies failed" >&2; exit 2; }

run_suite() {  # run_suite BUILD_DIR [cmake options...]
  local dir=$1; shift
  echo "== $dir: configure, build, test =="
  mkdir -p "$dir"
  cmake -S . -B "$dir" "$@" >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; return 1; }
  cmake --build "$dir" -j "$jobs" || return 1
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}

status=0
run_suite build -DCMAKE_BUILD_TYPE=Release || status=1

# The .deb, built portable in build-deb: its dependencies, files and man page. (Installing it
# on a fresh Debian root is scripts/fresh-machine-check.sh --deb.)
echo "== the .deb: scripts/package-deb.sh, scripts/check-deb.sh =="
if deb=$(scripts/package-deb.sh build-deb); then
  scripts/check-deb.sh "$deb" || status=1
else
  echo "test.sh: building the .deb failed" >&2; status=1
fi
if $release_only; then
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
  if build/tinyformer train --config configs/lesson12.toml --out build/explorer-check/lesson12 --force \
       >build/explorer-check/train.log 2>&1; then
    scripts/check-explorer.sh build/tinyformer build/explorer-check/lesson12 build/explorer-check || status=1
  else
    tail -5 build/explorer-check/train.log; status=1
  fi
else
  echo "skipped: the Release suite failed"
fi

# -O1 keeps the sanitized run fast; halt_on_error makes any report fail its test.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DTINYFORMER_SANITIZE=ON || status=1

# ThreadSanitizer: the explorer's API answering 16 threads at once (tinyformer serve answers
# requests concurrently with no lock on the model); any data race fails the run.
echo "== build-tsan: the concurrency tests under ThreadSanitizer =="
mkdir -p build-tsan
if cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DTINYFORMER_TSAN=ON \
     >build-tsan/configure.log 2>&1 && cmake --build build-tsan -j "$jobs" --target tinyformer_tests; then
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/tinyformer_tests "[concurrency]" || status=1
else
  cat build-tsan/configure.log; status=1
fi

# Fuzzing (clang + libFuzzer, ASan + UBSan): the checkpoint reader and the config loader,
# FUZZ_SECONDS (default 45) each from the committed seed corpora; a crash fails the suite.
scripts/fuzz.sh "${FUZZ_SECONDS:-45}" || status=1

if [[ $status -eq 0 ]]; then echo "test.sh: all tests passed (Release, the browser, ASan+UBSan, TSan, fuzzing)"; else echo "test.sh: FAILED" >&2; fi
exit $status
