#!/usr/bin/env bash
# Installs every build and test dependency from Debian packages. Idempotent.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git
  libgit2-dev libpcre2-dev libcurl4-openssl-dev libssl-dev
  nlohmann-json3-dev libvalijson-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libasio-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  libvulkan-dev mesa-vulkan-drivers vulkan-tools glslc
  clang libclang-rt-14-dev
  libsystemd-dev systemd prometheus-cpp-dev
  lighttpd
  openssh-client openssh-server
  procps python3
  python3-sentencepiece  # tests/engine/trained_pair_test.cpp: sentencepiece's ids for the pycode tokenizer
)
# tools/train_pair/ (training the pycode pair, not needed to build or test) also uses
# python3-numpy and python3-torch.
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
