#!/usr/bin/env bash
# float32 means float32 on CUDA: the report's float32_math says how LibTorch will compute float32 matrix
# products and cuDNN convolutions. LibTorch's own default lets cuDNN convolutions use TF32 ("matmul ieee,
# conv tf32"); omni-generate turns TF32 off unless --tf32 asks for it. The setting is process state that a
# CPU-only LibTorch keeps as well, so this runs here.
#   float32_math.sh GENERATE MODEL_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; model=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
common=(--model "$model" --prompt "A red fox in the snow" --height 32 --width 48 --num-frames 5
        --num-inference-steps 2 --max-sequence-length 16 --dtype float32 --log-level warn --dry-run)
"$gen" "${common[@]}" --report "$work/default.json" >/dev/null
"$gen" "${common[@]}" --tf32 --report "$work/tf32.json" >/dev/null
python3 - "$work/default.json" "$work/tf32.json" <<'PY'
import json, sys
default, tf32 = (json.load(open(p))["float32_math"] for p in sys.argv[1:3])
if default != "ieee":
    sys.exit(f"FAIL: default float32_math is {default!r}, expected 'ieee' (TF32 off for matmuls and convolutions)")
if tf32 != "tf32":
    sys.exit(f"FAIL: --tf32 gives float32_math {tf32!r}, expected 'tf32'")
print("ok: float32_math ieee by default, tf32 with --tf32")
PY
