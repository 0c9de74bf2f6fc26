# shellcheck shell=bash
# The parity scripts' comparison (reference_case.sh, s2v_case.sh), sourced after they set $compare (omni-compare),
# $exp (the reference file), $work (the case's folder) and status=0:
# check NAME FILE TOLERANCE KEYS [--rel-tolerance]: one omni-compare over KEYS (a key missing from either file
# fails), its table in CASE_WORK/NAME.txt, one summary line here; status=1 when it fails. The tolerance bounds the
# max abs difference, or with --rel-tolerance the max abs difference over the reference tensor's largest magnitude.
# Empty KEYS: nothing to check.
check() {
  local name=$1 file=$2 tol=$3 keys=$4 kind=${5:---tolerance} rc=0
  [ -n "$keys" ] || return 0
  "$compare" "$file" "$exp" --keys "$keys" "$kind" "$tol" >"$work/$name.txt" 2>&1 || rc=$?
  local label=$tol; [ "$kind" = --rel-tolerance ] && label="$tol rel"
  awk -v name="$name" -v tol="$label" -v rc=$rc '
    $3 ~ /^(F32|I64|F64|I32)$/ { n++; if ($4 + 0 >= worst) { worst = $4 + 0; key = $1 } }
    END { printf "%-12s %-4s %3d tensors, tolerance %-6s worst %s %.3e\n", name, rc ? "FAIL" : "ok", n, tol, key, worst }
  ' "$work/$name.txt"
  if [ $rc != 0 ]; then
    grep -v ' ok$' "$work/$name.txt" | sed 's/^/    /'
    status=1
  fi
}
