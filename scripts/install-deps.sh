#!/usr/bin/env bash
# Installs the Debian packages tinyformer needs, if any are missing (with --fuzz, also those
# scripts/fuzz.sh needs). Runs `apt-get update` only when an install cannot find a package
# without it.
set -euo pipefail

packages=(cmake make g++ libdnnl-dev libeigen3-dev libspdlog-dev libcli11-dev catch2
          libtomlplusplus-dev nlohmann-json3-dev libxml2-utils)
# --fuzz: also clang with libFuzzer and its OpenMP runtime, for scripts/fuzz.sh
if [[ "${1:-}" == "--fuzz" ]]; then packages+=(clang libclang-rt-14-dev libomp-14-dev); fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "installing missing Debian packages: ${missing[*]}"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
