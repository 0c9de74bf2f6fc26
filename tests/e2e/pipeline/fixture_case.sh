#!/usr/bin/env bash
# End-to-end parity of one fixture case through the command line:
#   fixture_case.sh GENERATE COMPARE NP CASE_DIR WORK_DIR WIDTH HEIGHT FRAMES STEPS [omni-generate flags...]
# Runs omni-generate (under mpirun when NP > 1) with --save-tensors, then checks against the fixture's
# expected.safetensors: init_latents exactly, prompt embeddings to 1e-5, every stepNN.latents and the frames to
# 1e-4 (float32, CPU); and the MP4: ffprobe says h264, yuv420p, the size and frame count of the saved frames and
# the requested fps; decoding it gives frames within 35 dB (luma) PSNR of the saved ones.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; compare=$2; np=$3; case_dir=$4; work=$5; width=$6; height=$7; frames=$8; nsteps=$9; shift 9
rm -rf "$work"; mkdir -p "$work"
fps=11
cmd=("$gen" --model "$case_dir/model" --dtype float32 --vae-dtype float32 --output "$work/out.mp4"
     --save-tensors "$work/tensors.safetensors" --dump-tensors "$work/dump.safetensors" --report "$work/report.json"
     --fps $fps --log-level warn "$@")
launch "$np" "${cmd[@]}"
exp="$case_dir/expected.safetensors"
t="$work/tensors.safetensors"
steps=$(for ((i = 0; i < nsteps; i++)); do printf 'step%02d.latents,' "$i"; done)
"$compare" "$t" "$exp" --keys init_latents --tolerance 0
"$compare" "$t" "$exp" --keys prompt_embeds,negative_prompt_embeds --tolerance 1e-5
"$compare" "$t" "$exp" --keys "${steps}frames" --tolerance 1e-4

# --dump-tensors lines up with the reference's own records: every transformer call's inputs and output (cond and
# uncond; with cfg parallelism the writing rank runs the cond calls only), the text encoder, the VAE.
cfg_parallel=0; image=0
for a in "$@"; do case "$a" in --image) image=1 ;; esac; done
# The layout that ran (given, or chosen by --layout auto), from the sidecar.
if grep -q '"layout": "[^"]*x cfg 2 x' "$work/out.mp4.json"; then cfg_parallel=1; fi
keys="prompt.input_ids,prompt.attention_mask,prompt.last_hidden_state,negative.input_ids,negative.attention_mask"
keys="$keys,vae_decode.in,vae_decode.out"
[ $image = 1 ] && keys="$keys,vae_encode.in,vae_encode.mean"
for ((c = 0; c < 2 * nsteps; c++)); do
  [ $cfg_parallel = 1 ] && [ $((c % 2)) = 1 ] && continue
  for f in hidden_states timestep encoder_hidden_states out; do keys="$keys,$(printf 'call%02d' $c).$f"; done
done
"$compare" "$work/dump.safetensors" "$exp" --keys "$keys" --tolerance 1e-4 | tail -1

# The video: what ffprobe reads from it.
probe=$(ffprobe -v error -select_streams v:0 -count_frames \
        -show_entries stream=codec_name,pix_fmt,width,height,nb_read_frames,r_frame_rate -of default=nw=1 "$work/out.mp4")
echo "$probe"
want="codec_name=h264
width=$width
height=$height
pix_fmt=yuv420p
r_frame_rate=$fps/1
nb_read_frames=$frames"
for line in $want; do
  grep -qx "$line" <<<"$probe" || fail "ffprobe lacks '$line'"
done
# Luma PSNR: these random-weight outputs are pixel noise, whose colour 4:2:0 subsampling alone limits to ~25-30 dB
# whatever the encoder does; the luma error is the codec's (about 39 dB at the default crf 18).
"$compare" "$work/out.mp4" "$t" --frames-key frames --psnr-min 35 --luma
test -f "$work/out.mp4.json" || fail "no JSON sidecar"
# The sidecar records what ran: the checkpoint's own flow_shift (and boundary_ratio), not the preset's.
python3 - "$work/out.mp4.json" "$case_dir/model" <<'PY' || exit 1
import json, sys
side = json.load(open(sys.argv[1]))
shift = json.load(open(sys.argv[2] + "/scheduler/scheduler_config.json"))["flow_shift"]
ratio = json.load(open(sys.argv[2] + "/model_index.json")).get("boundary_ratio")
got = side["settings"]
if float(got["flow-shift"]) != shift or not side["sources"]["flow-shift"].startswith("checkpoint "):
    sys.exit(f"FAIL: sidecar flow-shift {got['flow-shift']} ({side['sources']['flow-shift']}), checkpoint {shift}")
if ratio is not None and float(got["boundary-ratio"]) != ratio:
    sys.exit(f"FAIL: sidecar boundary-ratio {got['boundary-ratio']}, checkpoint {ratio}")
print(f"sidecar: flow-shift {got['flow-shift']} and boundary-ratio {got['boundary-ratio']} are the checkpoint's")
PY
test -f "$work/report.json" || fail "no report"
echo "ok: $case_dir on $np rank(s) $*"
