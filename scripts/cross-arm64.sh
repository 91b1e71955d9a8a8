#!/usr/bin/env bash
# tinyformer on 64-bit Arm, from an amd64 Debian machine: cross-compiled with Debian's
# g++-aarch64-linux-gnu against Debian's arm64 libraries, run under qemu-user.
#   scripts/cross-arm64.sh            (needs root: debootstrap, chroot, mount)
# Nothing is installed on this machine: the cross compiler, qemu-user and the arm64
# libraries (dpkg --add-architecture arm64) go into a Debian 12 root made with
# scripts/lib/debian-root.sh and kept in $TINYFORMER_ROOT_CACHE (default
# /var/cache/tinyformer/roots)/bookworm-cross-arm64, with its build tree, for later runs.
# The source is HEAD (commit first: the work tree's changes are not in it), cloned into the
# root and brought to the new HEAD by later runs, so that they rebuild only what changed.
# Stages: the root and its packages, the source, cmake with cmake/aarch64-linux-gnu.cmake
# (portable: -DTINYFORMER_NATIVE=OFF), building tinyformer and tinyformer_parity_tests, then
# under qemu-aarch64: `tinyformer --version`, `tinyformer gradcheck` and the parity tests
# ([parity]), on qemu's default CPU (SVE) and again on a NEON-only one.
# Prints each stage's seconds; exits non-zero if any stage fails (logs: build/cross-arm64/).
#   scripts/cross-arm64.sh --remove   unmounts and deletes the cached root
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/lib/debian-root.sh
source scripts/lib/debian-root.sh
# shellcheck source=scripts/lib/logged-stages.sh
source scripts/lib/logged-stages.sh
root="$debian_root_cache/bookworm-cross-arm64"
if [[ ${1:-} == --remove ]]; then
  debian_root_remove "$root"
  exit
fi
full=false
case "${1:-}" in
  "") ;;
  --full) full=true ;;
  *) echo "usage: scripts/cross-arm64.sh [--full | --remove]" >&2; exit 2 ;;
