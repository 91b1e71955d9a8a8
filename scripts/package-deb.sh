#!/usr/bin/env bash
# Builds the .deb: tinyformer, its man page, bash and zsh completions, the lesson's
# examples and the Python module, installed under /usr.
#   scripts/package-deb.sh [BUILD_DIR]      (default build-deb; prints the .deb's path last)
# The binary is built portable (TINYFORMER_NATIVE=OFF: no -march=native), so the package runs
# on any amd64 machine of this Debian release; oneDNN still picks the best instruction set
# at run time. Its dependencies come from dpkg-shlibdeps: the Debian packages of the shared
# libraries the binary links. A .deb built on Debian 12 installs on Debian 12, one built on
# Debian 13 on 13 (their library packages differ). As a Debian package build runs its tests,
# this runs the backend's parity tests on the portable build before packaging it: its
# kernels take other code paths than a -march=native build's (attention_blocks.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-deb}
scripts/install-deps.sh --packaging >&2
mkdir -p "$dir"
# Only what is packaged and the parity tests' one file are built (not the whole suite):
# CMAKE_SKIP_INSTALL_ALL_DEPENDENCY keeps cpack from building `all` first.
# TINYFORMER_BUILD_OPTIONS: more cmake options (scripts/test.sh: unity batches, ccache).
# shellcheck disable=SC2086
# The Python module is part of the package (TINYFORMER_PYTHON=ON: a missing pybind11 is an error).
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DTINYFORMER_NATIVE=OFF -DTINYFORMER_TESTS=ON -DTINYFORMER_PYTHON=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON ${TINYFORMER_BUILD_OPTIONS:-} \
  >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; exit 1; }
cmake --build "$dir" -j "$(nproc)" --target tinyformer tinyformer_python tinyformer_docs tinyformer_parity_tests >&2
"$dir/tests/tinyformer_parity_tests" "[parity]" >&2 || { echo "package-deb: the portable build fails the parity tests" >&2; exit 1; }
rm -f "$dir"/tinyformer_*.deb
(cd "$dir" && cpack -G DEB >cpack.log 2>&1) || { cat "$dir/cpack.log" >&2; exit 1; }
deb=$(ls "$dir"/tinyformer_*.deb)
echo "package-deb: $deb ($(du -h "$deb" | cut -f1))" >&2
echo "$deb"
