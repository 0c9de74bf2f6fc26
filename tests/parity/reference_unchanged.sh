#!/usr/bin/env bash
# diffusers still records the committed references: tools/reference/cases.sh --check over every case (the
# fixtures' and the ones tools/reference made), each tensor within 1e-6 and each case.json entry equal.
#   reference_unchanged.sh SOURCE_DIR VENV     ($REFERENCE_VENV, when set, wins over VENV)
# Without the environment it prints one line and exits 77, which ctest reports as skipped (SKIP_RETURN_CODE).
set -euo pipefail
root=$1
venv=${REFERENCE_VENV:-$2}
if [ ! -x "$venv/bin/python" ]; then
  echo "SKIPPED: no diffusers reference environment at $venv; make it with tools/reference/setup.sh" \
       "(about 70 s with pip's cache, needs PyPI; or set REFERENCE_VENV) to check the references"
  exit 77
fi
export REFERENCE_VENV=$venv
exec bash "$root/tools/reference/cases.sh" --check
