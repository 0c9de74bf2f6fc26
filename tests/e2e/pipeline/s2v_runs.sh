#!/usr/bin/env bash
# Wan2.2-S2V's runs beyond one video's parity (tests/e2e/parity s2v-*), on its tiny original folder:
#  1. The sound in the MP4 is the recording, in step with the frames: frame k was made from the audio at (k + 3) / 16 s
#     (the first clip's first 3 frames are dropped), so the AAC track decoded back matches the recording from
#     3 frames in (an SNR floor), far better than from its start, and lasts the video's duration within a frame.
#  2. --audio-start / --audio-duration cut the recording: 0.7 s make one clip (9 frames), the sidecar records the
#     span and the file's SHA-256; JSON Lines take audio and audio_duration per line.
#  3. A run stopped after its first clip (an injected fault) and started again resumes at the second clip: its log
#     and sidecar say clip 1 was reused, its frames equal the run that was not stopped, the resume file is gone.
#     On one rank and on 2 (cfg 2: the fault on rank 1, which does not write), and with --start-from-ref (no
#     frame of the first clip dropped: 24 frames).
#  4. Videos of a list with different clip counts on two data-parallel groups: each its one-rank video; where an
#     HSDP shard group spans the groups (they run in lockstep), one line.
#  5. A ComfyUI-style transformer file (Wan's names under "model.diffusion_model.", no config.json) replaces the
#     folder's transformer with --transformer: the same frames.
#   s2v_runs.sh GENERATE REFERENCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; ref=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
in=$ref/s2v-pipeline/inputs
common=(--model "$ref/s2v-pipeline/model" --device cpu --dtype float32 --vae-dtype float32 --prompt "a woman talks"
        --height 64 --width 64 --num-frames 12 --num-inference-steps 3 --guidance-scale 4.5 --seed 3)
files=(--image "$in/ref_80x96.png" --audio "$in/audio.wav")
digest() { ffmpeg -v error -i "$1" -f rawvideo -pix_fmt rgb24 - | sha256sum | cut -d' ' -f1; }
side() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))$2)" "$1.json"; }

# 1. The sound.
"$gen" "${common[@]}" "${files[@]}" --output "$work/full.mp4" --log-level warn
ffmpeg -v error -i "$work/full.mp4" -vn -f s16le -ac 1 -ar 16000 "$work/muxed.raw"
ffmpeg -v error -i "$in/audio.wav" -f s16le -ac 1 -ar 16000 "$work/source.raw"
python3 - "$work/muxed.raw" "$work/source.raw" <<'PY'
import array, math, sys
muxed, source = (array.array("h", open(p, "rb").read()) for p in sys.argv[1:3])
n = 16000 * 21 // 16  # the video: 21 frames at 16 fps
def snr(lag):
    ref = source[lag:lag + n]
    m = min(len(ref), len(muxed)) - 2048  # AAC's last frame is padding
    sig = sum(float(x) ** 2 for x in ref[:m])
    err = sum((float(a) - float(b)) ** 2 for a, b in zip(muxed[:m], ref[:m]))
    return 10 * math.log10(sig / max(err, 1e-9))
in_step, at_start = snr(3000), snr(0)  # 3 frames = 3000 samples at 16 kHz
print(f"SNR from 3 frames in {in_step:.1f} dB, from the start {at_start:.1f} dB, {len(muxed)} samples for {n}")
ok = in_step >= 20 and in_step >= at_start + 10 and abs(len(muxed) - n) <= 1000
sys.exit(0 if ok else 1)
PY
pass "the AAC track is the recording from 3 frames in, as long as the video"

# 2. A span: 0.7 s from 0.3 s make one clip of 12 frames less the first 3.
"$gen" "${common[@]}" "${files[@]}" --audio-start 0.3 --audio-duration 0.7 --output "$work/span.mp4" --log-level warn
[ "$(side "$work/span.mp4" "['clips']")" = 1 ] && [ "$(side "$work/span.mp4" "['frames']")" = 9 ] ||
  fail "--audio-duration 0.7: want 1 clip of 9 frames, sidecar $(cat "$work/span.mp4.json")"
python3 - "$work/span.mp4.json" "$in/audio.wav" <<'PY' || fail "the sidecar's audio record"
import hashlib, json, sys
a = json.load(open(sys.argv[1]))["audio"]
want = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
sys.exit(not (a["sha256"] == want and abs(a["start"] - 0.3) < 1e-9 and abs(a["duration"] - 0.7) < 1e-3
              and abs(a["muxed_from"] - 0.4875) < 1e-9))
PY
cat > "$work/batch.jsonl" <<JSONL
{"prompt": "a woman talks", "output": "$work/line1.mp4", "image": "$in/ref_80x96.png", "audio": "$in/audio.wav", "audio_start": 0.3, "audio_duration": 0.7}
{"prompt": "a woman talks", "output": "$work/line2.mp4", "image": "$in/ref_80x96.png", "audio": "$in/audio.wav"}
JSONL
"$gen" --model "$ref/s2v-pipeline/model" --device cpu --dtype float32 --vae-dtype float32 --height 64 --width 64 \
  --num-frames 12 --num-inference-steps 3 --guidance-scale 4.5 --seed 3 --prompts-file "$work/batch.jsonl" \
  --log-level warn