esac
[[ $# -le 1 ]] || { echo "usage: scripts/cross-arm64.sh [--full | --remove]" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "cross-arm64: needs root (debootstrap, chroot, mount)" >&2; exit 2; }

# Build machine's tools (native) and the project's dependencies for arm64: those with
# libraries as :arm64, the architecture-independent ones (Eigen, CLI11, nlohmann-json) and
# Catch2 (Multi-Arch: foreign, headers and CMake files only) as they are; the tools the
# command-line tests call (xmllint, curl, zsh, man).
packages="crossbuild-essential-arm64 cmake make qemu-user git help2man pkgconf ca-certificates libxml2-utils curl zsh man-db
  catch2 libeigen3-dev libcli11-dev nlohmann-json3-dev
  libdnnl-dev:arm64 libhwy-dev:arm64 libspdlog-dev:arm64 libfmt-dev:arm64 libtomlplusplus-dev:arm64
  libcpp-httplib-dev:arm64 libssl-dev:arm64"
logs="$PWD/build/cross-arm64"
mkdir -p "$logs" "$debian_root_cache"
exec 9>"$root.lock"
flock -n 9 || { echo "cross-arm64: another run holds $root.lock" >&2; exit 1; }
# qemu-aarch64 as the kernel's runner of aarch64 programs (binfmt_misc), by the path inside
# the root (no F flag: the path is looked up when a program starts, so outside the root an
# aarch64 program still fails to start, as before). The magic and mask are qemu's own
# (scripts/qemu-binfmt-conf.sh in its source): an ELF64 little-endian executable or shared
# object for machine 183, aarch64.
binfmt=/proc/sys/fs/binfmt_misc
binfmt_entry=$binfmt/tinyformer-aarch64
register_qemu() {
  mountpoint -q $binfmt || mount -t binfmt_misc binfmt_misc $binfmt || return 1
  [[ -e $binfmt_entry ]] && echo -1 >$binfmt_entry
  printf '%s' ':tinyformer-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64:' \
    >$binfmt/register || return 1
  in_root "/root/build-arm64/tinyformer --version | head -n 2"
}
unregister_qemu() { [[ -e $binfmt_entry ]] && echo -1 >$binfmt_entry; true; }
trap 'unregister_qemu; debian_root_unmount "$root"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stage() { logged_stage "$logs" "$@"; }  # stage NAME COMMAND...: output in $logs/NAME.log
in_root() { debian_root_run "$root" "$@"; }

make_root() {
  if [[ ! -e "$root/.complete" ]]; then
    debian_root_remove "$root" || return 1  # a root left half-made by an interrupted run
    local tarball
    tarball=$(debian_root_pristine bookworm) || return 1
    echo "making $root from $tarball"
    debian_root_unpack "$tarball" "$root" || return 1
    touch "$root/.complete"
  fi
  debian_root_mount "$root" || return 1
  in_root "dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64" || return 1
  local missing
  missing=$(in_root "for p in $(echo $packages); do dpkg-query -W -f='\${db:Status-Status}' \$p 2>/dev/null |
    grep -qx installed || echo \$p; done")
  if [[ -n "$missing" ]]; then
    echo "installing:" $missing
    in_root "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends $(echo $missing)" || return 1
  else
    echo "all packages installed"
  fi
  in_root "aarch64-linux-gnu-g++ --version | head -n 1; qemu-aarch64 --version | head -n 1;
    dpkg-query -W -f='\${Package}:\${Architecture} \${Version}\n' libdnnl-dev:arm64 libhwy-dev:arm64"
}

# HEAD, cloned into the root; a later run moves the clone to the new HEAD (files that did not
# change keep their times, so make rebuilds only what did).
src="$root/root/tinyformer"
get_source() {
  local head
  head=$(git rev-parse HEAD) || return 1
  if [[ ! -d "$src/.git" ]]; then
    rm -rf --one-file-system "$src"
    git clone -q --no-checkout . "$src" || return 1
  fi
  git -C "$src" fetch -q "$PWD" HEAD && git -C "$src" checkout -q -f --detach "$head" &&
    git -C "$src" clean -q -f -d -x && git -C "$src" log -1 --format='%h %s'
}

# Unity batches, as scripts/test.sh builds (about half the compile time).
configure() {
  in_root "cd /root/tinyformer && cmake -S . -B /root/build-arm64 -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DTINYFORMER_NATIVE=OFF -DCMAKE_UNITY_BUILD=ON"
}
build() {
  in_root "nice -n 10 cmake --build /root/build-arm64 -j$(nproc) --target tinyformer tinyformer_parity_tests"
}
build_all() {  # the rest of `all`: the test programs, the fuzz replays, the man page, the completions
  in_root "nice -n 10 cmake --build /root/build-arm64 -j$(nproc)"
}
# The whole suite as scripts/test.sh runs it, on the NEON-only CPU (QEMU_CPU is read by a
# qemu-aarch64 that binfmt_misc starts). Its 30-minute timeout per test leaves room for
# emulation, which is slow on float work: cli.test_sweep takes 5-10 s on the host, 712 s here.
ctest_neon() {
  in_root "cd /root/build-arm64 && QEMU_CPU=max,sve=off ctest -j$(nproc) --timeout 1800 --output-on-failure"
}
# qemu [--cpu MODEL] COMMAND...: under qemu-aarch64, with passive OpenMP waiting as in the
# test suite (tests/CMakeLists.txt). qemu's default CPU ("max") has SVE and SVE2 with 512-bit
# vectors, on which oneDNN runs its SVE code (jit:sve_512); "max,sve=off" is a NEON-only
# CPU (as Graviton 2, Ampere Altra, Raspberry Pi 4 and 5), on which oneDNN runs its
# reference and gemm code.
qemu() {
  local cpu=max
  [[ $1 == --cpu ]] && { cpu=$2; shift 2; }
  in_root "cd /root/build-arm64 && OMP_WAIT_POLICY=PASSIVE qemu-aarch64 -cpu $cpu $(printf '%q ' "$@")"
}

stage root make_root &&
  stage source get_source &&
  stage configure configure &&
  stage build build &&
  { stage version qemu ./tinyformer --version
    stage gradcheck qemu ./tinyformer gradcheck
    stage parity-sve qemu ./tests/tinyformer_parity_tests '[parity]'
    stage version-neon qemu --cpu max,sve=off ./tinyformer --version
    stage parity-neon qemu --cpu max,sve=off ./tests/tinyformer_parity_tests '[parity]'; } &&
  if $full; then
    stage binfmt register_qemu &&
      stage build-all build_all &&
      stage ctest-neon ctest_neon
  fi

echo "cross-arm64 (aarch64 under qemu-user):"
logged_stage_summary
if [[ $stage_status -ne 0 ]]; then
  echo "cross-arm64: FAILED" >&2
else
  if $full; then
    echo "cross-arm64: tinyformer builds for arm64, and its whole test suite passes under qemu"
  else
    echo "cross-arm64: tinyformer builds for arm64, and its gradcheck and parity tests pass under qemu"
  fi
fi
exit $stage_status
