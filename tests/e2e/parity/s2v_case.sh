#!/usr/bin/env bash
# Parity of omni-generate's Wan2.2-S2V (speech to video) with Wan2.2's own WanS2V.generate, through the command
# line, in float32 on the CPU:
#   s2v_case.sh GENERATE COMPARE NP CASE_DIR CASE_WORK [omni-generate flags...]
# CASE_DIR is a case of tests/data/reference/s2v-pipeline (tools/reference/s2v/record_s2v_pipeline.py, packed by
# pack_pipeline_data.py: expected.safetensors under --save-tensors' names, case.json); the model is the folder's
# model/ (Wan2.2-S2V-14B's original layout, tiny). Checked against the recording:
#   - each clip's initial noise exactly (the CPU generator seeded seed + r);
#   - the audio features, the reference latent, the first clip's motion and pose latents and its steps within
#     1e-5 of their largest magnitude (the latents reach ~10: float32 rounding through the steps is ~2e-5 of it
#     in absolute terms);
#   - the later clips (they start from the earlier ones' decoded frames, which the random-weight VAE amplifies)
#     within 1e-4 of their largest magnitude, the frames within 1e-4;
#   - the MP4's audio stream: AAC, as long as the video within one frame; the sidecar names the recording's
#     SHA-256, the clips, and where the muxed track starts (3 frames into the span; with --start-from-ref at it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; compare=$2; np=$3; case_dir=$4; work=$5; shift 5
model=$(dirname "$case_dir")/model
exp=$case_dir/expected.safetensors
rm -rf "$work"; mkdir -p "$work"
cmd=("$gen" --model "$model" --device cpu --dtype float32 --vae-dtype float32 --output "$work/out.mp4"
     --save-tensors "$work/tensors.safetensors" --log-level warn "$@")
start=$(date +%s%N)
launch "$np" "${cmd[@]}"
echo "omni-generate on $np rank(s): $((($(date +%s%N) - start) / 1000000)) ms"

# The recording's keys by group (python3 reads the safetensors header).
groups=$(python3 - "$exp" "$case_dir/case.json" <<'PY'
import json, re, struct, sys
path, case = sys.argv[1], json.load(open(sys.argv[2]))
with open(path, "rb") as f:
    keys = set(json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))) - {"__metadata__"}
steps, clips = case["steps"], case["clips"]
first = [f"step{i:02d}.latents" for i in range(steps)]
later = [f"step{i:02d}.latents" for i in range(steps, steps * clips)]
missing = [k for k in first + later if k not in keys]
if missing or f"step{steps * clips:02d}.latents" in keys:
    sys.exit(f"FAIL: {path} does not have exactly {steps * clips} steps")
groups = {
    "init": [f"clip{r:02d}.init_latents" for r in range(clips)],
    "first_1e5": ["audio_embeds", "reference_latents", "clip00.motion_latents", "clip00.cond_states", "clip00.latents"]
                 + first,
    "later_1e4": later + [f"clip{r:02d}.{k}" for r in range(1, clips)
                          for k in ("motion_latents", "cond_states", "latents")],
}
for name, group in groups.items():
    print(f"{name}={','.join(group)}")
PY
)
eval "$groups"

status=0
source "$(dirname "${BASH_SOURCE[0]}")/check.sh"
saved=$work/tensors.safetensors
check init "$saved" 0 "$init"
check first_1e5 "$saved" 1e-5 "$first_1e5" --rel-tolerance
check later_1e4 "$saved" 1e-4 "$later_1e4" --rel-tolerance
check frames "$saved" 1e-4 frames

# The sound beside the picture: AAC, the video's duration within one frame (1/16 s), and the sidecar's record.
probe=$(ffprobe -v error -show_entries stream=codec_type,codec_name,duration -of csv=p=0 "$work/out.mp4")
video_s=$(echo "$probe" | awk -F, '$2 == "video" { print $3 }')
audio_s=$(echo "$probe" | awk -F, '$2 == "audio" { print $3 }')
audio_codec=$(echo "$probe" | awk -F, '$2 == "audio" { print $1 }')
if [ "$audio_codec" != aac ] || ! python3 -c "import sys; sys.exit(abs($video_s - $audio_s) > 1 / 16 + 1e-9)"; then
  echo "FAIL: the MP4's streams: $probe"
  status=1
fi
python3 - "$work/out.mp4.json" "$case_dir/case.json" <<'PY' || status=1
import hashlib, json, os, sys
side, case = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
audio = side.get("audio", {})
want = hashlib.sha256(open(audio.get("file", "/dev/null"), "rb").read()).hexdigest()
# The track starts where frame 0's sound is: 3 frames into the span, or at it with --start-from-ref (no frame
# dropped).
lead = (0 if case.get("start_from_ref") else 3) / 16
muxed = audio.get("muxed_from", -1) - audio.get("start", 0)
ok = audio.get("sha256") == want and side.get("clips") == case["clips"] and side.get("task") == "s2v" \
    and abs(muxed - lead) < 1e-9
print(f"sidecar    {'ok' if ok else 'FAIL'} audio {os.path.basename(audio.get('file', '?'))} clips {side.get('clips')}"
      f" muxed from {muxed:g} s into the span (want {lead:g})")
sys.exit(0 if ok else 1)
PY
[ $status = 0 ] || fail "$case_dir on $np rank(s) $*"
echo "ok: $case_dir on $np rank(s)"
