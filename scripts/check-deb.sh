#!/usr/bin/env bash
# Checks a tinyformer .deb without installing it:
#   scripts/check-deb.sh build-deb/tinyformer_0.1.0_amd64.deb
# - its Depends: names the Debian package of every shared library the binary links, found
#   independently here (objdump's NEEDED entries, resolved with ldconfig, owned per dpkg -S);
# - its files: the binary, the man page (rendered by man without a warning), the bash and zsh
#   completions, the lesson's configs and corpus under /usr/share/tinyformer, and the licence
#   (LICENSE and Debian's copyright file, naming the licence --version states), the Python
#   module for this Debian's python3;
# - the binary is portable (built without -march=native) and names no path of the build machine.
set -uo pipefail
deb=${1:?usage: scripts/check-deb.sh FILE.deb}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
dpkg-deb -x "$deb" "$tree" || { echo "FAIL: dpkg-deb -x $deb"; exit 1; }
info=$(dpkg-deb --info "$deb")
echo "$info" | sed -n '/Package:/,$p' | sed 's/^/    /'

depends=$(dpkg-deb --field "$deb" Depends)
[[ -n "$depends" ]] && pass "Depends: $depends" || fail "the package has no Depends"
binary="$tree/usr/bin/tinyformer"
[[ -x "$binary" ]] && pass "/usr/bin/tinyformer" || fail "no /usr/bin/tinyformer in the package"
# Every library the binary links, by its owner package on this machine.
linked=$(objdump -p "$binary" | awk '$1 == "NEEDED" {print $2}')
for library in $linked; do
  path=$(ldconfig -p | awk -v lib="$library" '$1 == lib && /x86-64/ {print $NF; exit}')
  owner=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
  [[ -z "$owner" ]] && owner=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
  if [[ -z "$owner" ]]; then fail "$library ($path): no Debian package owns it"; continue; fi
  # The dependency may name the owner or a name it provides (Debian 12's libspdlog1.10
  # provides libspdlog1.10-fmt9, the name its shlibs file gives).
  names="$owner $(dpkg-query -W -f='${Provides}' "$owner" 2>/dev/null | tr -d ',' | sed 's/([^)]*)//g')"
  found=""
  for name in $names; do
    [[ ", $depends," == *", $name "* || ", $depends," == *", $name,"* ]] && found=$name
  done
  [[ -n "$found" ]] && pass "links $library (in $owner) → depends on $found" \
    || fail "links $library (package $owner), which Depends does not name"
done

for file in usr/share/man/man1/tinyformer.1.gz usr/share/bash-completion/completions/tinyformer \
            usr/share/zsh/vendor-completions/_tinyformer usr/share/tinyformer/configs/lesson12.toml \
            usr/share/tinyformer/corpus/lesson_train.txt usr/share/tinyformer/corpus/lesson_val.txt \
            usr/share/tinyformer/corpus/lesson_probes.tsv usr/share/doc/tinyformer/copyright \
            usr/share/doc/tinyformer/LICENSE; do
  [[ -s "$tree/$file" ]] && pass "/$file" || fail "no /$file in the package"
done
if [[ -s "$tree/usr/share/man/man1/tinyformer.1.gz" ]]; then
  warnings=$(LANG=C.UTF-8 MANWIDTH=80 man --warnings -l "$tree/usr/share/man/man1/tinyformer.1.gz" 2>&1 >/dev/null)
  [[ -z "$warnings" ]] && pass "the man page renders without warnings" || fail "man warns: $warnings"
fi
# Debian's copyright file names the licence the binary states, and carries its text.
copyright="$tree/usr/share/doc/tinyformer/copyright"
if [[ -s "$copyright" ]]; then
  spdx=$("$binary" --version 2>/dev/null | sed -n 's/^licence: \([^ ]*\) .*/\1/p')
  [[ -n "$spdx" ]] && grep -qx "License: $spdx" "$copyright" && grep -q "^ Permission is hereby granted" "$copyright" \
    && pass "copyright: License: $spdx, with its text, as --version says" \
    || fail "copyright does not carry the licence --version names ('$spdx')"
fi
# -march=native would let the compiler use this CPU's instructions anywhere in the binary.
version=$("$binary" --version 2>&1)
[[ "$version" == *"portable"* ]] && pass "built portable: $(grep -m1 "^built with" <<<"$version"); $(grep -m1 "^own kernels" <<<"$version")" \
  || fail "the packaged binary is not a portable build: $version"
build_paths=$(strings "$binary" | grep -c -F "$(cd "$(dirname "$0")/.." && pwd)" || true)
[[ $build_paths -eq 0 ]] && pass "the binary names no path of the source tree" \
  || fail "the binary holds $build_paths strings naming the source tree"

# The Python module (docs/python.md), for this Debian's python3, which it recommends with numpy.
module=$(find "$tree/usr/lib/python3/dist-packages" -name 'tinyformer.cpython-*.so' 2>/dev/null | head -1)
if [[ -n $module ]]; then
  pass "/${module#"$tree"/}"
  recommends=$(dpkg-deb --field "$deb" Recommends)
  [[ $recommends == *python3-numpy* && $recommends == *"python3 (>="* ]] && pass "Recommends: $recommends" \
    || fail "the module's package recommends '$recommends', expected python3 of its version and python3-numpy"
  abi=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
  [[ -z $abi || $module == *"$abi" ]] && pass "built for this python3 ($abi)" || fail "$module is not for this python3 ($abi)"
else
  fail "no tinyformer Python module in /usr/lib/python3/dist-packages (built without pybind11-dev?)"
fi
if [[ $failures -eq 0 ]]; then echo "check-deb: $deb passed"; exit 0; else echo "check-deb: $failures failed"; exit 1; fi
