#!/usr/bin/env bash
# Fuzzes the checkpoint reader and the config loader with libFuzzer (clang, ASan + UBSan):
#   scripts/fuzz.sh [SECONDS]   each target for SECONDS (default 45) from its seed corpus
# Builds build-fuzz (clang++, -DTINYFORMER_FUZZ=ON, only the fuzz targets), then runs each
# target on a scratch copy of fuzz/corpus/<target> (the committed seeds stay as they are).
# A crash, a sanitizer report, an uncaught exception (anything but InputError), a hang
# (> 10 s for one input) or an input that takes more than 2 GB fails the script; the input
# is saved as build-fuzz/artifacts/<target>-crash-* — fix the bug and add the file to
# fuzz/regressions/<target>/, which the normal test suite replays (ctest fuzz.replay_*).
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-45}
dir=build-fuzz

echo "== $dir: configure, build (clang++, libFuzzer + ASan + UBSan) =="
mkdir -p "$dir/artifacts"
# shellcheck disable=SC2086  # TINYFORMER_BUILD_OPTIONS: more cmake options (test.sh: unity, ccache)
cmake -S . -B "$dir" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DTINYFORMER_FUZZ=ON -DTINYFORMER_TESTS=OFF ${TINYFORMER_BUILD_OPTIONS:-} >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir" -j "$(nproc)" --target fuzz_checkpoint fuzz_config || exit 1

export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fuzz() {  # fuzz TARGET: one libFuzzer run (single-threaded), its log in build-fuzz/fuzz_TARGET.log
  local target=$1 work
  work=$(mktemp -d)
  mkdir -p "fuzz/regressions/$target"  # git keeps no empty directory: a target with no regression yet has none
  "$dir/fuzz_$target" "$work" "fuzz/corpus/$target" "fuzz/regressions/$target" \
    -dict="fuzz/$target.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -artifact_prefix="$dir/artifacts/$target-" -print_final_stats=1 >"$dir/fuzz_$target.log" 2>&1
  local code=$?
  rm -rf "$work"
  return $code
}

# The two targets side by side (one core each): $seconds of wall time for both.
echo "== fuzz_checkpoint and fuzz_config: ${seconds} s each, from fuzz/corpus/ =="
rm -f "$dir"/artifacts/*
fuzz checkpoint & checkpoint_pid=$!
fuzz config & config_pid=$!
status=0
for target in checkpoint config; do
  pid_var=${target}_pid
  if wait "${!pid_var}"; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/fuzz_$target.log" | grep -o '[0-9]*$')
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$dir/fuzz_$target.log" | grep -o '[0-9]*$')
    echo "fuzz_$target: no crash in ${seconds} s, ${runs} inputs (${rate}/s)"
  else
    tail -n 60 "$dir/fuzz_$target.log"
    echo "FAIL: fuzz_$target found a crash: $(ls "$dir"/artifacts/"$target"-* 2>/dev/null | tr '\n' ' ')" >&2
    status=1
  fi
done
exit $status
