# Debian roots made with debootstrap, for checking tinyformer on a release as a fresh
# machine has it. Sourced by scripts/fresh-machine-check.sh and .ci/run; needs root.
#   debian_root_pristine RELEASE        prints the path of a cached minbase tarball of RELEASE,
#                                       made with debootstrap on first use
#   debian_root_unpack TARBALL DIR      a new root in DIR from that tarball
#   debian_root_mount DIR / debian_root_unmount DIR
#                                       /proc, /sys and /dev inside DIR (unmount is safe to repeat)
#   debian_root_run DIR COMMAND...      runs COMMAND (a bash command line) as root inside DIR,
#                                       with a clean environment
#   debian_root_remove DIR              unmounts, then deletes DIR (refuses if anything stays mounted)

debian_root_cache=${TINYFORMER_ROOT_CACHE:-/var/cache/tinyformer/roots}

# The Debian mirror this machine's apt uses (deb822 "URIs:" or one-line "deb URL suite"),
# so a root is made from the same source as the machine's own packages.
debian_root_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
        grep -oE '(URIs:[[:space:]]*|^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?)https?://[^[:space:]]+/debian/?([[:space:]]|$)' |
        grep -oE 'https?://[^[:space:]]+' | head -n 1)
  echo "${uri:-http://deb.debian.org/debian}"
}

debian_root_pristine() {
  local release=$1 tarball="$debian_root_cache/$1-minbase.tar"
  if [[ ! -s "$tarball" ]]; then
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2 \
      || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2; } || return 1
    local mirror work
    mirror=$(debian_root_mirror)
    mkdir -p "$debian_root_cache"
    work=$(mktemp -d "$debian_root_cache/.debootstrap-$release.XXXXXX")
    echo "debian-root: debootstrap --variant=minbase $release from $mirror (cached in $tarball)" >&2
    if ! debootstrap --variant=minbase "$release" "$work" "$mirror" >"$work.log" 2>&1; then
      tail -n 20 "$work.log" >&2
      rm -rf --one-file-system "$work" "$work.log"
      return 1
    fi
    tar -C "$work" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf --one-file-system "$work" "$work.log"
  fi
  echo "$tarball"
}

debian_root_unpack() {
  local tarball=$1 dir=$2
  mkdir -p "$dir" && tar -C "$dir" -xf "$tarball" || return 1
  cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true  # name lookups, as on any networked machine
}

debian_root_mount() {
  local dir=$1
  mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc" || return 1
  mountpoint -q "$dir/sys" || mount --bind /sys "$dir/sys" || return 1
  mountpoint -q "$dir/dev" || mount --bind /dev "$dir/dev" || return 1
  mountpoint -q "$dir/dev/pts" || mount --bind /dev/pts "$dir/dev/pts" || return 1
}

debian_root_unmount() {
  local dir=$1 m
  for m in dev/pts dev sys proc; do
    if mountpoint -q "$dir/$m"; then umount "$dir/$m" 2>/dev/null || umount -l "$dir/$m"; fi
  done
}

debian_root_run() {
  local dir=$1; shift
  chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$*"
}

debian_root_remove() {
  local dir=$1
  [[ -d "$dir" ]] || return 0
  debian_root_unmount "$dir"
  if findmnt -rn -o TARGET | grep -q "^$(realpath "$dir")/"; then
    echo "debian-root: something is still mounted under $dir; not deleting it" >&2
    return 1
  fi
  rm -rf --one-file-system "$dir"
}
