#!/usr/bin/env bash
# The README's two commands on a truly fresh Debian machine:
#   scripts/fresh-machine-check.sh [bookworm|trixie]     (default bookworm; needs root)
# Makes a new Debian root (debootstrap --variant=minbase from this machine's apt source; the
# pristine root is cached as a tarball in /var/cache/tinyformer/roots, each check unpacks a
# new copy), copies in a clone of HEAD (commit first: the work tree's changes are not in it),
# and runs scripts/demo.sh, then scripts/test.sh, inside it with /proc, /sys and /dev
# mounted. Nothing from this machine's installed packages can help: a missing install step
# fails here. Logs: build/fresh-machine-check/<release>/{demo,test}.log. Exits 0 only if
# both commands pass; says which failed otherwise. Run it after any change to dependencies
# or to the install scripts (scripts/install-deps.sh, demo.sh, test.sh, CMakeLists.txt).
#   scripts/fresh-machine-check.sh --demo [bookworm|trixie]
# runs scripts/demo.sh alone (about 10 minutes, against an hour with test.sh's sanitizer
# builds and fuzzing): enough for a change to what the build needs, when test.sh's own extra
# packages (--packaging, --ccache, --fuzz, --browser) are untouched.
#   scripts/fresh-machine-check.sh --deb FILE.deb [bookworm|trixie]
# instead installs the .deb (scripts/package-deb.sh) on the fresh root as a user would, with
# `apt-get install ./FILE.deb` and nothing else from this tree, then trains the lesson from
# the installed example config, samples from it (and from Python: `import tinyformer`, with
# the python3 and numpy the package recommends) and opens `man tinyformer`
# (log: build/fresh-machine-check/<release>/deb.log).
set -uo pipefail
cd "$(dirname "$0")/.."
deb=""
demo_only=false
if [[ "${1:-}" == "--demo" ]]; then
  demo_only=true
  shift
elif [[ "${1:-}" == "--deb" ]]; then
  deb=$(realpath -e "${2:-}" 2>/dev/null) || { echo "fresh-machine-check: --deb needs an existing .deb file" >&2; exit 2; }
  shift 2
fi
release=${1:-bookworm}
case "$release" in
  bookworm | trixie) ;;
  *) echo "usage: scripts/fresh-machine-check.sh [--demo | --deb FILE.deb] [bookworm|trixie] (Debian 12 or 13)" >&2; exit 2 ;;
esac
[[ $(id -u) -eq 0 ]] || { echo "fresh-machine-check: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
source scripts/lib/debian-root.sh

logs="$PWD/build/fresh-machine-check/$release"
mkdir -p "$logs"
tarball=$(debian_root_pristine "$release") || { echo "fresh-machine-check: could not make a $release root" >&2; exit 1; }
root=$(mktemp -d "/var/tmp/tinyformer-fresh-$release.XXXXXX")
cleanup() {
  debian_root_remove "$root" || echo "fresh-machine-check: $root is left behind (still mounted)" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

debian_root_unpack "$tarball" "$root" || { echo "fresh-machine-check: unpacking $tarball failed" >&2; exit 1; }
debian_root_mount "$root" || { echo "fresh-machine-check: mounting /proc, /sys, /dev failed" >&2; exit 1; }

if [[ -n "$deb" ]]; then
  # The package alone: no clone of the tree, no build tools. man-db is what gives `man`.
  cp "$deb" "$root/root/"
  name=$(basename "$deb")
  echo "fresh-machine-check: Debian $release ($(cat "$root/etc/debian_version")), a minbase root in $root, $name"
  debian_root_run "$root" "set -ex
    cd /root
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./$name man-db
    command -v tinyformer
    tinyformer --version
    cd /tmp
    tinyformer train --config /usr/share/tinyformer/configs/lesson12.toml --out /tmp/run
    tinyformer sample --checkpoint /tmp/run --prompt '小丁拿着红色的苹果。' --max-new 40 --seed 1
    tinyformer eval --checkpoint /tmp/run | head -n 6
    python3 -c \"import tinyformer; m = tinyformer.load('/tmp/run'); print(m); print(m.sample('小丁', max_new=20, seed=1))\"
    MANWIDTH=90 man tinyformer | head -n 30
    man -w tinyformer
    ls /usr/share/bash-completion/completions/tinyformer /usr/share/zsh/vendor-completions/_tinyformer
    tinyformer sampel 2>&1 | head -n 1 || true" >"$logs/deb.log" 2>&1
  code=$?
  cat "$logs/deb.log"
  if [[ $code -eq 0 ]]; then
    echo "fresh-machine-check ($release): $name installs with apt-get, trains the lesson, imports in python3 and shows its man page"
  else
    echo "fresh-machine-check ($release): the .deb check FAILED with exit $code (log: $logs/deb.log)" >&2
  fi
  exit $code
fi
git clone -q . "$root/root/tinyformer" || { echo "fresh-machine-check: git clone failed" >&2; exit 1; }
# The network, not the machine: where this machine reaches the internet through a proxy that
# re-signs TLS with its own authority (installed here in /usr/local/share/ca-certificates),
# npm inside the root must trust that authority too, or the registry is unreachable. Only
# the certificate goes in (for node, through NODE_EXTRA_CA_CERTS), no package.
node_ca=""
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cat /usr/local/share/ca-certificates/*.crt >"$root/root/network-ca.crt"
  node_ca="NODE_EXTRA_CA_CERTS=/root/network-ca.crt "
fi
echo "fresh-machine-check: Debian $release ($(cat "$root/etc/debian_version")), a minbase root in $root," \
     "tinyformer $(git rev-parse --short HEAD)"

results=()
status=0
run_command() {  # run_command NAME: scripts/NAME.sh inside the root, its log in $logs/NAME.log
  local name=$1 started code
  started=$(date +%s)
  echo "== $release: scripts/$name.sh (log: $logs/$name.log)"
  debian_root_run "$root" "cd /root/tinyformer && ${node_ca}scripts/$name.sh" >"$logs/$name.log" 2>&1
  code=$?
  tail -n 12 "$logs/$name.log" | sed 's/^/    /'
  if [[ $code -eq 0 ]]; then
    results+=("scripts/$name.sh passed ($(($(date +%s) - started)) s)")
  else
    results+=("scripts/$name.sh FAILED with exit $code ($(($(date +%s) - started)) s; see $logs/$name.log)")
    status=1
  fi
}
run_command demo
$demo_only || run_command test
echo "fresh-machine-check ($release):"
printf '  %s\n' "${results[@]}"
if [[ $status -ne 0 ]]; then
  echo "fresh-machine-check ($release): FAILED" >&2
elif $demo_only; then
  echo "fresh-machine-check ($release): scripts/demo.sh passes on a fresh Debian $release (test.sh not run: --demo)"
else
  echo "fresh-machine-check ($release): both README commands pass on a fresh Debian $release"
fi
exit $status
