#!/usr/bin/env bash
# --vae-parallel: the ranks of a data-parallel group decode a video together, a band of latent rows each with
# halo rows from their neighbours; the frames must be the one-rank decode's within 1e-5 (float32, the same
# latents). Per case: one rank, then 2 ranks (ulysses 2), 4 ranks (cfg 2 x ulysses 2 with HSDP) and 4 ranks as 2
# data-parallel groups of 2 (dp 2 x ulysses 2), all with --vae-parallel; the heights give bands of unequal rows.
#   vae_parallel.sh GENERATE COMPARE REFERENCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; ref=$3; work=$4
rm -rf "$work"; mkdir -p "$work"
common=(--num-frames 9 --num-inference-steps 2 --guidance-scale 4 --seed 5 --max-sequence-length 16 --dtype float32
        --device cpu --log-level warn --prompt "A lighthouse on a cliff")
layouts=("2|--ulysses-degree 2" "4|--cfg-parallel-size 2 --ulysses-degree 2 --use-hsdp"
         "4|--ulysses-degree 2 --use-hsdp --hsdp-shard-size 4")
# case|model|flags: 10, 6 and 4 latent rows (bands 5/5, 3/3/2/2; 2/2/1/1; 1/1/1/1 and 2/2).
cases=("t2v|t2v-a14b-tiny/model|--height 80 --width 48 --guidance-scale-2 3"
       "i2v|i2v-a14b-tiny/model|--height 48 --width 32 --image $ref/i2v-a14b-tiny/image.png"
       "ti2v|ti2v-5b-tiny/model|--height 96 --width 32"
       "t2v-vae-blocks2|t2v-vae-blocks2/model|--height 32 --width 48 --guidance-scale-2 3"
       "ti2v-vae-blocks2|ti2v-vae-blocks2/model|--height 64 --width 32")
for c in "${cases[@]}"; do
  IFS='|' read -r name model flags <<<"$c"
  # shellcheck disable=SC2086 # flags are words
  "$gen" --model "$ref/$model" "${common[@]}" $flags --output "$work/$name-1.mp4" \
    --save-tensors "$work/$name-1.safetensors"
  for l in "${layouts[@]}"; do
    np=${l%%|*}; lflags=${l#*|}; tag=$name-$(echo "$np $lflags" | tr -c 'a-z0-9' _)
    # shellcheck disable=SC2086
    mpi "$np" "$gen" --model "$ref/$model" "${common[@]}" $flags $lflags --vae-parallel --output "$work/$tag.mp4" --save-tensors "$work/$tag.safetensors" \
      --report "$work/$tag.json"
    "$cmp" "$work/$tag.safetensors" "$work/$name-1.safetensors" --keys latents,frames --tolerance 1e-5 >/dev/null ||
      { "$cmp" "$work/$tag.safetensors" "$work/$name-1.safetensors" --keys latents,frames --tolerance 1e-5; exit 1; }
    # Every rank of the writing group decoded (its own peak and seconds in the report).
    python3 - "$work/$tag.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
busy = [x for x in r["ranks"] if x["decode_seconds"] > 0]
group = r["layout"]["cfg"] * r["layout"]["ulysses"] * r["layout"]["ring"]
assert len(busy) >= group, f"only {len(busy)} ranks decoded, want the {group} of the writing group"
assert all("vae_peak_bytes" in x for x in r["ranks"])
PY
    echo "ok: $name on $np ranks ($lflags --vae-parallel)"
  done
done
# A height the group cannot split (2 latent rows over 4 ranks): a usage error before anything runs.
out=$(mpi 4 "$gen" --model "$ref/t2v-a14b-tiny/model" \
  "${common[@]}" --height 16 --width 48 --ulysses-degree 4 --vae-parallel --output "$work/small.mp4" 2>&1) && exit 1
grep -q "vae-parallel: 4 ranks per data-parallel group cannot split a 16-pixel height" <<<"$out" || { echo "$out"; exit 1; }
echo "ok: every --vae-parallel decode equals the one-rank decode"
