#!/usr/bin/env bash
# Creates the Python environment that tools/reference/record.py runs in, pinned by requirements.txt.
#
#   tools/reference/setup.sh            # into tools/reference/.venv (or $REFERENCE_VENV)
#
# Quick when the environment already holds these pins. The installed set is written to
# <venv>/pip-freeze.txt. Needs Python >= 3.10 ($PYTHON, default python3) and PyPI.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv=${REFERENCE_VENV:-$here/.venv}
python=${PYTHON:-python3}
requirements=$here/requirements.txt
stamp=$venv/.requirements.sha256

# Installed without their dependencies (requirements.txt pins those it needs): lpips would pull torchvision in.
no_deps=(lpips==0.1.4)
want=$( (cat "$requirements"; echo "no-deps: ${no_deps[*]}") | sha256sum | cut -d' ' -f1)
if [[ -x $venv/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  echo "reference environment up to date: $venv"
  exit 0
fi

"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  { echo "setup.sh: $python is older than Python 3.10 (set PYTHON)" >&2; exit 1; }
bash "$here/../free-space.sh" "$venv" 9 "the reference environment (torch with its CUDA wheels, diffusers)"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir --quiet -r "$requirements"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir --quiet --no-deps "${no_deps[@]}"
"$venv/bin/python" -m pip freeze --disable-pip-version-check > "$venv/pip-freeze.txt"
echo "$want" > "$stamp"
echo "reference environment ready: $venv (installed set in $venv/pip-freeze.txt)"
