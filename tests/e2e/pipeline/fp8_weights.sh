#!/usr/bin/env bash
# Float8 weights from the command line (--weight-dtype float8_e4m3fn) on a 4-block checkpoint (blocks 1 and 2
# can be float8; the first and last stay in --dtype):
# - layout independence: the same latents and frames, bit for bit, where the arithmetic is provably the same:
#   HSDP 4 against one rank, Ulysses 2 x HSDP 2 against Ulysses 2 alone (the same token rows per product), for
#   dequantize-then-matmul and for --fp8-matmul (each rank quantizes its own slice; the row scales are agreed),
#   at two CPU kernel levels (lib.sh cpu_kernel_levels). Ulysses against one rank is another summation order
#   (cfg_batch.sh bounds it);
# - the report's per-rank resident weight bytes and per-step gathered bytes are lower than bfloat16's by the
#   float8 share: 1 byte saved per float8 element (2 -> 1), to within the float32 row scales and padding;
# - the sidecar records the weight format; float8 flags without --weight-dtype are usage errors.
#   fp8_weights.sh GENERATE COMPARE MAKE_CHECKPOINT WORK_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; mk=$3; work=$4
rm -rf "$work"; mkdir -p "$work"
export OMP_NUM_THREADS=1  # the one-rank run too (mpi gives each rank one): a product split over threads sums apart
"$mk" --kind t2v-a14b --preset tiny-heads4 --layers 4 --text-layers 4 --seed 3 --output "$work/model" >/dev/null 2>&1 ||
  fail "omni-make-checkpoint failed"
common=(--model "$work/model" --prompt "A red fox in the snow" --negative-prompt "blurry" --height 32 --width 48
        --num-frames 5 --num-inference-steps 2 --max-sequence-length 16 --dtype bfloat16 --seed 5 --log-level warn)
# The saved tensors, not the MP4s: the latents and float frames, before the 8-bit rounding and the encoder.
same() {  # same A B: identical latents and frames
  if "$cmp" "$work/$1.safetensors" "$work/$2.safetensors" --keys latents,frames --tolerance 0 \
    >"$work/cmp-$1-$2.log" 2>&1; then pass "$1 == $2 (latents and frames identical)"
  else flunk "$1 != $2"; cat "$work/cmp-$1-$2.log"; fi
}
differs() {  # differs A B WHAT: A's frames are not B's (else WHAT's float8 weights were not used)
  if "$cmp" "$work/$1.safetensors" "$work/$2.safetensors" --keys frames --tolerance 0 >/dev/null 2>&1; then
    flunk "$1 frames equal $2's: the float8 weights did not reach the $3"
  else
    pass "$1 frames differ from $2's"
  fi
}
for level in $(cpu_kernel_levels); do
  use_cpu_kernels "$level"
  for mode in dequant matmul; do
    extra=(--weight-dtype float8_e4m3fn --fp8-layers all)
    [ $mode = matmul ] && extra+=(--fp8-matmul)
    tag=$mode
    [ $level = native ] || tag=$level-$mode
    saved_run "$tag-np1" 1 "${extra[@]}"
    saved_run "$tag-hsdp4" 4 "${extra[@]}" --layout manual --use-hsdp --hsdp-shard-size 4
    saved_run "$tag-u2" 2 "${extra[@]}" --layout manual --ulysses-degree 2
    saved_run "$tag-u2h2" 4 "${extra[@]}" --layout manual --ulysses-degree 2 --use-hsdp --hsdp-shard-size 2 \
      --hsdp-replicate-size 2
    same "$tag-hsdp4" "$tag-np1"
    same "$tag-u2h2" "$tag-u2"
  done
done
use_cpu_kernels native
saved_run bf16-hsdp4 4 --layout manual --use-hsdp --hsdp-shard-size 4
differs dequant-np1 bf16-hsdp4 transformer

# Bytes: the float8 elements of each expert (Linear weights of blocks 1..2, biases aside), from the files.
python3 - "$work" <<'PY' && pass "resident and gathered bytes: bfloat16's minus the float8 share" || flunk "float8 bytes"
import json, os, re, struct, sys
work = sys.argv[1]
experts = []  # (float8 elements, their rows) per expert
for expert in ("transformer", "transformer_2"):
    path = os.path.join(work, "model", expert)
    if not os.path.isdir(path):
        continue
    f8 = rows = 0
    for name in os.listdir(path):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(path, name), "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(n))
        for key, info in header.items():
            m = re.match(r"blocks\.(\d+)\.(attn1|attn2|ffn)\..*weight$", key)
            if m and int(m.group(1)) in (1, 2) and len(info["shape"]) == 2:
                f8 += info["shape"][0] * info["shape"][1]
                rows += info["shape"][0]
    experts.append((f8, rows))
