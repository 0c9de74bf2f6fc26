#!/usr/bin/env bash
# Runs omni-generate --dry-run under mpirun and checks the verdict:
#   dry_run_case.sh EXE NP EXPECTED_RC EXPECTED_TEXT [flags...]
# The expected text must appear exactly once in the combined output (an error is printed once, not once per
# rank), and for errors exactly one line may start with "omni-generate: error".
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
exe=$1; np=$2; want_rc=$3; want_text=$4; shift 4
out=$(mpi -t 60 "$np" "$exe" --dry-run "$@" 2>&1)
rc=$?
fail=0
if [ "$rc" != "$want_rc" ]; then echo "FAIL: exit code $rc, expected $want_rc"; fail=1; fi
count=$(grep -cF -- "$want_text" <<<"$out")
if [ "$count" != 1 ]; then echo "FAIL: expected text found $count times (want once): $want_text"; fail=1; fi
errors=$(error_lines "$out")
if [ "$want_rc" != 0 ] && [ "$errors" != 1 ]; then echo "FAIL: $errors error lines, expected exactly 1"; fail=1; fi
if [ "$want_rc" = 0 ] && [ "$errors" != 0 ]; then echo "FAIL: unexpected error line"; fail=1; fi
if [ $fail != 0 ]; then echo "--- output (np $np: $*) ---"; echo "$out"; exit 1; fi
echo "ok: np $np $* -> rc $rc: $want_text"
