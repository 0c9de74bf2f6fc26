#!/usr/bin/env bash
# fp8_scaled files are held as stored. The files: ComfyUI single files written by
# tools/reference/foreign_layouts.py (PyTorch's own float8 conversion) with one float32 scale per output row,
# amax / 448, for exactly the weights `--fp8-layers ffn` puts in float8 (the feed-forward weights of blocks
# 1..N-2), every other tensor float32 as in the source. Text encoder and VAE come from the source folder.
# - stored == quantized at load: omni-generate on those files with no float8 flag writes bit-identical tensors
#   (prompt embeddings, every step's latents, the frames) to the source folder's with --weight-dtype
#   float8_e4m3fn --fp8-layers ffn, on NP ranks (1, or HSDP 4), and the same per-rank resident bytes;
# - the report's float8_weights: all stored in the one run, all quantized in the other, as many as the files
#   hold in float8; each rank reads fewer bytes (the stored weights' bytes are 1 each, not 4);
# - the sidecar and the MP4 metadata record float8_weights;
# - the stored run with --weight-dtype float8_e4m3fn --fp8-layers ffn holds the same weights, so the same tensors;
# - --fp8-matmul alone on the files (no --weight-dtype) multiplies their float8 weights: the tensors of the
#   source with --weight-dtype float8_e4m3fn --fp8-layers ffn --fp8-matmul, not those without it.
#   fp8_stored.sh GENERATE MAKE_CHECKPOINT VENV KIND NP WORK_DIR [extra flags...]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; mk=$2; venv=$3; kind=$4; np=$5; work=$6; shift 6
need_venv "$venv"
py=$venv/bin/python
rm -rf "$work"; mkdir -p "$work"
"$mk" --kind "$kind" --preset tiny-heads4 --layers 4 --seed 11 --output "$work/model" >/dev/null 2>&1 ||
  fail "omni-make-checkpoint failed"
# Blocks 1 and 2 of 4: the feed-forward weights in Wan2.2's original names (ffn.0, ffn.2).
"$py" "$SOURCE_DIR/tools/reference/foreign_layouts.py" comfy "$work/model" "$work/comfy" --dtype fp8_scaled \
  --fp8-rest fp32 --fp8-scale row --fp8-keys '^blocks\.[12]\.ffn\.[02]\.weight$' >/dev/null ||
  fail "foreign_layouts.py could not write the fp8_scaled files"
files=()
for f in "$work/comfy"/*.safetensors; do
  case $(basename "$f") in
    *high_noise*|*_5B_*) files+=(--transformer "$f") ;;
    *low_noise*) files+=(--transformer-2 "$f") ;;
  esac
done
[ ${#files[@]} -gt 0 ] || fail "no transformer file in $work/comfy"
par=()
[ "$np" -gt 1 ] && par=(--layout manual --use-hsdp --hsdp-shard-size "$np")
common=(--model "$work/model" --prompt "A red fox in the snow" --negative-prompt "blurry" --height 32 --width 64
        --num-frames 5 --num-inference-steps 2 --max-sequence-length 16 --dtype bfloat16 --seed 5 --log-level warn
        "${par[@]}" "$@")
saved_run quantized "$np" --weight-dtype float8_e4m3fn --fp8-layers ffn
saved_run stored "$np" "${files[@]}"
saved_run stored-flag "$np" "${files[@]}" --weight-dtype float8_e4m3fn --fp8-layers ffn
saved_run quantized-mm "$np" --weight-dtype float8_e4m3fn --fp8-layers ffn --fp8-matmul
saved_run stored-mm "$np" "${files[@]}" --fp8-matmul

"$py" - "$work" "$np" <<'PY' && pass "stored == quantized at load (np $np)" || flunk "stored vs quantized at load (np $np)"
import json, os, re, subprocess, sys
from safetensors import safe_open
from safetensors.torch import load_file
work, np_ = sys.argv[1], int(sys.argv[2])
bad = []
# How many weights the files store in float8 (their headers, independent of our reader).
stored_count = 0
for name in os.listdir(f"{work}/comfy"):
    if re.search(r"high_noise|low_noise|_5B_", name):
        with safe_open(f"{work}/comfy/{name}", "pt") as f:
            stored_count += sum(1 for k in f.keys() if f.get_slice(k).get_dtype() == "F8_E4M3" and k.endswith(".weight"))
if stored_count == 0:
    bad.append("the files hold no float8 weight")
q, s, sf, qm, sm = (load_file(f"{work}/{n}.safetensors")
                    for n in ("quantized", "stored", "stored-flag", "quantized-mm", "stored-mm"))
for ref, other, tag in ((q, s, "stored"), (q, sf, "stored + flags"), (qm, sm, "--fp8-matmul: stored")):
    if set(ref) != set(other) or "frames" not in ref:
        bad.append(f"{tag}: tensor sets differ")
        continue
    worst = max(((ref[k].double() - other[k].double()).abs().max().item(), k) for k in ref)
    print(f"{tag} vs quantized at load: {len(ref)} tensors, max difference {worst[0]:g} ({worst[1]})")
    if worst[0] != 0:
        bad.append(f"{tag}: not bit-identical to quantized at load ({worst[1]})")
if (sm["latents"] - s["latents"]).abs().max().item() == 0:
    bad.append("--fp8-matmul gives the latents of the dequantized product: the flag did not reach the stored weights")
rq, rs, rsf = (json.load(open(f"{work}/{n}.json")) for n in ("quantized", "stored", "stored-flag"))
# The transformers' files only: UMT5 (text_encoder) holds no float8 weight here.
want = {"quantized": {"stored": 0, "quantized": stored_count, "text_encoder": 0, "matmul": False, "layers": "ffn"},
        "stored": {"stored": stored_count, "quantized": 0, "text_encoder": 0, "matmul": False},
        "stored-flag": {"stored": stored_count, "quantized": 0, "text_encoder": 0, "matmul": False, "layers": "ffn"}}
for name, r in (("quantized", rq), ("stored", rs), ("stored-flag", rsf)):
    if r.get("float8_weights") != want[name]:
        bad.append(f"{name}: report float8_weights {r.get('float8_weights')}, want {want[name]}")
for i, (a, b) in enumerate(zip(rq["ranks"], rs["ranks"])):
    if a["param_bytes_resident"] != b["param_bytes_resident"]:
        bad.append(f"rank {i}: resident {b['param_bytes_resident']} stored vs {a['param_bytes_resident']} quantized")
    if not b["disk_bytes_read"] < a["disk_bytes_read"]:
        bad.append(f"rank {i}: read {b['disk_bytes_read']} bytes stored, not fewer than {a['disk_bytes_read']}")
print(f"rank 0: resident {rs['ranks'][0]['param_bytes_resident']}, read {rq['ranks'][0]['disk_bytes_read']} -> "
      f"{rs['ranks'][0]['disk_bytes_read']}; float8 weights {rs.get('float8_weights')}")
side = json.load(open(f"{work}/stored.mp4.json"))
if side.get("float8_weights") != want["stored"]:
    bad.append(f"sidecar float8_weights {side.get('float8_weights')}")
tags = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format_tags", "-of", "json",
                                  f"{work}/stored.mp4"], capture_output=True, text=True, check=True).stdout)
meta = {k.lower(): v for k, v in tags.get("format", {}).get("tags", {}).items()}
if json.loads(meta.get("float8_weights", "null")) != want["stored"]:
    bad.append(f"MP4 metadata float8_weights {meta.get('float8_weights')}")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY
summary
