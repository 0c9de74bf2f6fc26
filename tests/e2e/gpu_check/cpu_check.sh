#!/usr/bin/env bash
# tools/gpu/check.sh --cpu on an existing build dir, and its summary, logs and JSON checked.
#   cpu_check.sh BUILD_DIR full      every stage passes; eight forward_bench rows in order, with numbers
#   cpu_check.sh BUILD_DIR timeout   forward_bench waits after two rows and is killed by its stage timeout
#   cpu_check.sh BUILD_DIR failrow   one row (vae21) fails: the seven others still measured, the failed one in
#                                    the table and the JSON with its error, the stage FAIL(1)
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
set -u

build=$1
mode=$2
# check.sh's knobs come from this script alone, not from the caller's environment (tools/test.sh's CTEST_ARGS...).
unset CHECK_BUDGET_S T_UNPACK T_CONFIGURE T_BUILD T_BENCH T_CTEST R_BENCH R_CTEST GPU_CHECK_TARGETS CMAKE_ARGS \
  CTEST_ARGS CTEST_JOBS BENCH_WARMUP BENCH_ITERS FORWARD_BENCH_ARGS CPU_CTEST_REGEX TORCH_PYTHON CHECK_MODE OUT
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=$work/out

if [ "$mode" = full ]; then
  BUILD_DIR=$build timeout 280 bash "$SOURCE_DIR/tools/gpu/check.sh" --cpu "$out" > "$work/stdout" 2>&1
  rc=$?
  want_rows=("a14b,1" "a14b fp8-ffn dequant,1" "a14b fp8-ffn matmul,1" "ti2v5b,1" "vae21,1" "vae22,1" "a14b,2"
    "ti2v5b,2")
  want_bench=OK
elif [ "$mode" = failrow ]; then
  BUILD_DIR=$build FORWARD_BENCH_ARGS="--fail-row vae21" CPU_CTEST_REGEX='^test_config$' \
    timeout 280 bash "$SOURCE_DIR/tools/gpu/check.sh" --cpu "$out" > "$work/stdout" 2>&1
  rc=$?
  want_rows=("a14b,1" "a14b fp8-ffn dequant,1" "a14b fp8-ffn matmul,1" "ti2v5b,1" "vae22,1" "a14b,2" "ti2v5b,2")
  want_bench='FAIL\(1\)'
else
  # 15 s is the shortest stage timeout check.sh gives; two tiny rows take a second or two.
  BUILD_DIR=$build T_BENCH=15 FORWARD_BENCH_ARGS="--wait-after-rows 2" CPU_CTEST_REGEX='^test_config$' \
    timeout 280 bash "$SOURCE_DIR/tools/gpu/check.sh" --cpu "$out" > "$work/stdout" 2>&1
  rc=$?
  want_rows=("a14b,1" "a14b fp8-ffn dequant,1")
  want_bench=TIMEOUT
fi
cat "$work/stdout"
echo "======== cpu_check.sh ($mode): check.sh exited $rc"

summary=$out/summary.txt
[ -f "$summary" ] || fail "no $summary"
if [ "$mode" = full ]; then
  [ "$rc" = 0 ] && pass "exit 0" || flunk "check.sh --cpu exited $rc, want 0"
elif [ "$mode" = failrow ]; then
  [ "$rc" = 1 ] && pass "exit 1 (a row failed)" || flunk "check.sh --cpu exited $rc, want 1"
else
  [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] && pass "exit $rc (a stage timed out)" ||
    flunk "check.sh exited $rc: want a failure of its own, not 0 nor killed by the test's timeout"
fi

# The summary is printed last: the output ends with it.
n=$(wc -l < "$summary")
if [ "$n" -gt 5 ] && [ "$(tail -n "$n" "$work/stdout")" = "$(cat "$summary")" ]; then
  pass "the summary ($n lines) is the last thing printed"
else
  flunk "the output does not end with summary.txt"
fi

# Every stage's row, with the status this case wants.
declare -A want_status=([unpack]='SKIP\(cpu\)' [configure]=OK [build]=OK [forward_bench]=$want_bench [ctest]=OK)
for s in unpack configure build forward_bench ctest; do
  if grep -Eq "^\| $s +\| ${want_status[$s]} +\| +[0-9]+ \| .*[a-z]" "$summary"; then
    pass "stage row: $(grep -E "^\| $s " "$summary" | tr -s ' ')"
  else
    flunk "no row for stage $s with status ${want_status[$s]} and a note: $(grep -E "^\| $s " "$summary")"
  fi
done

# forward_bench's rows in the summary: label (workload and weight mode), batch, ms per forward > 0, TFLOP/s,
# weights, SDPA backend, in order; comma-separated (a label has spaces).
backends='^(flash|mem-efficient|cudnn|math)(/(flash|mem-efficient|cudnn|math))*$'
table=$(awk -F'|' '$2 ~ /^ (a14b|ti2v5b|vae21|vae22)( fp8-ffn (dequant|matmul))? +$/ && $3 !~ /FAILED/ {
  for (i = 2; i <= NF; ++i) gsub(/^ +| +$/, "", $i); print $2 "," $4 "," $7 "," $9 "," $10 "," $12 }' "$summary")
