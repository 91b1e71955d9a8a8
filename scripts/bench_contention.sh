#!/usr/bin/env bash
# tinyformer on a busy machine: the four targets of "Fair on a busy machine" (issue 47),
# each the median of paired rounds on this machine, in one table with this CPU's name.
#
#   scripts/bench_contention.sh [--base REV] [--rounds N] [--tinyformer BIN] [--only LIST]
#
#   alone     `bench` at the lesson B32, lesson B8 (T32) and Shakespeare shapes, 2 threads,
#             this build against REV's (default: ddf209d, the last commit before
#             share_cores), alternating; target: ≥ 0.97× in each.
#   busy      `bench`, 2 threads against 1 thread, both beside one busy single-threaded
#             process (sha256sum /dev/zero); target ≥ 0.9×.
#   two       a 300-step lesson training alone, then two of them at once; each one's speed
#             against alone; target ≥ 0.4×.
#   sweep     `sweep --jobs 2` of four lesson runs against `--jobs 1` (one after another,
#             all cores each); target: wall time ≤ 1.15×.
#
# --only takes a comma list of alone,busy,two,sweep. REV's binary is built in build-base/
# (through ccache when it is there). Nothing else may run meanwhile: OpenMP programs time
# badly beside a build or a second benchmark, which is what this script measures on purpose
# and must not suffer by accident. Bounded: about 10 minutes on 2 cores with --rounds 5.
# Needs ../shared/data/tinyshakespeare.txt or data/tinyshakespeare.txt (scripts/get-shakespeare.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
base=ddf209d rounds=5 tf=$root/build/tinyformer only=alone,busy,two,sweep
while [[ $# -gt 0 ]]; do
  case $1 in
    --base) base=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --tinyformer) tf=$(realpath "$2"); shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "bench_contention: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
wants() { [[ ",$only," == *",$1,"* ]]; }
[[ -x $tf ]] || { echo "bench_contention: no $tf: build first (scripts/test.sh, or cmake)" >&2; exit 2; }
shakespeare=""
for f in data/tinyshakespeare.txt ../shared/data/tinyshakespeare.txt; do [[ -f $f ]] && shakespeare=$(realpath "$f") && break; done
scratch=$(mktemp -d)
busy_pid=""
trap '[[ -n $busy_pid ]] && kill $busy_pid 2>/dev/null; rm -rf "$scratch"' EXIT