[ "$(digest "$work/line1.mp4")" = "$(digest "$work/span.mp4")" ] || fail "JSON Lines audio_start/duration: other frames"
[ "$(digest "$work/line2.mp4")" = "$(digest "$work/full.mp4")" ] || fail "JSON Lines audio: other frames"
pass "--audio-start / --audio-duration cut the recording (1 clip), per line in JSON Lines too"

# 3. Stopped after the first clip, started again. resume NAME NP FAULT_RANK UNSTOPPED [flags]
resume() {
  local name=$1 np=$2 rank=$3 unstopped=$4 out; shift 4
  local run=("$gen" "${common[@]}" "${files[@]}" "$@")
  [ "$np" = 1 ] || run=(mpi "$np" -x OMNI_FAULT_INJECT "${run[@]}")
  out=$(OMNI_FAULT_INJECT=$rank:3 "${run[@]}" --output "$work/$name.mp4" 2>&1) && fail "$name: the stopped run exited 0"
  [ -f "$work/$name.mp4.segments.safetensors" ] && [ ! -e "$work/$name.mp4" ] ||
    { echo "$out"; ls -la "$work"; fail "$name: after the stop, want the resume file and no video"; }
  out=$(OMNI_FAULT_INJECT= "${run[@]}" --output "$work/$name.mp4" --log-level info 2>&1) ||
    { echo "$out"; fail "$name: the resumed run failed"; }
  grep -q "clips 1 to 1 of 2 reused" <<<"$out" || { echo "$out"; fail "$name: the log does not say so"; }
  [ "$(grep -c 'generate step' <<<"$out")" = 3 ] || { echo "$out"; fail "$name: want 3 steps run"; }
  [ "$(side "$work/$name.mp4" "['clips_reused']")" = 1 ] || fail "$name: the sidecar's clips_reused"
  [ ! -e "$work/$name.mp4.segments.safetensors" ] || fail "$name: the resume file is still there"
  [ "$(digest "$work/$name.mp4")" = "$(digest "$work/$unstopped.mp4")" ] || fail "$name: other frames than unstopped"
  pass "$name: stopped by rank $rank after clip 1, resumed at clip 2 with the unstopped run's frames"
}
resume np1 1 0 full
resume cfg2 2 1 full --cfg-parallel-size 2 --layout manual
# --start-from-ref: the first clip keeps all its frames, so the resume file and the frames count differ.
"$gen" "${common[@]}" "${files[@]}" --start-from-ref --output "$work/full-ref.mp4" --log-level warn
[ "$(side "$work/full-ref.mp4" "['frames']")" = 24 ] || fail "--start-from-ref: want 2 clips of 12 frames kept whole"
resume start_ref_np1 1 0 full-ref --start-from-ref

# 5. The transformer as a ComfyUI file: the same tensors, each name prefixed (the header rewritten, the data as is).
python3 - "$ref/s2v-pipeline/model/diffusion_pytorch_model.safetensors" "$work/wan2.2_s2v_tiny.safetensors" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
renamed = {(k if k == "__metadata__" else "model.diffusion_model." + k): v for k, v in header.items()}
text = json.dumps(renamed).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY
"$gen" "${common[@]}" "${files[@]}" --transformer "$work/wan2.2_s2v_tiny.safetensors" --output "$work/comfy.mp4" \
  --log-level warn
[ "$(digest "$work/comfy.mp4")" = "$(digest "$work/full.mp4")" ] || fail "ComfyUI-style transformer: other frames"
pass "a ComfyUI-style S2V transformer file (prefixed names) replaces the folder's: the same frames"

# 4. Two videos of different clip counts (1 and 2) on two data-parallel groups that hold their own weights: each
#    the one-rank run's video. Where an HSDP shard group spans both (lockstep), one line (lib.sh's expect counts a
#    failure itself).
sed -e "s|$work/line1.mp4|$work/dp1.mp4|" -e "s|$work/line2.mp4|$work/dp2.mp4|" "$work/batch.jsonl" >"$work/batch-dp.jsonl"
batch=(--model "$ref/s2v-pipeline/model" --device cpu --dtype float32 --vae-dtype float32 --height 64 --width 64
       --num-frames 12 --num-inference-steps 3 --guidance-scale 4.5 --seed 3 --layout manual)
mpi 2 "$gen" "${batch[@]}" --prompts-file "$work/batch-dp.jsonl" --log-level warn
[ "$(digest "$work/dp1.mp4")" = "$(digest "$work/span.mp4")" ] && [ "$(digest "$work/dp2.mp4")" = "$(digest "$work/full.mp4")" ] ||
  fail "dp 2: a 1-clip and a 2-clip video made apart are not their one-rank videos"
pass "dp 2 without shared shards: a 1-clip and a 2-clip video at once, each its one-rank video"
set +e
expect lockstep_np2 2 2 "makes 2 clips but" -- "${batch[@]}" --use-hsdp --hsdp-shard-size 2 \
  --prompts-file "$work/batch-dp.jsonl" --overwrite
summary