bf = json.load(open(os.path.join(work, "bf16-hsdp4.json")))["ranks"]
fp = json.load(open(os.path.join(work, "dequant-hsdp4.json")))["ranks"]
# Each rank's slice of a float8 weight is 1 byte per element instead of 2 (a quarter of the elements at
# HSDP 4), and it holds the float32 row scales whole. A step gathers the other 3/4 of one expert's units.
want_resident = sum(f8 / 4 - 4 * rows for f8, rows in experts)
want_gathered = {3 * f8 / 4 for f8, _ in experts}
bad = []
for r, (b, f) in enumerate(zip(bf, fp)):
    saved = b["param_bytes_resident"] - f["param_bytes_resident"]
    if abs(saved - want_resident) > 64:
        bad.append(f"rank {r}: resident saved {saved}, want {want_resident:.0f} +- 64 (padding)")
    g_saved = b["gathered_bytes_per_step"] - f["gathered_bytes_per_step"]
    if not any(abs(g_saved - w) <= 64 for w in want_gathered):
        bad.append(f"rank {r}: gathered per step saved {g_saved}, want one of {sorted(want_gathered)} +- 64")
print(f"float8 elements per expert {[e[0] for e in experts]}; rank 0 resident {bf[0]['param_bytes_resident']} -> "
      f"{fp[0]['param_bytes_resident']}, gathered per step {bf[0]['gathered_bytes_per_step']} -> "
      f"{fp[0]['gathered_bytes_per_step']}")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY

# UMT5 in float8 (--text-encoder-weight-dtype): the middle blocks' 7 Linear weights each, on one rank and at
# HSDP 4 the same frames; the resident bytes are bfloat16's minus UMT5's float8 share; the report counts them.
saved_run te-np1 1 --text-encoder-weight-dtype float8_e4m3fn --fp8-layers all
saved_run te-hsdp4 4 --text-encoder-weight-dtype float8_e4m3fn --fp8-layers all --layout manual --use-hsdp --hsdp-shard-size 4
same te-hsdp4 te-np1
differs te-hsdp4 bf16-hsdp4 "text encoder"
python3 - "$work" <<'PY' && pass "UMT5 float8: bytes and counts" || flunk "UMT5 float8 bytes"
import json, os, re, struct, sys
work = sys.argv[1]
f8 = rows = weights = 0
path = os.path.join(work, "model", "text_encoder")
for name in os.listdir(path):
    if not name.endswith(".safetensors"):
        continue
    with open(os.path.join(path, name), "rb") as fh:
        header = json.loads(fh.read(struct.unpack("<Q", fh.read(8))[0]))
    for key, info in header.items():
        m = re.match(r"encoder\.block\.(\d+)\.layer\.\d\.(SelfAttention\.[qkvo]|DenseReluDense\.(wi_0|wi_1|wo))\.weight$", key)
        if m and int(m.group(1)) in (1, 2):
            f8 += info["shape"][0] * info["shape"][1]
            rows += info["shape"][0]
            weights += 1
bf = json.load(open(os.path.join(work, "bf16-hsdp4.json")))
te = json.load(open(os.path.join(work, "te-hsdp4.json")))
bad = []
if weights != 14:
    bad.append(f"{weights} UMT5 float8 weights in the file's middle blocks, want 14")
want = {"stored": 0, "quantized": weights, "text_encoder": weights, "matmul": False, "layers": "all"}
if te.get("float8_weights") != want:
    bad.append(f"report float8_weights {te.get('float8_weights')}, want {want}")
for r, (b, t) in enumerate(zip(bf["ranks"], te["ranks"])):
    saved = b["param_bytes_resident"] - t["param_bytes_resident"]
    if abs(saved - (f8 / 4 - 4 * rows)) > 64:
        bad.append(f"rank {r}: resident saved {saved}, want {f8 / 4 - 4 * rows:.0f} +- 64 (padding)")
print(f"UMT5 float8 elements {f8} in {weights} weights; rank 0 resident {bf['ranks'][0]['param_bytes_resident']} -> "
      f"{te['ranks'][0]['param_bytes_resident']}")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY

python3 - "$work/dequant-np1.mp4.json" <<'PY' && pass "sidecar records the weight format" || flunk "sidecar"
import json, sys
s = json.load(open(sys.argv[1]))["settings"]
assert s["weight-dtype"] == "float8_e4m3fn" and s["fp8-layers"] == "all" and s["fp8-matmul"] is False, s
PY

# A model of two blocks has no block between the first and the last: nothing can be float8, and the run says so.
"$mk" --kind t2v-a14b --preset tiny-heads4 --layers 2 --seed 3 --output "$work/model2" >/dev/null 2>&1 ||
  fail "omni-make-checkpoint --layers 2 failed"
out=$("$gen" "${common[@]}" --model "$work/model2" --num-inference-steps 1 --weight-dtype float8_e4m3fn \
  --output "$work/two.mp4" 2>&1) || { echo "$out"; fail "the two-block run exited non-zero"; }
if grep -q "warn.*--weight-dtype float8_e4m3fn: no weight of the transformer is held in float8" <<<"$out" &&
   ! grep -q float8_weights "$work/two.mp4.json"; then
  pass "two blocks: warned that nothing is float8"
else
  flunk "two blocks: no warning that nothing is float8"; echo "$out"
fi

expect "--fp8-matmul without float8 weights" 1 2 "--fp8-matmul multiplies float8 weights" -- \
  "${common[@]}" --fp8-matmul --output "$work/bad.mp4"
expect "--fp8-layers without float8 weights" 1 2 "needs --weight-dtype or --text-encoder-weight-dtype float8_e4m3fn" -- \
  "${common[@]}" --fp8-layers all --output "$work/bad.mp4"
[ ! -e "$work/bad.mp4" ] || flunk "a usage error left $work/bad.mp4"
summary