median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.3f}")' "$@"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
now() { date +%s.%N; }
ratio() { python3 -c "print(f'{$1/$2:.4f}')"; }
# bench_tps BIN ARGS...: the training tokens/s of one bench run
# (50 steps per repetition: with bench's default 10, lesson B8's 70 timed steps last 0.1 s, and
# a build with 5 warm-up steps, as before share_cores, timed its first steps at half speed in
# about half the runs.)
bench_tps() { local bin=$1; shift; "$bin" bench --json --sample-chars 16 --steps 50 "$@" | field train_tokens_per_s; }
lesson_b32=(--config configs/lesson12.toml --set train.batch_size=32 --set model.context=64)
lesson_b8=(--config configs/lesson12.toml --set train.batch_size=8 --set model.context=32)
shakespeare_shape=(--config configs/shakespeare_char.toml --set "data.path=$shakespeare")
rows=()
row() { rows+=("$(printf '| %s | %s | %s | %s |' "$1" "$2" "$3" "$4")"); echo "  $1: $2 (target $3) $4"; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
flags=$(grep -oE 'avx512f|avx512_bf16|amx_bf16|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "bench_contention: $cpu, $(nproc) CPUs ($flags), $rounds rounds, $("$tf" --version | head -1)"

if wants alone; then
  base_tf=$root/build-base/tinyformer
  commit=$(git rev-parse --short "$base")
  echo "== alone: this build against $commit's, built in build-base/ =="
  if [[ ! -x $base_tf || $(cat build-base/.commit 2>/dev/null) != "$commit" ]]; then
    rm -rf build-base/src && mkdir -p build-base && git worktree add -f --detach build-base/src "$commit" >/dev/null
    launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake -S build-base/src -B build-base -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON "${launcher[@]}" >/dev/null
    cmake --build build-base -j "$(nproc)" --target tinyformer >/dev/null
    git worktree remove --force build-base/src
    echo "$commit" >build-base/.commit
  fi
  for shape in lesson_b32 lesson_b8 shakespeare_shape; do
    [[ $shape == shakespeare_shape && -z $shakespeare ]] && { echo "  (no tinyshakespeare.txt: Shakespeare skipped)"; continue; }
    declare -n args=$shape
    ratios=() ours_all=() theirs_all=()
    for ((r = 0; r < rounds; ++r)); do  # the order alternates, so that neither always goes first
      if ((r % 2)); then ours=$(bench_tps "$tf" "${args[@]}" --threads 2); theirs=$(bench_tps "$base_tf" "${args[@]}" --threads 2)
      else theirs=$(bench_tps "$base_tf" "${args[@]}" --threads 2); ours=$(bench_tps "$tf" "${args[@]}" --threads 2); fi
      ratios+=("$(ratio "$ours" "$theirs")") ours_all+=("$ours") theirs_all+=("$theirs")
    done
    row "alone, $shape, 2 threads, against $commit" "$(median "${ratios[@]}")×" "≥ 0.97×" \
      "tokens/s: this build $(median "${ours_all[@]}"), $commit $(median "${theirs_all[@]}"); rounds: ${ratios[*]}"
    unset -n args
  done
fi

if wants busy; then
  echo "== beside one busy single-threaded process: 2 threads against 1 =="
  sha256sum /dev/zero & busy_pid=$!
  sleep 0.5
  ratios=() two=() one=()
  for ((r = 0; r < rounds; ++r)); do
    a=$(bench_tps "$tf" "${lesson_b32[@]}" --threads 2); b=$(bench_tps "$tf" "${lesson_b32[@]}" --threads 1)
    two+=("$a") one+=("$b") ratios+=("$(ratio "$a" "$b")")
  done
  kill $busy_pid; wait $busy_pid 2>/dev/null || true; busy_pid=""
  row "beside a busy process, lesson B32: 2 threads / 1 thread" "$(median "${ratios[@]}")×" "≥ 0.9×" \
    "tokens/s: 2 threads $(median "${two[@]}"), 1 thread $(median "${one[@]}")"
fi

train_lesson() {  # train_lesson DIR: 300 lesson steps, default threads
  "$tf" train --config configs/lesson12.toml --set train.steps=300 --set "data.probes_path=\"\"" \
    --out "$1" --force >/dev/null 2>&1
}
if wants two; then
  echo "== two 300-step lesson trainings at once, against one alone =="
  ratios=() alone_s=() pair_s=()
  for ((r = 0; r < rounds; ++r)); do
    t0=$(now); train_lesson "$scratch/alone"; alone=$(python3 -c "print($(now) - $t0)")
    ( t=$(now); train_lesson "$scratch/a"; python3 -c "print($(now) - $t)" >"$scratch/a.s" ) &
    ( t=$(now); train_lesson "$scratch/b"; python3 -c "print($(now) - $t)" >"$scratch/b.s" ) &
    wait
    for who in a b; do pair=$(cat "$scratch/$who.s"); pair_s+=("$pair"); ratios+=("$(ratio "$alone" "$pair")"); done
    alone_s+=("$alone")
  done
  row "two trainings at once: each one's speed / alone" "$(median "${ratios[@]}")×" "≥ 0.4×" \
    "seconds: alone $(median "${alone_s[@]}"), each of two $(median "${pair_s[@]}") (min ratio $(printf '%s\n' "${ratios[@]}" | sort -n | head -1))"
fi

if wants sweep; then
  echo "== sweep of four lesson runs: --jobs 2 against --jobs 1 =="
  ratios=()
  sweep() { "$tf" sweep --config configs/lesson12.toml --seeds 1,2,3,4 --set "data.probes_path=\"\"" \
              --jobs "$1" --out "$scratch/sweep$1" --force >/dev/null 2>&1; }
  for ((r = 0; r < rounds; ++r)); do
    rm -rf "$scratch"/sweep*
    t0=$(now); sweep 1; one=$(python3 -c "print($(now) - $t0)")
    t0=$(now); sweep 2; two=$(python3 -c "print($(now) - $t0)")
    ratios+=("$(ratio "$two" "$one")")
  done
  row "sweep --jobs 2 of four lesson runs / --jobs 1" "$(median "${ratios[@]}")×" "≤ 1.15×" "rounds: ${ratios[*]}"
fi

echo
echo "| what | median | target | detail |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "($cpu, $(nproc) CPUs: $flags; $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty), $(date -u +%Y-%m-%d))"
