# shellcheck shell=bash
# The end-to-end scripts' shared shell library (tests/e2e/lib.sh). Each script sources it first:
#   source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"      (from a folder of tests/e2e)
# It sets no shell options (the scripts keep their own set -e / -u) and defines:
#   SOURCE_DIR                      the repository root
#   mpi [-t SECONDS] NP CMD...      CMD on NP ranks under mpirun (quiet, oversubscribed, as root allowed, one
#                                   OpenMP thread per rank), under timeout(1) with -t; mpirun options such as
#                                   -x VAR may come before CMD
#   launch NP CMD...                under mpi when NP > 1, else CMD directly (one rank, no mpirun)
#   fail MESSAGE...                 prints "FAIL: MESSAGE" and exits 1
#   need_venv VENV                  fails unless VENV (the reference environment) has bin/python
#   error_lines TEXT                how many lines of TEXT start with "omni-generate: error"
#   pass MESSAGE / flunk MESSAGE    count a passed / failed check (passes, fails) and print "ok: " / "FAIL: "
#   expect NAME NP RC TEXT -- FLAGS...
#                                   "$gen" FLAGS on NP ranks (timeout 120 s) must exit RC with exactly one error
#                                   line, contain TEXT and load no model; counted with pass / flunk
#   saved_run [--hsdp] NAME NP FLAGS...
#                                   "$gen" "${common[@]}" FLAGS on NP ranks (launch; --hsdp: HSDP over them, layout
#                                   manual, when NP > 1) writing $work/NAME.mp4 with its tensors (--save-tensors
#                                   $work/NAME.safetensors), report ($work/NAME.json) and log ($work/NAME.log);
#                                   prints the log and fails when it exits non-zero. Reads the caller's gen, work
#                                   and common
#   summary                         prints "P passed, F failed" and returns nonzero when a check failed
#   cpu_kernel_levels               the CPU kernel levels a layout-equality test runs at, one per line: "native"
#                                   (what LibTorch picks here) and one level below it ("avx2" on an AVX-512
#                                   CPU, "sse" on an AVX2 one)
#   use_cpu_kernels LEVEL           exports the caps of LEVEL (ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY,
#                                   MKL_ENABLE_INSTRUCTIONS; mpirun's local ranks inherit them); native unsets them

SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Open MPI as root in a container (the ctest machines), for mpirun and for the singleton runs.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mpi() {
  local limit=()
  if [ "$1" = -t ]; then limit=(timeout "$2"); shift 2; fi
  local np=$1; shift
  "${limit[@]}" mpirun -q --oversubscribe --allow-run-as-root -np "$np" -x OMP_NUM_THREADS=1 "$@"
}

launch() {
  local np=$1; shift
  if [ "$np" -gt 1 ]; then
    mpi "$np" "$@"
  else
    "$@"
  fi
}

fail() {
  echo "FAIL: $*"
  exit 1
}

need_venv() {
  [ -x "$1/bin/python" ] || fail "no reference environment at $1 (tools/reference/setup.sh makes it)"
}

error_lines() {
  grep -c '^omni-generate: error' <<<"$1"
}

passes=0
fails=0
pass() {
  passes=$((passes + 1))
  echo "ok: $*"
}
flunk() {
  fails=$((fails + 1))
  echo "FAIL: $*"
}

saved_run() {
  local par=()
  if [ "$1" = --hsdp ]; then
    shift
    if [ "$2" -gt 1 ]; then par=(--layout manual --use-hsdp --hsdp-shard-size "$2"); fi
  fi
  local name=$1 np=$2; shift 2
  launch "$np" "$gen" "${common[@]}" "${par[@]}" "$@" --output "$work/$name.mp4" \
    --save-tensors "$work/$name.safetensors" --report "$work/$name.json" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "$name exited non-zero"; }
}

expect() {
  local name=$1 np=$2 rc=$3 text=$4
  shift 5
  local out code errors
  out=$(mpi -t 120 "$np" "$gen" "$@" 2>&1)
  code=$?
  errors=$(error_lines "$out")
  if [ "$code" = "$rc" ] && [ "$errors" = 1 ] && grep -qF -- "$text" <<<"$out" && ! grep -q 'loaded in' <<<"$out"; then
    pass "$name (exit $code)"
  else
    flunk "$name: exit $code (want $rc), $errors error lines, want text: $text"
    echo "$out"
  fi
}

# A claim of equal bits across layouts must not rest on the kernels one CPU happens to choose (issue 36: a
# test that held on an AVX2 EPYC failed on an AVX-512 Xeon). Running it at a second kernel level shows, on the
# machine where the test is written, a claim that holds for one kernel choice only.
cpu_kernel_levels() {
  echo native
  if grep -qw avx512f /proc/cpuinfo; then
    echo avx2
  elif grep -qw avx2 /proc/cpuinfo; then
    echo sse
  fi
}

use_cpu_kernels() {
  case $1 in
    native) unset ONEDNN_MAX_CPU_ISA ATEN_CPU_CAPABILITY MKL_ENABLE_INSTRUCTIONS ;;
    avx2) export ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ;;
    sse) export ONEDNN_MAX_CPU_ISA=SSE41 ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 ;;
    *) fail "use_cpu_kernels: unknown level $1" ;;
  esac
}

summary() {
  echo "$passes passed, $fails failed"
  [ "$fails" = 0 ]
}
