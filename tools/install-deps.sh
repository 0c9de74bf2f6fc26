#!/usr/bin/env bash
# Installs every build and test dependency of omni-generate: Debian 12 packages (apt), and LibTorch as the
# pinned PyTorch wheel (with CUDA, NCCL and cuDNN as its nvidia-* wheels) in the project's virtual
# environment .venv (or $OMNI_VENV). Non-interactive; quick when everything is already there.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  clang-format                      # tools/check-format.sh (Debian 12: clang-format 14)
  python3-venv                      # the virtual environment that holds the pinned torch (LibTorch)
  libopenmpi-dev openmpi-bin        # MPI runtime and mpirun for the multi-rank tests
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev
  libicu-dev                        # Unicode normalization and properties (prompt cleaning, tokenizer)
  libsentencepiece-dev sentencepiece
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg
  libsoxr-dev                       # audio resampled as librosa resamples it (soxr HQ)
  libstb-dev
  libjpeg62-turbo-dev libwebp-dev   # image input decoded as Pillow decodes it (libjpeg-turbo, libwebp)
  libgtest-dev googletest
  slurm-wlm munge                   # tools/slurm/selftest.sh: a one-node Slurm for the slurm-labelled test
  chromium                          # ctest compare.runs opens omni-compare's HTML report in a headless browser
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# LibTorch: PyTorch's own wheel, the LibTorch users have. 2.11.0 is what the H200 machines carry
# (2.11.0+cu130); PyPI's Linux x86-64 wheel is the same build, with CUDA 13.0, cuDNN 9 and NCCL 2.28.
TORCH_VERSION=2.11.0
VENV=${OMNI_VENV:-.venv}
PY="$VENV/bin/python3"
have_torch() {
  [ -x "$PY" ] && "$PY" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null
}
if have_torch; then
  echo "install-deps: torch $TORCH_VERSION already in $VENV"
else
  echo "install-deps: installing torch $TORCH_VERSION into $VENV (about 4.6 GB with its CUDA wheels; pip keeps no second copy in its cache)"
  [ -x "$PY" ] || python3 -m venv "$VENV"
  bash "$(dirname "$0")/free-space.sh" "$VENV" 9 "torch $TORCH_VERSION's wheels (downloaded, then unpacked)"
  "$PY" -m pip install -q --disable-pip-version-check --no-cache-dir "torch==$TORCH_VERSION"
  have_torch || { echo "install-deps: torch $TORCH_VERSION did not install into $VENV" >&2; exit 1; }
fi
