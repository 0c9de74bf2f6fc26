#!/usr/bin/env bash
# Wan2.2-Animate's runs beyond one video's parity (tests/e2e/parity animate-*):
#  1. --animate-inputs DIR (the names Wan2.2's preprocess_data.py writes) gives the frames of the same files named
#     by flags; JSON Lines take pose_video, face_video, background_video, mask_video and animate_mode per video.
#  2. A run stopped after its first segment (an injected fault on a rank that does not write) and started again
#     resumes at the second segment: its log and sidecar say segment 1 was reused, its frames equal the run that
#     was not stopped, and the resume file is gone. On one rank and on 4 (ring 2 x cfg 2, HSDP: the writing rank
#     hands the count and the tail to its group).
#  3. A resume file left by a run with another seed is set aside with a warning: the video is made whole.
#   animate_runs.sh GENERATE REFERENCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; ref=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
case_dir=$ref/animate-replace
common=(--model "$ref/animate-tiny/model" --device cpu --dtype float32 --vae-dtype float32 --prompt "A woman dances"
        --negative-prompt "blurry" --height 32 --width 48 --segment-frames 9 --num-inference-steps 3
        --guidance-scale 2 --seed 7 --max-sequence-length 64 --animate-mode replace)
files=(--image "$case_dir/ref.jpg" --pose-video "$case_dir/pose.mp4" --face-video "$case_dir/face.mp4"
       --background-video "$case_dir/bg.mp4" --mask-video "$case_dir/mask.mp4")
# The decoded frames' digest: equal frames, equal digests (H.264 of the same levels, decoded by FFmpeg).
digest() { ffmpeg -v error -i "$1" -f rawvideo -pix_fmt rgb24 - | sha256sum | cut -d' ' -f1; }

# 1. The flags, the folder, a JSON Lines line.
"$gen" "${common[@]}" "${files[@]}" --output "$work/flags.mp4" --log-level warn
mkdir -p "$work/inputs"
cp "$case_dir/pose.mp4" "$work/inputs/src_pose.mp4"; cp "$case_dir/face.mp4" "$work/inputs/src_face.mp4"
cp "$case_dir/bg.mp4" "$work/inputs/src_bg.mp4"; cp "$case_dir/mask.mp4" "$work/inputs/src_mask.mp4"
cp "$case_dir/ref.jpg" "$work/inputs/src_ref.png"  # preprocess_data.py copies the image under this name as it is
"$gen" "${common[@]}" --animate-inputs "$work/inputs" --output "$work/folder.mp4" --log-level warn
[ "$(digest "$work/flags.mp4")" = "$(digest "$work/folder.mp4")" ] || fail "--animate-inputs: other frames"
pass "--animate-inputs DIR gives the frames of the files named by flags"
cat > "$work/batch.jsonl" <<JSONL
{"prompt": "A woman dances", "output": "$work/line1.mp4", "animate_mode": "animate", "pose_video": "$case_dir/pose.mp4", "face_video": "$case_dir/face.mp4", "image": "$case_dir/ref.jpg"}
{"prompt": "A woman dances", "output": "$work/line2.mp4", "animate_mode": "replace", "pose_video": "$case_dir/pose.mp4", "face_video": "$case_dir/face.mp4", "background_video": "$case_dir/bg.mp4", "mask_video": "$case_dir/mask.mp4", "image": "$case_dir/ref.jpg"}
JSONL
jsonl=(--model "$ref/animate-tiny/model" --device cpu --dtype float32 --vae-dtype float32 --negative-prompt blurry
       --height 32 --width 48 --segment-frames 9 --num-inference-steps 3 --guidance-scale 2 --seed 7
       --max-sequence-length 64 --log-level warn)
"$gen" "${jsonl[@]}" --prompts-file "$work/batch.jsonl"
[ "$(digest "$work/line2.mp4")" = "$(digest "$work/flags.mp4")" ] || fail "JSON Lines replace line: other frames"
[ "$(digest "$work/line1.mp4")" != "$(digest "$work/flags.mp4")" ] || fail "JSON Lines animate line: replace's frames"
pass "JSON Lines: animate_mode, pose_video, face_video, background_video, mask_video per line"

# 2. Stopped after the first segment, started again: on one rank (the fault on rank 0, the writing rank, after it
#    kept segment 1), then on 4 ranks (the fault on rank 2, which does not write). resume NAME NP FAULT_RANK [flags]
resume() {
  local name=$1 np=$2 rank=$3 out; shift 3
  local run=("$gen" "${common[@]}" "${files[@]}" "$@")
  [ "$np" = 1 ] || run=(mpi "$np" -x OMNI_FAULT_INJECT "${run[@]}")
  OMNI_FAULT_INJECT= "${run[@]}" --output "$work/$name-full.mp4" --log-level warn
  out=$(OMNI_FAULT_INJECT=$rank:3 "${run[@]}" --output "$work/$name.mp4" 2>&1) && fail "$name: the stopped run exited 0"
  [ -f "$work/$name.mp4.segments.safetensors" ] && [ ! -e "$work/$name.mp4" ] ||
    { echo "$out"; ls -la "$work"; fail "$name: after the stop, want the resume file and no video"; }
  out=$(OMNI_FAULT_INJECT= "${run[@]}" --output "$work/$name.mp4" --log-level info 2>&1) ||
    { echo "$out"; fail "$name: the resumed run failed"; }
  grep -q "segments 1 to 1 of 2 reused" <<<"$out" || { echo "$out"; fail "$name: the log does not say so"; }
  # Only the second segment's steps ran.
  [ "$(grep -c 'generate step' <<<"$out")" = 3 ] || { echo "$out"; fail "$name: want 3 steps run"; }
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(s['segments_reused'] != 1 or s['segments'] != 2)" \
    "$work/$name.mp4.json" || fail "$name: the sidecar's segments_reused"
  [ ! -e "$work/$name.mp4.segments.safetensors" ] || fail "$name: the resume file is still there"
  [ "$(digest "$work/$name.mp4")" = "$(digest "$work/$name-full.mp4")" ] || fail "$name: other frames than unstopped"
  pass "$name: stopped by rank $rank after segment 1, resumed at segment 2 with the unstopped run's frames"
}
resume np1 1 0
resume ring2_cfg2_hsdp 4 2 --ring-degree 2 --cfg-parallel-size 2 --use-hsdp

# 3. A resume file of another seed: set aside, the video made whole (its first segment's steps run too).
OMNI_FAULT_INJECT=0:3 "$gen" "${common[@]}" "${files[@]}" --output "$work/seed.mp4" --log-level warn 2>/dev/null &&
  fail "seed: the stopped run exited 0"
out=$("$gen" "${common[@]}" "${files[@]}" --seed 8 --output "$work/seed.mp4" --log-level info 2>&1) ||
  { echo "$out"; fail "seed: the run failed"; }
grep -q "was left by a run with other inputs or settings" <<<"$out" || { echo "$out"; fail "seed: no warning"; }
[ "$(grep -c 'generate step' <<<"$out")" = 6 ] || { echo "$out"; fail "seed: want all 6 steps"; }
"$gen" "${common[@]}" "${files[@]}" --seed 8 --output "$work/seed8.mp4" --log-level warn
[ "$(digest "$work/seed.mp4")" = "$(digest "$work/seed8.mp4")" ] || fail "seed: not the seed-8 video"
pass "a resume file of another seed is set aside: the whole video is made"
summary
