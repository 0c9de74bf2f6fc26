# shellcheck shell=bash
# What the scripts that drive a namespace cluster share (tools/cluster/selftest.sh, tests/e2e/cluster):
#   source tools/cluster/script_lib.sh
#   cluster_traps CLEANUP_FUNCTION    CLEANUP_FUNCTION on exit; INT and TERM exit 130 / 143 through it
#   to SECONDS CMD...                 CMD under `timeout`, but in the background + `wait`: bash runs an INT/TERM
#                                     trap only once a foreground command ends, while `wait` is interrupted at
#                                     once - so Ctrl-C (or ctest's TERM) cleans up now, not after the timeout.
#                                     The running command's pid is in $fg_pid (for the cleanup to kill).
fg_pid=''

cluster_traps() {
  # shellcheck disable=SC2064 # the function name is fixed now
  trap "$1" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

to() {
  local t=$1 rc; shift
  timeout "$t" "$@" &
  fg_pid=$!
  wait "$fg_pid"; rc=$?
  fg_pid=
  return "$rc"
}
