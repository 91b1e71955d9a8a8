#!/usr/bin/env bash
# tinyformer on x86-64 CPUs this machine is not, under qemu-user: an AVX2-only AMD Zen 3
# (qemu's EPYC-Milan model: AVX2 and FMA, no AVX-512) and an SSE4.2-only Intel Westmere
# (x86-64-v2). The binaries are this machine's own portable build (the .deb's flags); qemu
# answers their CPUID as that CPU would, so Highway and oneDNN pick their kernels for it by
# themselves, as on a real one, with no TINYFORMER_ISA or ONEDNN_MAX_CPU_ISA.
#   scripts/x86-under-qemu.sh            (needs root: debootstrap, chroot, mount)
#   scripts/x86-under-qemu.sh --ci DIR   .ci/run's part: DIR's portable build (the .deb's,
#                                        build-deb), not built again, and only the stages
#                                        version, bf16 and parity
#   scripts/x86-under-qemu.sh --remove   deletes the cached root
# It checks what a speed figure cannot: that dispatch on such a CPU names and runs the right
# kernels, that they compute what the tests demand, and that the AVX2 and SSE4 stand-ins used
# for benchmarks on AVX-512 machines (TINYFORMER_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2, ...)
# compute the same bits as the real dispatch. It measures no speed: emulated AVX2 is several
# thousand times slower than the hardware.
#
# Nothing is installed on this machine: qemu-user goes into a Debian 12 root made with
# scripts/lib/debian-root.sh and kept in $TINYFORMER_ROOT_CACHE (default
# /var/cache/tinyformer/roots)/bookworm-qemu-user, and runs from there through that root's own
# loader and libraries. The build is build/x86-under-qemu (portable, unity batches); the
# stages' logs and runs are in build/x86-under-qemu/checks.
#
# Per CPU: version (--version names the CPU's level, oneDNN's ISA and the own kernels'
# target), parity (the [parity] tests; gradcheck too on the Zen 3), bf16 (train.precision =
# "bf16" is refused with exit 2, naming oneDNN's ISA), train (2 steps of the lesson model:
# the checkpoint's tensors byte for byte those the stand-in writes on this machine; then a
# greedy sample, the same text as the stand-in's). Prints each stage's seconds; exits
# non-zero if any fails.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/lib/debian-root.sh
source scripts/lib/debian-root.sh
# shellcheck source=scripts/lib/logged-stages.sh
source scripts/lib/logged-stages.sh
root="$debian_root_cache/bookworm-qemu-user"
if [[ ${1:-} == --remove ]]; then
  debian_root_remove "$root"
  exit
fi
usage="usage: scripts/x86-under-qemu.sh [--ci BUILD_DIR | --remove]"
ci=false
build="$PWD/build/x86-under-qemu"
case $# in
  0) ;;
  2) [[ $1 == --ci ]] || { echo "$usage" >&2; exit 2; }
     ci=true
     build=$(realpath "$2") &&
       [[ -x "$build/tinyformer" && -x "$build/tests/tinyformer_parity_tests" ]] ||
       { echo "x86-under-qemu: no tinyformer and tests/tinyformer_parity_tests in $2" >&2; exit 2; }
     grep -q 'TINYFORMER_NATIVE:BOOL=OFF' "$build/CMakeCache.txt" ||
       { echo "x86-under-qemu: $2 is not a portable build (TINYFORMER_NATIVE=OFF)" >&2; exit 2; } ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
