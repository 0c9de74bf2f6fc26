#!/usr/bin/env bash
# Operators and bytes of one Wan transformer block, ours against diffusers', side by side.
#
#   tools/bench/block_traffic.sh [--tokens 4096] [--text 512] [--dims 5120,3072] [--per-token-dims 3072]
#                                [--list] [--py-device cpu|meta]
#
# Runs build/tools/bench/block_traffic (our C++ block under an ATen RecordFunction observer) and
# tools/bench/block_traffic_diffusers.py (diffusers' WanTransformerBlock under a TorchDispatchMode), both
# applying the rule documented at the top of block_traffic.cpp: operators below the composite level, apart
# from matrix products, attention, convolutions and views; bytes = nbytes of every tensor input and output.
# Prints per width:
#   block_traffic WIDTH: ours ops N bytes B; diffusers ops N bytes B
#   block_traffic WIDTH: ours X GB, diffusers Y GB; ours/diffusers ops R, bytes R
# and with --list (or BLOCK_TRAFFIC_LIST=1) each side's per-op table. Widths 5120 (A14B, scalar modulation)
# and 3072 (TI2V-5B, per-token modulation), bfloat16, batch 1, on the CPU (about 30 s for ours and 20 s for
# diffusers at the defaults on 2 cores); --py-device meta runs diffusers' side without arithmetic.
# Environment: BUILD_DIR (default <repo>/build), PYTHON (default tools/reference/.venv/bin/python).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
python=${PYTHON:-$repo/tools/reference/.venv/bin/python}
bin=$build/tools/bench/block_traffic

tokens=4096 text=512 dims=5120,3072 per_token=3072 list=${BLOCK_TRAFFIC_LIST:+1} py_device=cpu
while [ $# -gt 0 ]; do
  case $1 in
    --tokens) tokens=$2; shift 2 ;;
    --text) text=$2; shift 2 ;;
    --dims) dims=$2; shift 2 ;;
    --per-token-dims) per_token=$2; shift 2 ;;
    --list) list=1; shift ;;
    --py-device) py_device=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "block_traffic.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "block_traffic.sh: $bin not built (ninja -C $build block_traffic)" >&2; exit 1; }
[ -x "$python" ] || { echo "block_traffic.sh: no python at $python (set PYTHON)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--tokens "$tokens" --text "$text" --dims "$dims" --per-token-dims "$per_token" ${list:+--list})

start=$(date +%s.%N)
"$bin" "${common[@]}" --json "$tmp/ours.json"
mid=$(date +%s.%N)
"$python" "$here/block_traffic_diffusers.py" "${common[@]}" --device "$py_device" --json "$tmp/diffusers.json"
end=$(date +%s.%N)

"$python" - "$tmp/ours.json" "$tmp/diffusers.json" <<'EOF'
import json, sys
ours = {r["dim"]: r for r in json.load(open(sys.argv[1]))}
theirs = {r["dim"]: r for r in json.load(open(sys.argv[2]))}
for dim, o in ours.items():
    d = theirs[dim]
    print(f"block_traffic {dim}: ours ops {o['ops']} bytes {o['bytes']}; diffusers ops {d['ops']} bytes {d['bytes']}")
    print(f"block_traffic {dim}: ours {o['bytes'] / 1e9:.3f} GB, diffusers {d['bytes'] / 1e9:.3f} GB; "
          f"ours/diffusers ops {o['ops'] / d['ops']:.3f}, bytes {o['bytes'] / d['bytes']:.3f} "
          f"({o['tokens']} tokens, {o['text']} text, grid {'x'.join(map(str, o['grid']))}, "
          f"{'per-token' if o['per_token'] else 'scalar'} modulation)")
EOF
awk -v a="$start" -v b="$mid" -v c="$end" \
  'BEGIN { printf "block_traffic: wall %.1f s ours, %.1f s diffusers\n", b - a, c - b }'
