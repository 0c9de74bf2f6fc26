#!/usr/bin/env bash
# Installs every build and test dependency of omni-generate from Debian 12 packages.
# Non-interactive; quick (no apt-get update) when everything is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  libtorch-dev                      # LibTorch 1.13 (CPU); GPU clusters use PyTorch 2.x's LibTorch instead
  libopenblas0-openmp               # without it LibTorch matrix products are ~8x slower (reference BLAS)
  libopenmpi-dev openmpi-bin        # MPI runtime and mpirun for the multi-rank tests
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev
  libsentencepiece-dev sentencepiece
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg
  libstb-dev
  libgtest-dev googletest
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
