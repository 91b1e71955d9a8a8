#!/usr/bin/env bash
# Installs the Debian packages tinyformer needs, if any are missing (with --fuzz, clang and
# the runtimes that scripts/fuzz.sh and the ASan+UBSan suite need; with --browser, those of
# the explorer's browser test; with --packaging, those that build and check the .deb, the
# man page and the completions; with --ccache, the compiler cache scripts/test.sh builds
# through), on Debian 12 (bookworm) or 13 (trixie); without recommends, so that what is
# installed is exactly what is listed. Runs `apt-get update` only when an install cannot
# find a package without it (a fresh machine has no package lists yet).
set -euo pipefail

# The same names on both releases: Catch2 is v2 on Debian 12 and v3 on 13, oneDNN 2.6 and
# 3.7, Highway 1.0 and 1.2; the build takes either (tests/catch.hpp,
# src/engine/backends/onednn_compat.hpp, src/engine/kernel_targets.cpp). Open MPI (4.1 and
# 5.0) for `mpirun -np N tinyformer train` (docs/distributed.md). pybind11 and numpy for
# `import tinyformer` (docs/python.md), pytest for its tests.
packages=(cmake make g++ libdnnl-dev libhwy-dev libeigen3-dev libspdlog-dev libcli11-dev catch2
          libtomlplusplus-dev nlohmann-json3-dev libcpp-httplib-dev pkgconf libxml2-utils curl help2man
          libopenmpi-dev openmpi-bin iproute2 pybind11-dev python3-dev python3-numpy python3-pytest)
fuzz=false
for option in "$@"; do
  case "$option" in
    --fuzz) fuzz=true; packages+=(clang) ;;  # libFuzzer's runtime and OpenMP's follow below, for this clang
    # The explorer's browser test: npm's puppeteer-core drives Debian's chromium; a CJK font
    # so that its screenshots show the Chinese characters. Node and npm are installed only if
    # the commands are missing: a machine may have another build of Node whose package brings
    # npm itself (NodeSource's nodejs conflicts with Debian's npm).
    --browser)
      packages+=(chromium fonts-wqy-microhei)
      command -v node >/dev/null || packages+=(nodejs)
      command -v npm >/dev/null || packages+=(npm) ;;
    # dpkg-shlibdeps (dpkg-dev) finds the .deb's dependencies, on the files CPack's DEB
    # generator picks out with `file`; man renders the man page and zsh runs the zsh
    # completion in the tests (objdump and strings come with g++'s binutils).
    --packaging) packages+=(dpkg-dev file man-db zsh) ;;
    # scripts/test.sh compiles through ccache, whose cache a later run on the machine reuses.
    --ccache) packages+=(ccache) ;;
    *) echo "install-deps.sh: unknown option $option (expected --fuzz, --browser, --packaging or --ccache)" >&2; exit 2 ;;
  esac
done

sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

install_missing() {  # install_missing PACKAGE...: those not installed yet
  local p status missing=()
  for p in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "installing missing Debian packages: ${missing[*]}"
  if ! $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    $sudo apt-get update -q
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

install_missing "${packages[@]}"
if $fuzz; then
  # clang's libFuzzer and OpenMP come in packages named after its major version: 14 on
  # Debian 12, 19 on Debian 13.
  clang_major=$(clang -dumpversion | cut -d. -f1)
  install_missing "libclang-rt-$clang_major-dev" "libomp-$clang_major-dev"
fi
