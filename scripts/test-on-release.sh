#!/usr/bin/env bash
# The Release suite on another Debian release, in a root of its own (CI runs it for Debian 13):
#   scripts/test-on-release.sh [trixie]      (needs root)
# The root is made once with debootstrap (minbase, from this machine's apt source) and kept in
# /var/cache/tinyformer/roots/<release>-ci with the packages installed into it, so later runs
# only build and test. A clone of HEAD goes in, and `scripts/test.sh --release` runs there.
# If Debian's package registry cannot be reached, the step prints one line saying it was
# skipped and why, and exits 0; a failure to build or test exits 1.
# With STAGES_FILE set (.ci/run), its stages and their seconds are appended there, each
# named "Debian 13: ...": making or updating the root, then those of test.sh inside it.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
release=${1:-trixie}
[[ $(id -u) -eq 0 ]] || { echo "test-on-release: skipped: needs root (debootstrap, chroot, mount)"; exit 0; }
source scripts/lib/debian-root.sh
root="$debian_root_cache/$release-ci"
lock="$debian_root_cache/$release-ci.lock"
mkdir -p "$debian_root_cache"
exec 9>"$lock"
flock 9  # one user of the cached root at a time
cleanup() { debian_root_unmount "$root"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

skip() { echo "test-on-release: Debian $release step skipped: $*"; exit 0; }
if [[ ! -x "$root/bin/bash" ]]; then
  debian_root_remove "$root" || exit 1
  tarball=$(debian_root_pristine "$release" 2>"$debian_root_cache/$release-ci.err") ||
    skip "could not make the root with debootstrap ($(tail -n 1 "$debian_root_cache/$release-ci.err"))"
  debian_root_unpack "$tarball" "$root" || exit 1
fi
debian_root_mount "$root" || exit 1
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# The registry must answer before a failed install can mean a broken install step.
debian_root_run "$root" "timeout 300 apt-get update -q" >"$debian_root_cache/$release-ci.err" 2>&1 &&
  ! grep -qE '^(Err|W: Failed)' "$debian_root_cache/$release-ci.err" ||
  skip "Debian's package registry cannot be reached from the root ($(grep -E '^(Err|W|E):' "$debian_root_cache/$release-ci.err" | head -n 1))"

rm -rf --one-file-system "$root/root/tinyformer"
git clone -q . "$root/root/tinyformer" || exit 1
release_name="Debian $(cut -d. -f1 "$root/etc/debian_version")"
[[ -n "${STAGES_FILE:-}" ]] &&
  printf '%s: root made or updated, clone\t%s\tok\n' "$release_name" "$(($(date +%s) - started))" >>"$STAGES_FILE"
echo "== Debian $release ($(cat "$root/etc/debian_version")): scripts/test.sh --release in $root, tinyformer $(git rev-parse --short HEAD)"
debian_root_run "$root" "cd /root/tinyformer && scripts/test.sh --release"
code=$?
[[ -n "${STAGES_FILE:-}" ]] && sed "s/^/$release_name: /" "$root/root/tinyformer/build/stages.tsv" >>"$STAGES_FILE"
exit $code