[[ $(id -u) -eq 0 ]] || { echo "x86-under-qemu: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
[[ $(uname -m) == x86_64 ]] || { echo "x86-under-qemu: runs on an x86-64 machine" >&2; exit 2; }

checks="$PWD/build/x86-under-qemu/checks"
mkdir -p "$checks" "$debian_root_cache"
exec 9>"$root.lock"
# One run at a time uses the root; another (a second CI run on this machine) waits its turn.
flock -n 9 || { echo "x86-under-qemu: waiting for another run, which holds $root.lock" >&2; flock 9; }
trap 'debian_root_unmount "$root"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stage() { logged_stage "$checks" "$@"; }  # stage NAME COMMAND...: output in $checks/NAME.log

make_root() {
  if [[ ! -e "$root/.complete" ]]; then
    debian_root_remove "$root" || return 1  # a root left half-made by an interrupted run
    local tarball
    tarball=$(debian_root_pristine bookworm) || return 1
    debian_root_unpack "$tarball" "$root" || return 1
    touch "$root/.complete"
  fi
  if [[ ! -x "$root/usr/bin/qemu-x86_64" ]]; then
    debian_root_mount "$root" || return 1
    debian_root_run "$root" "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends qemu-user" || return 1
    debian_root_unmount "$root"
  fi
  emulate --cpu EPYC-Milan --version
}

# The root's qemu-x86_64 started by the root's loader with the root's libraries, so that it
# runs on any host release; the program it runs is this machine's, with this machine's
# libraries. OpenMP threads wait passively: a spinning thread costs the emulator dearly.
# qemu warns on stderr about CPU model features its translator lacks (pcid, x2apic, ...),
# none of which user programs see; those lines are dropped.
emulate() {
  local cpu=$2
  shift 2
  { OMP_WAIT_POLICY=PASSIVE "$root/lib64/ld-linux-x86-64.so.2" \
      --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu" \
      "$root/usr/bin/qemu-x86_64" -cpu "$cpu" "$@" 2>&1 1>&3 3>&- |
      grep -v "TCG doesn't support requested feature" >&2; } 3>&1
  return "${PIPESTATUS[0]}"
}

configure() {
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTINYFORMER_NATIVE=OFF -DCMAKE_UNITY_BUILD=ON
}
compile() {
  nice -n 10 cmake --build "$build" -j"$(nproc)" --target tinyformer tinyformer_parity_tests
}

# version CPU LEVEL ONEDNN_ISA TARGET: --version under CPU names all three.
version() {
  local out
  out=$(emulate --cpu "$1" "$build/tinyformer" --version) || return 1
  echo "$out"
  grep -q "this CPU has $2 " <<<"$out" || { echo "expected: this CPU has $2"; return 1; }
  grep -q "dispatching to $3 on this CPU" <<<"$out" || { echo "expected: oneDNN dispatching to $3"; return 1; }
  grep -q "own kernels (Highway) on $4," <<<"$out" || { echo "expected: own kernels on $4"; return 1; }
}

# The parity tests, less the one that reads /proc/cpuinfo: under qemu-user that file is the
# host's, which lists this machine's flags, not the emulated CPU's.
parity() {
  emulate --cpu "$1" "$build/tests/tinyformer_parity_tests" '[parity]' \
    '~the kernel targets on this CPU are the ones /proc/cpuinfo lists'
}

# bf16 CPU ONEDNN_ISA: refused before any step, exit 2, naming oneDNN's ISA.
bf16() {
  local code=0 error="$checks/bf16-$1.err"
  emulate --cpu "$1" "$build/tinyformer" train --config configs/lesson12.toml --set train.precision=bf16 \
    --out "$checks/bf16-refused" 2>"$error" || code=$?
  cat "$error"
  [[ $code -eq 2 ]] || { echo "expected exit 2, got $code"; return 1; }
  grep -q "instruction set on this CPU, $2, has no bf16" "$error" || { echo "expected the refusal to name $2"; return 1; }
  [[ ! -e "$checks/bf16-refused" ]] || { echo "a refused run left $checks/bf16-refused"; return 1; }
}

# A .safetensors file's tensors: the bytes after its header (an 8-byte little-endian length,
# then that much JSON). The headers differ: __metadata__.made_by records the CPU each run saw.
tensor_bytes() {
  local length
  length=$(od -An -t u8 -N 8 "$1" | tr -d ' ') || return 1
  tail -c +$((8 + length + 1)) "$1"
}

# train CPU TARGET ONEDNN_ISA: 2 steps of the lesson model under CPU, and the same on this
# machine with the stand-in's variables: their tensors must be the same bytes. Then greedy
# samples from each, compared.
train_args=(train --config configs/lesson12.toml --set train.steps=2 --set train.batch_size=2
            --set data.probes_path= --threads 2)
sample_args=(sample --prompt 小丁拿着 --max-new 12 --temperature 0 --threads 2)
train() {
  local emulated="$checks/emulated-$2" stand_in="$checks/stand-in-$2" file
  rm -rf "$emulated" "$stand_in" "$checks/bf16-refused"
  mkdir -p "$emulated" "$stand_in"
  emulate --cpu "$1" "$build/tinyformer" "${train_args[@]}" --out "$emulated/run" || return 1
  TINYFORMER_ISA=$2 ONEDNN_MAX_CPU_ISA=$3 "$build/tinyformer" "${train_args[@]}" --out "$stand_in/run" || return 1
  for file in model.safetensors train_state.safetensors; do
    cmp <(tensor_bytes "$emulated/run/$file") <(tensor_bytes "$stand_in/run/$file") || return 1
    echo "$file: the same tensor bytes under $1 as with the $2 stand-in"
  done
  emulate --cpu "$1" "$build/tinyformer" "${sample_args[@]}" --checkpoint "$emulated/run" >"$emulated/sample.txt" || return 1
  TINYFORMER_ISA=$2 ONEDNN_MAX_CPU_ISA=$3 "$build/tinyformer" "${sample_args[@]}" --checkpoint "$stand_in/run" \
    >"$stand_in/sample.txt" || return 1
  cmp "$emulated/sample.txt" "$stand_in/sample.txt" || return 1
  echo "sample: the same text under $1 as with the $2 stand-in: $(head -c 200 "$emulated/sample.txt")"
}

if $ci; then  # the dispatch and the tests; the bit-for-bit runs against the stand-ins are left
  # to full runs, as they compare two CPUs' oneDNN code paths that no release promises alike
  stage root make_root &&
    { stage version-zen3 version EPYC-Milan x86-64-v3 AVX2 avx2
      stage bf16-zen3 bf16 EPYC-Milan AVX2
      stage parity-zen3 parity EPYC-Milan
      stage version-westmere version Westmere x86-64-v2 SSE41 sse4
      stage bf16-westmere bf16 Westmere SSE41
      stage parity-westmere parity Westmere; }
else
  stage root make_root &&
    stage configure configure &&
    stage build compile &&
    { stage version-zen3 version EPYC-Milan x86-64-v3 AVX2 avx2
      stage gradcheck-zen3 emulate --cpu EPYC-Milan "$build/tinyformer" gradcheck
      stage parity-zen3 parity EPYC-Milan
      stage bf16-zen3 bf16 EPYC-Milan AVX2
      stage train-zen3 train EPYC-Milan avx2 AVX2
      stage version-westmere version Westmere x86-64-v2 SSE41 sse4
      stage parity-westmere parity Westmere
      stage bf16-westmere bf16 Westmere SSE41
      stage train-westmere train Westmere sse4 SSE41; }
fi

echo "x86-under-qemu (this machine's portable build, on emulated x86-64 CPUs):"
logged_stage_summary
if [[ $stage_status -ne 0 ]]; then
  echo "x86-under-qemu: FAILED" >&2
elif $ci; then
  echo "x86-under-qemu: on an emulated Zen 3 (AVX2) and Westmere (SSE4.2) the dispatch picks their kernels," \
    "and the parity tests pass"
else
  echo "x86-under-qemu: on an emulated Zen 3 (AVX2) and Westmere (SSE4.2) the dispatch picks their kernels," \
    "the tests pass, and the stand-ins' bits are the real dispatch's"
fi
exit $stage_status
