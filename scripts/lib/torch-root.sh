#!/usr/bin/env bash
# A Debian 13 root with PyTorch 2.x, the speed yardstick of scripts/bench_vs_torch.py
# (--torch root): python3-torch with OpenBLAS (libopenblas0-openmp: without it PyTorch falls
# back to the reference BLAS, many times slower), and g++, libtorch-dev and
# python3-setuptools, which torch.compile needs to build its kernels. A developer's tool, as PyTorch is: the project
# itself never needs it. Needs root.
#
#   scripts/lib/torch-root.sh            makes the root if it is not there (minutes: about
#                                        1 GB of packages), mounts /proc, /sys and /dev in
#                                        it, and prints its path
#   scripts/lib/torch-root.sh --remove   unmounts and deletes it
#
# The root is made from scripts/lib/debian-root.sh's cached trixie minbase and kept in
# $TINYFORMER_ROOT_CACHE (default /var/cache/tinyformer/roots)/trixie-torch for later runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=debian-root.sh
source "$here/debian-root.sh"
root="$debian_root_cache/trixie-torch"
packages="python3-torch python3-numpy libopenblas0-openmp libtorch-dev g++ python3-setuptools"

if [[ ${1:-} == --remove ]]; then
  debian_root_remove "$root"
  exit
fi
[[ $(id -u) -eq 0 ]] || { echo "torch-root: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
if [[ ! -e "$root/.complete" ]]; then
  debian_root_remove "$root"  # a root left half-made by an interrupted run
  tarball=$(debian_root_pristine trixie)
  echo "torch-root: making $root from $tarball" >&2
  debian_root_unpack "$tarball" "$root"
  touch "$root/.complete"
fi
debian_root_mount "$root"
# The packages, installed where missing (a root made when the list was shorter gets the rest).
missing=$(debian_root_run "$root" "for p in $packages; do dpkg-query -W -f='\${db:Status-Status}' \$p 2>/dev/null |
  grep -qx installed || echo \$p; done")
if [[ -n "$missing" ]]; then
  echo "torch-root: installing in $root:" $missing >&2
  debian_root_run "$root" "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends $(echo $missing)" >"$root.log" 2>&1 ||
    { tail -n 20 "$root.log" >&2; echo "torch-root: installing $missing failed (log: $root.log)" >&2; exit 1; }
fi
echo "$root"
