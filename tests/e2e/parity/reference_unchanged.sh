#!/usr/bin/env bash
# Records every reference case with the pinned diffusers on this machine into LOCAL_DIR/<case> (the parity tests
# compare omni-generate with these recordings: diffusers' own float32 numbers move with the CPU's kernels, by up
# to 2.4e-4 in t2v-headdim64's frames between an AVX-512 and an AVX2 machine), and checks that they still are the
# committed references (tools/reference/cases.sh --check: each tensor within 5e-6 of its scale, the decoded
# video within 1e-3, each case.json entry equal), so that a diffusers upgrade that changes numbers shows here.
#   reference_unchanged.sh SOURCE_DIR VENV LOCAL_DIR     ($REFERENCE_VENV, when set, wins over VENV)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$1
venv=${REFERENCE_VENV:-$2}
local_dir=$3
[ -x "$venv/bin/python" ] || fail "no diffusers reference environment at $venv; make it with tools/reference/setup.sh" \
  "(about 70 s with pip's cache, needs PyPI; or set REFERENCE_VENV): the parity tests compare with it"
rm -rf "$local_dir"
export REFERENCE_VENV=$venv CHECK_INTO=$local_dir
exec bash "$root/tools/reference/cases.sh" --check
