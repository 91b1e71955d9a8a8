#!/usr/bin/env bash
# Fetches Tiny Shakespeare, the public-domain text of configs/shakespeare_char.toml (Andrej
# Karpathy's char-rnn corpus: 1,115,394 bytes of Shakespeare's plays), and checks that it is
# byte for byte the text the project's measurements were made on.
#
#   scripts/get-shakespeare.sh [FILE]      FILE: default data/tinyshakespeare.txt in this repository
#
# then train on it from the repository's folder:
#   build/tinyformer train --config configs/shakespeare_char.toml --set data.path=data/tinyshakespeare.txt
#
# A FILE that is already there with the right SHA-256 is kept, with no download. Otherwise
# the text goes to a temporary file beside FILE and is renamed onto FILE only once its
# SHA-256 is right, so FILE is never half written. Downloads with curl, else wget.
# TINYFORMER_SHAKESPEARE_URL replaces the source (a mirror, or a file:// URL for curl).
# Exit status: 0 FILE holds the text; 1 no download (no network, no curl or wget, or the
# SHA-256 differs; one line says which); 2 wrong usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
url=${TINYFORMER_SHAKESPEARE_URL:-https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt}
sha256=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed  # of the 1,115,394 bytes

usage="usage: scripts/get-shakespeare.sh [FILE]  (default: $root/data/tinyshakespeare.txt)"
fail() { echo "get-shakespeare: $*" >&2; exit 1; }
case ${1:-} in
  -h|--help) echo "$usage"; exit 0 ;;
  -*) echo "get-shakespeare: unknown option $1; $usage" >&2; exit 2 ;;
esac
[[ $# -le 1 ]] || { echo "get-shakespeare: one FILE at most; $usage" >&2; exit 2; }
target=${1:-$root/data/tinyshakespeare.txt}
[[ -n "$target" && ! -d "$target" ]] || { echo "get-shakespeare: '$target' is a folder, not a file; $usage" >&2; exit 2; }

sha256_of() { sha256sum "$1" | cut -d ' ' -f 1; }

if [[ -e "$target" ]]; then
  [[ $(sha256_of "$target") == "$sha256" ]] ||
    fail "$target is there but is not Tiny Shakespeare (its SHA-256 differs): move it away or give another FILE"
  echo "get-shakespeare: $target is already there (SHA-256 checked)"
  exit 0
fi

folder=$(dirname "$target")
# The highest folder this run makes, if any: the folders it made are removed again, from
# the file's up, when nothing was written into them.
made="" dir=$folder
while [[ ! -d "$dir" ]]; do made=$dir; dir=$(dirname "$dir"); done
unmake() {
  [[ -n $made ]] || return 0
  local dir=$folder
  while rmdir "$dir" 2>/dev/null && [[ $dir != "$made" ]]; do dir=$(dirname "$dir"); done
}
mkdir -p "$folder" 2>/dev/null || fail "cannot make the folder $folder"
partial=$(mktemp "$folder/.$(basename "$target").partial.XXXXXX" 2>/dev/null) || fail "cannot write in $folder"
trap 'rm -f "$partial"; unmake' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if command -v curl >/dev/null; then
  error=$(curl --fail --silent --show-error --location --connect-timeout 20 --max-time 300 --retry 2 \
    --output "$partial" "$url" 2>&1) ||
    fail "could not download $url (${error##*$'\n'}): no network? Copy the file to $target by hand"
elif command -v wget >/dev/null; then
  error=$(wget --quiet --timeout=20 --tries=3 --output-document="$partial" "$url" 2>&1) ||
    { status=$?; case $status in 4) why="a network failure" ;; 8) why="the server refused" ;; *) why="exit status $status" ;; esac
      fail "could not download $url (wget: ${error:-$why}): no network? Copy the file to $target by hand"; }
else
  fail "needs curl or wget to download: apt-get install -y curl"
fi

got=$(sha256_of "$partial")
[[ $got == "$sha256" ]] ||
  fail "$url gave $(stat -c %s "$partial") bytes whose SHA-256 is $got, not Tiny Shakespeare's $sha256: $target not written"
chmod 644 "$partial"
mv -f "$partial" "$target"
echo "get-shakespeare: wrote $target ($(stat -c %s "$target") bytes, SHA-256 checked)"