got_rows=$(awk -F, '{ print $1 "," $2 }' <<<"$table")
if [ "$got_rows" = "$(printf '%s\n' "${want_rows[@]}")" ]; then
  pass "forward_bench rows in the summary, in order: $(paste -sd, <<<"$got_rows")"
else
  flunk "forward_bench rows in the summary: got [$(paste -sd, <<<"$got_rows")], want [$(printf '%s,' "${want_rows[@]}")]"
fi
bad=$(awk -F, -v re="$backends" '!($3 ~ /^[0-9]+\.[0-9]+$/ && $3 > 0 && $4 ~ /^[0-9]+\.[0-9]+$/ &&
  $5 ~ /^[0-9.]+ [KMGT]?i?B$/ && $6 ~ re)' <<<"$table")
[ -n "$table" ] && [ -z "$bad" ] && pass "every row has ms/forward > 0, TFLOP/s, weight bytes and an SDPA backend" ||
  flunk "rows without numbers, weight bytes or SDPA backend: ${bad:-no rows}"

# The log names the backend SDPA picked.
grep -Eq "^forward_bench: a14b batch 1: SDPA backend (flash|mem-efficient|cudnn|math)" "$out/forward_bench.log" &&
  pass "log: $(grep -m1 -E '^forward_bench: a14b batch 1: SDPA backend' "$out/forward_bench.log")" ||
  flunk "forward_bench.log does not name the SDPA backend"

# The JSON file: valid, the same rows as the table, each with seconds and its SDPA backend.
json_rows=$(python3 -c '
import json, re, sys
rows = json.load(open(sys.argv[1]))
failed = [r for r in rows if "error" in r]
rows = [r for r in rows if "error" not in r]
if sys.argv[3] == "failrow":
    assert [(r["label"], r["batch"]) for r in failed] == [("vae21", 1)], failed
    assert "--fail-row vae21" in failed[0]["error"], failed
else:
    assert not failed, failed
for r in rows:
    assert r["seconds"] > 0 and len(r["seconds_all"]) >= 1, r
    assert re.match(sys.argv[2], r["sdpa_backend"]), r["sdpa_backend"]
    assert r["sdpa_calls"] and all(c["backend"] for c in r["sdpa_calls"]), r
    assert r["weight_bytes"] > 0 and r["weights"], r
    print(r["label"] + "," + str(r["batch"]))
# The float8 rows hold fewer weight bytes than the run-dtype row before them (the feed-forward share in float8).
a14b = {r["label"]: r["weight_bytes"] for r in rows if r["workload"] == "a14b" and r["batch"] == 1}
for m in ("dequant", "matmul"):
    if "a14b fp8-ffn " + m in a14b:
        assert a14b["a14b fp8-ffn " + m] < a14b["a14b"], a14b
' "$out/forward_bench.json" "$backends" "$mode" 2>&1)
jrc=$?
if [ $jrc = 0 ] && [ "$json_rows" = "$got_rows" ]; then
  pass "forward_bench.json is valid JSON with the table's $(wc -l <<<"$json_rows") rows, seconds and SDPA backends"
else
  flunk "forward_bench.json (python3 exit $jrc): [$(paste -sd, <<<"$json_rows")], table [$(paste -sd, <<<"$got_rows")]"
fi
[ ! -e "$out/forward_bench.json.tmp" ] && pass "no temporary JSON file left" || flunk "forward_bench.json.tmp left behind"

# The follow-up line: the command for a second run, naming the workloads with a row not measured.
if [ "$mode" = full ]; then
  grep -qx 'follow-up: none needed' "$summary" && pass "follow-up: none needed" || flunk "no 'follow-up: none needed'"
elif [ "$mode" = failrow ]; then
  grep -q "^  FORWARD_BENCH_ARGS='--only vae21' bash tools/gpu/check.sh" "$summary" &&
    pass "follow-up: $(grep -A1 '^follow-up' "$summary" | tail -1)" || flunk "no follow-up naming vae21"
fi
if [ "$mode" = failrow ]; then
  grep -Eq '^\| vae21 +\| FAILED \(batch 1\): .*--fail-row vae21' "$summary" &&
    pass "the failed row is in the summary: $(grep -E '^\| vae21 ' "$summary" | cut -c1-100)" ||
    flunk "no FAILED row for vae21 in the summary"
  grep -q '^forward_bench: done: 7 rows measured, 1 failed' "$out/forward_bench.log" &&
    pass "forward_bench went on after the failed row and counted it" || flunk "forward_bench did not finish its rows"
fi
if [ "$mode" = timeout ]; then
  grep -q '^forward_bench: --wait-after-rows 2: waiting to be killed' "$out/forward_bench.log" &&
    pass "forward_bench was waiting, after two rows, when killed" || flunk "forward_bench did not reach its wait"
fi
summary
