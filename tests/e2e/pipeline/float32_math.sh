#!/usr/bin/env bash
# How float32 is computed on CUDA: the report's float32_math says how LibTorch will compute float32 matrix
# products and cuDNN convolutions. By default omni-generate runs what diffusers and Wan2.2 run, LibTorch's own
# default: products IEEE, convolutions TF32 ("matmul ieee, conv tf32"; a float32 VAE decode 8x faster than IEEE
# on an H200). --tf32 gives TF32 for both, --exact-float32 IEEE for both, and the two together are refused.
# The setting is process state that a CPU-only LibTorch keeps as well, so this runs here.
#   float32_math.sh GENERATE MODEL_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; model=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
common=(--model "$model" --prompt "A red fox in the snow" --height 32 --width 48 --num-frames 5
        --num-inference-steps 2 --max-sequence-length 16 --dtype float32 --log-level warn --dry-run)
"$gen" "${common[@]}" --report "$work/default.json" >/dev/null
"$gen" "${common[@]}" --tf32 --report "$work/tf32.json" >/dev/null
"$gen" "${common[@]}" --exact-float32 --report "$work/exact.json" >/dev/null
python3 - "$work/default.json" "$work/tf32.json" "$work/exact.json" <<'PY'
import json, sys
default, tf32, exact = (json.load(open(p))["float32_math"] for p in sys.argv[1:4])
if default != "matmul ieee, conv tf32":
    sys.exit(f"FAIL: default float32_math is {default!r}, expected PyTorch's 'matmul ieee, conv tf32'")
if tf32 != "tf32":
    sys.exit(f"FAIL: --tf32 gives float32_math {tf32!r}, expected 'tf32'")
if exact != "ieee":
    sys.exit(f"FAIL: --exact-float32 gives float32_math {exact!r}, expected 'ieee'")
print("ok: float32_math: PyTorch's default, tf32 with --tf32, ieee with --exact-float32")
PY
set +e
"$gen" "${common[@]}" --tf32 --exact-float32 --report "$work/both.json" >/dev/null 2>"$work/both.err"
rc=$?
set -e
[ "$rc" = 2 ] || { cat "$work/both.err"; echo "FAIL: --tf32 --exact-float32 exit $rc, expected 2"; exit 1; }
grep -q -- "--tf32 and --exact-float32 are exclusive" "$work/both.err" || { cat "$work/both.err"; echo "FAIL: no error naming both"; exit 1; }
[ ! -e "$work/both.json" ] || { echo "FAIL: a report was written"; exit 1; }
echo "ok: --tf32 with --exact-float32 refused"
