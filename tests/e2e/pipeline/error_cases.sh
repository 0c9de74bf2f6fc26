#!/usr/bin/env bash
# The command line's error contract on real inputs: a clear one-line error printed once, the exit code of
# docs/DESIGN.md section 5 (2 usage, 3 bad input file), found before any model is loaded, nothing written, and an
# existing output never replaced without --overwrite.
#   error_cases.sh GENERATE REFERENCE_DIR WORK_DIR
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; ref=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
t2v=(--model "$ref/t2v-a14b-tiny/model" --prompt "a fox" --height 32 --width 48 --num-frames 9
     --num-inference-steps 2 --max-sequence-length 24 --dtype float32)
i2v=(--model "$ref/i2v-a14b-tiny/model" --prompt "a city" --height 32 --width 48 --num-frames 9
     --num-inference-steps 2 --max-sequence-length 24 --dtype float32)

# expect NAME NP RC TEXT -- flags... (lib.sh): exit code RC, exactly one error line containing TEXT, model never
# loaded.
expect i2v_without_image 1 2 "needs --image" -- "${i2v[@]}" --output "$work/a.mp4"
expect i2v_without_image_np2 2 2 "needs --image" -- "${i2v[@]}" --output "$work/a.mp4"
expect missing_image 1 3 "$work/nope.png" -- "${i2v[@]}" --image "$work/nope.png" --output "$work/a.mp4"
echo "not an image" > "$work/bad.png"
expect unreadable_image 2 3 "$work/bad.png" -- "${i2v[@]}" --image "$work/bad.png" --output "$work/a.mp4"
# A JPEG cut short (Pillow: "image file is truncated") and a format we do not read (TIFF, which Pillow opens):
# exit 3 on every rank, one line naming the file, and for the TIFF the formats accepted.
head -c 1500 "$ref/i2v-jpeg/image.jpg" > "$work/cut.jpg"
expect truncated_jpeg_np2 2 3 "$work/cut.jpg" -- "${i2v[@]}" --image "$work/cut.jpg" --output "$work/a.mp4"
printf 'II*\0\010\0\0\0\0\0' > "$work/photo.tif"
expect tiff_image_np2 2 3 "supported: JPEG, PNG, WebP" -- "${i2v[@]}" --image "$work/photo.tif" --output "$work/a.mp4"
expect t2v_with_image 1 2 "takes no --image" -- "${t2v[@]}" --image "$ref/i2v-a14b-tiny/image.png" --output "$work/a.mp4"
# --last-image (first-last-frame): only with --image, only on an image-to-video model (diffusers ignores it on
# TI2V-5B), a file read like --image (a bad one found at prepare by the rank that decodes it, agreed), and enough
# frames for the last image to have a latent frame of its own.
first=$ref/i2v-flf2v/first.jpg last=$ref/i2v-flf2v/last.png
expect last_image_without_image 1 2 "--last-image needs --image" -- "${i2v[@]}" --last-image "$last" \
  --output "$work/a.mp4"
expect t2v_with_last_image 1 2 "--last-image: this model (WanPipeline, text-to-video)" -- "${t2v[@]}" \
  --image "$first" --last-image "$last" --output "$work/a.mp4"
expect ti2v_with_last_image_np2 2 2 "--last-image: this model (WanPipeline with expand_timesteps: TI2V-5B)" -- \
  --model "$ref/ti2v-5b-tiny/model" --prompt x --height 32 --width 64 --num-frames 9 --image "$first" \
  --last-image "$last" --output "$work/a.mp4"
expect missing_last_image 1 3 "$work/nope.png" -- "${i2v[@]}" --image "$first" --last-image "$work/nope.png" \
  --output "$work/a.mp4"
expect truncated_last_image_np2 2 3 "$work/cut.jpg" -- "${i2v[@]}" --image "$first" --last-image "$work/cut.jpg" \
  --output "$work/a.mp4"
expect last_image_one_frame 2 2 "--last-image needs at least 5 frames" -- "${i2v[@]}" --image "$first" \
  --last-image "$last" --num-frames 1 --output "$work/a.mp4"
# Wan2.1's CLIP models: an I2V transformer's image branch takes one image (first-last frame needs FLF2V's position
# table), and the image encoder and the transformer's branch come together (a folder missing one is refused by
# name, not run half-conditioned).
wan21=$ref/i2v-wan21-tiny/model
expect wan21_i2v_last_image_np2 2 2 "conditions its CLIP branch on one image" -- --model "$wan21" --prompt x \
  --height 32 --width 48 --num-frames 5 --image "$first" --last-image "$last" --output "$work/a.mp4"
# --image-encoder with a file that is no CLIP (here a VAE): one line naming the file and the three name layouts read.
expect image_encoder_not_clip_np2 2 3 "not a CLIP image encoder" -- --model "$wan21" --prompt x --height 32 \
  --width 48 --num-frames 5 --image "$first" --image-encoder "$ref/t2v-a14b-tiny/model/vae" --output "$work/a.mp4"
# model_folder NAME SOURCE INDEX_EDIT: a copy of SOURCE's model_index.json edited by python, the components linked.
model_folder() {
  mkdir -p "$work/$1"
  for c in "$2"/*/; do ln -sfn "$c" "$work/$1/$(basename "$c")"; done
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $3; json.dump(j, open(sys.argv[2], 'w'))" \
    "$2/model_index.json" "$work/$1/model_index.json"
}
model_folder no_clip "$wan21" 'j["image_encoder"] = [None, None]; j["image_processor"] = [None, None]'
expect wan21_without_image_encoder 1 3 "has no image_encoder" -- --model "$work/no_clip" --prompt x \
  --height 32 --width 48 --num-frames 5 --image "$first" --output "$work/a.mp4"
model_folder clip_no_branch "$ref/i2v-a14b-tiny/model" \
  'j["image_encoder"] = ["transformers", "CLIPVisionModel"]; j["image_processor"] = ["transformers", "CLIPImageProcessor"]'
ln -sfn "$wan21/image_encoder" "$work/clip_no_branch/image_encoder"
ln -sfn "$wan21/image_processor" "$work/clip_no_branch/image_processor"
expect image_encoder_without_branch 1 3 "the transformer has no CLIP image branch" -- --model "$work/clip_no_branch" \
  --prompt x --height 32 --width 48 --num-frames 5 --image "$first" --output "$work/a.mp4"
# --video (video-to-video): a file read as load_video reads it, on a text-to-video model, without --image, with a
# strength in (0, 1] that runs a step, and enough frames for --num-frames.
clip=$ref/t2v-v2v/clip.mp4
expect missing_video_np2 2 3 "$work/nope.mp4" -- "${t2v[@]}" --video "$work/nope.mp4" --output "$work/a.mp4"
echo "not a video" > "$work/bad.mp4"
expect unreadable_video 1 3 "$work/bad.mp4" -- "${t2v[@]}" --video "$work/bad.mp4" --output "$work/a.mp4"
ffmpeg -v error -y -f lavfi -i "sine=frequency=440:duration=0.5" -c:a aac "$work/sound.m4a"
expect audio_only_video_np2 2 3 "has no video stream" -- "${t2v[@]}" --video "$work/sound.m4a" --output "$work/a.mp4"
expect strength_zero 1 2 "--strength must lie in (0, 1], got 0" -- "${t2v[@]}" --video "$clip" --strength 0 \
  --output "$work/a.mp4"
expect strength_too_big 1 2 "--strength must lie in (0, 1], got 1.5" -- "${t2v[@]}" --video "$clip" --strength 1.5 \
  --output "$work/a.mp4"
expect strength_no_step 1 2 "runs no step" -- "${t2v[@]}" --video "$clip" --strength 0.4 --output "$work/a.mp4"
expect video_and_image 1 2 "--video and --image together" -- "${t2v[@]}" --video "$clip" --image "$first" \
  --output "$work/a.mp4"
expect i2v_with_video_np2 2 2 "--video: this model is image-to-video" -- "${i2v[@]}" --video "$clip" \
  --output "$work/a.mp4"
expect clip_too_short_np2 2 3 "has 12 frames; the video needs 17" -- "${t2v[@]}" --video "$clip" --num-frames 17 \
  --output "$work/a.mp4"
# VACE: its flags on a VACE model only (and the others' inputs not on one), a mask only with a control video and of
# its size and length, a grey mask, a control video whose own size (diffusers sizes it by its aspect) fits the
# video's latents, --task named right.
vace=(--model "$ref/vace-tiny/model" --prompt "a harbour" --height 32 --width 48 --num-frames 9
      --num-inference-steps 2 --max-sequence-length 16 --dtype float32)
control=$ref/vace-outpaint/control.mp4 vmask=$ref/vace-outpaint/mask.mp4
expect control_video_on_t2v_np2 2 2 "--control-video: this model (WanPipeline) has no VACE blocks" -- "${t2v[@]}" \
  --control-video "$control" --output "$work/a.mp4"
expect reference_image_on_i2v 1 2 "--reference-image: this model (WanImageToVideoPipeline) has no VACE blocks" -- \
  "${i2v[@]}" --image "$first" --reference-image "$first" --output "$work/a.mp4"
expect image_on_vace 1 2 "--image: this model is VACE" -- "${vace[@]}" --image "$first" --output "$work/a.mp4"
expect task_t2v_on_vace 1 2 "use --task vace" -- "${vace[@]}" --task t2v --output "$work/a.mp4"
expect conditioning_scale_on_t2v 1 2 "--conditioning-scale: this model (WanPipeline) has no VACE blocks" -- \
  "${t2v[@]}" --conditioning-scale 0.5 --output "$work/a.mp4"
expect mask_without_control 1 2 "--mask-video needs --control-video" -- "${vace[@]}" --mask-video "$vmask" \
  --output "$work/a.mp4"
ffmpeg -v error -y -i "$vmask" -vf scale=48:32 -c:v libx264 -pix_fmt yuv420p "$work/small_mask.mp4"
expect mask_other_size_np2 2 2 "is 48x32 but --control-video" -- "${vace[@]}" --control-video "$control" \
  --mask-video "$work/small_mask.mp4" --output "$work/a.mp4"
ffmpeg -v error -y -i "$vmask" -frames:v 10 -c:v libx264 -pix_fmt yuv420p "$work/short_mask.mp4"
expect mask_other_length 1 2 "has 10 frames but --control-video" -- "${vace[@]}" --control-video "$control" \
  --mask-video "$work/short_mask.mp4" --output "$work/a.mp4"
ffmpeg -v error -y -i "$control" -c:v libx264 -pix_fmt yuv420p "$work/colour_mask.mp4"
expect mask_in_colour_np2 2 2 "is not grey-scale" -- "${vace[@]}" --control-video "$control" \
  --mask-video "$work/colour_mask.mp4" --output "$work/a.mp4"
expect control_video_aspect 1 2 "give --width 48 --height 16" -- "${vace[@]}" --control-video "$clip" \
  --output "$work/a.mp4"
expect control_video_too_short_np2 2 3 "has 12 frames; the video needs 17" -- "${vace[@]}" \
  --control-video "$control" --num-frames 17 --output "$work/a.mp4"
expect missing_reference_image 1 3 "$work/nope.png" -- "${vace[@]}" --reference-image "$work/nope.png" \
  --output "$work/a.mp4"
expect conditioning_scale_count 1 2 "--conditioning-scale: 3 values for this model's 2 VACE layers" -- "${vace[@]}" \
  --conditioning-scale 1,1,1 --output "$work/a.mp4"
# Wan2.2-Animate: its videos frame for frame the same length, replace mode with its background and mask, its flags
# on its model only, its model with its inputs only, --animate-inputs naming what the folder lacks.
aref=$ref/animate-replace
anim=(--model "$ref/animate-tiny/model" --prompt "a dancer" --image "$aref/ref.jpg" --pose-video "$aref/pose.mp4"
      --height 32 --width 48 --segment-frames 9 --num-inference-steps 2 --dtype float32)
ffmpeg -v error -y -i "$aref/face.mp4" -frames:v 10 -c:v libx264 -pix_fmt yuv420p "$work/short_face.mp4"
expect animate_short_face_np2 2 2 "--face-video '$work/short_face.mp4' has 10 frames but --pose-video" -- \
  "${anim[@]}" --face-video "$work/short_face.mp4" --output "$work/a.mp4"
ffmpeg -v error -y -i "$aref/bg.mp4" -frames:v 13 -c:v libx264 -pix_fmt yuv420p "$work/short_bg.mp4"
expect animate_short_background 1 2 "--background-video '$work/short_bg.mp4' has 13 frames" -- "${anim[@]}" \
  --face-video "$aref/face.mp4" --animate-mode replace --background-video "$work/short_bg.mp4" \
  --mask-video "$aref/mask.mp4" --output "$work/a.mp4"
expect animate_replace_without_mask_np2 2 2 "--animate-mode replace needs --background-video and --mask-video" -- \
  "${anim[@]}" --face-video "$aref/face.mp4" --animate-mode replace --background-video "$aref/bg.mp4" \
  --output "$work/a.mp4"
expect animate_background_in_animate_mode 1 2 "--background-video is for --animate-mode replace" -- "${anim[@]}" \
  --face-video "$aref/face.mp4" --background-video "$aref/bg.mp4" --output "$work/a.mp4"
expect animate_pose_without_face 1 2 "--pose-video needs --face-video" -- "${anim[@]}" --output "$work/a.mp4"
expect animate_prev_segment_frames 1 2 "--prev-segment-frames must be 1 or 5" -- "${anim[@]}" \
  --face-video "$aref/face.mp4" --prev-segment-frames 3 --output "$work/a.mp4"
expect animate_flags_on_i2v_np2 2 2 "--pose-video / --face-video / --animate-inputs: this model (WanImageToVideoPipeline)" \
  -- "${i2v[@]}" --image "$first" --pose-video "$aref/pose.mp4" --face-video "$aref/face.mp4" --output "$work/a.mp4"
expect animate_model_without_pose 1 2 "this model is Wan2.2-Animate (WanAnimatePipeline): give --image" -- \
  --model "$ref/animate-tiny/model" --prompt x --image "$aref/ref.jpg" --output "$work/a.mp4"
expect animate_task_on_t2v 1 2 "--task animate needs a Wan2.2-Animate model" -- "${t2v[@]}" --task animate \
  --output "$work/a.mp4"
mkdir -p "$work/animate_inputs" && cp "$aref/pose.mp4" "$work/animate_inputs/src_pose.mp4"
cp "$aref/face.mp4" "$work/animate_inputs/src_face.mp4" && cp "$aref/ref.jpg" "$work/animate_inputs/src_ref.png"
expect animate_inputs_without_background_np2 2 2 "--animate-inputs $work/animate_inputs has no src_bg.mp4" -- \
  --model "$ref/animate-tiny/model" --prompt x --animate-inputs "$work/animate_inputs" --animate-mode replace \
  --height 32 --width 48 --output "$work/a.mp4"
ffmpeg -v error -y -i "$aref/pose.mp4" -frames:v 5 -c:v libx264 -pix_fmt yuv420p "$work/animate_inputs/src_face.mp4"
expect animate_inputs_short_face 1 2 "has 5 frames but --pose-video '$work/animate_inputs/src_pose.mp4' has 14" -- \
  --model "$ref/animate-tiny/model" --prompt x --animate-inputs "$work/animate_inputs" --height 32 --width 48 \
  --output "$work/a.mp4"
# Wan2.2-S2V's flags (issue 43): among themselves, on models that are not S2V, and on the S2V model.
expect s2v_audio_on_i2v_np2 2 2 "--audio: this model (WanImageToVideoPipeline) is not Wan2.2-S2V" -- "${i2v[@]}" \
  --image "$first" --audio "$work/sound.m4a" --output "$work/a.mp4"
expect s2v_audio_on_animate 1 2 "--audio: this model (WanAnimatePipeline) is not Wan2.2-S2V" -- "${anim[@]}" \
  --audio "$work/sound.m4a" --output "$work/a.mp4"
expect s2v_num_clips_without_audio 1 2 "--num-clips needs --audio" -- "${t2v[@]}" --num-clips 2 --output "$work/a.mp4"
expect s2v_audio_start_without_audio_np2 2 2 "--audio-start needs --audio" -- "${t2v[@]}" --audio-start 1 \
  --output "$work/a.mp4"
expect s2v_negative_start 1 2 "--audio-start must be a time in seconds, 0 or more, got -1" -- "${t2v[@]}" \
  --audio "$work/sound.m4a" --audio-start -1 --output "$work/a.mp4"
expect s2v_zero_duration 1 2 "--audio-duration must be a positive number of seconds" -- "${t2v[@]}" \
  --audio "$work/sound.m4a" --audio-duration 0 --output "$work/a.mp4"
expect s2v_with_face_video 1 2 "--face-video is Wan2.2-Animate's and --audio Wan2.2-S2V's" -- "${anim[@]}" \
  --face-video "$aref/face.mp4" --audio "$work/sound.m4a" --output "$work/a.mp4"
mkdir -p "$work/s2v-no-wav2vec2"
for f in "$ref"/s2v-pipeline/model/*; do
  [ "$(basename "$f")" = wav2vec2-large-xlsr-53-english ] || ln -s "$f" "$work/s2v-no-wav2vec2/"
done
expect s2v_folder_without_wav2vec2 1 3 "a Wan2.2-S2V folder without wav2vec2-large-xlsr-53-english/" -- \
  --model "$work/s2v-no-wav2vec2" --prompt x --output "$work/a.mp4"
expect s2v_transformer_file_np2 2 3 "Wan2.2-S2V's transformer cannot replace this model's transformer" -- "${t2v[@]}" \
  --transformer "$ref/s2v-tiny/ckpt/diffusion_pytorch_model.safetensors" --output "$work/a.mp4"
expect t2v_transformer_into_s2v 1 3 "this model is Wan2.2-S2V; its transformer is a WanModel_S2V checkpoint" -- \
  --model "$ref/s2v-pipeline/model" --prompt x --transformer "$ref/t2v-a14b-tiny/model/transformer" --output "$work/a.mp4"
expect s2v_transformer_folder 1 3 "Wan2.2-S2V's transformer cannot replace this model's transformer" -- "${t2v[@]}" \
  --transformer "$ref/s2v-tiny/ckpt" --output "$work/a.mp4"
s2v=(--model "$ref/s2v-pipeline/model" --prompt "a woman talks" --height 64 --width 64 --num-frames 12
     --num-inference-steps 2 --dtype float32)
s2vin=$ref/s2v-pipeline/inputs
expect s2v_without_audio_np2 2 2 "this model is Wan2.2-S2V (speech to video): give --image" -- "${s2v[@]}" \
  --image "$s2vin/ref_80x96.png" --output "$work/a.mp4"
expect s2v_task_t2v 1 2 "--task t2v does not fit this model: it is Wan2.2-S2V" -- "${s2v[@]}" --task t2v \
  --image "$s2vin/ref_80x96.png" --audio "$s2vin/audio.wav" --output "$work/a.mp4"
expect s2v_task_on_t2v 1 2 "--task s2v needs Wan2.2-S2V-14B" -- "${t2v[@]}" --task s2v --output "$work/a.mp4"
expect s2v_start_from_ref_on_t2v 1 2 "--start-from-ref: only Wan2.2-S2V starts its video from the reference" -- \
  "${t2v[@]}" --start-from-ref --output "$work/a.mp4"
expect s2v_frames_not_multiple_np2 2 2 "Wan2.2-S2V makes clips of a multiple of 4 frames" -- "${s2v[@]}" \
  --num-frames 13 --image "$s2vin/ref_80x96.png" --audio "$s2vin/audio.wav" --output "$work/a.mp4"
expect s2v_step_cache 1 2 "--step-cache: not available for Wan2.2-S2V yet" -- "${s2v[@]}" --step-cache teacache \
  --image "$s2vin/ref_80x96.png" --audio "$s2vin/audio.wav" --output "$work/a.mp4"
echo "not audio" > "$work/plain.wav"
# A recording too short for one frame (20 ms), a file with no audio stream (an H.264 MP4 without sound), one
# that is no media at all: one line naming the file, on every rank.
ffmpeg -v error -y -f lavfi -i "sine=frequency=440:sample_rate=16000:duration=0.02" "$work/blip.wav"
expect s2v_audio_too_short_np2 2 2 "s of audio make no video frame" -- "${s2v[@]}" --image "$s2vin/ref_80x96.png" \
  --audio "$work/blip.wav" --output "$work/a.mp4"
expect s2v_audio_no_stream 1 3 "$s2vin/pose_80x96_25fps.mp4" -- "${s2v[@]}" --image "$s2vin/ref_80x96.png" \
  --audio "$s2vin/pose_80x96_25fps.mp4" --output "$work/a.mp4"
expect s2v_audio_not_media_np2 2 3 "$work/plain.wav" -- "${s2v[@]}" --image "$s2vin/ref_80x96.png" \
  --audio "$work/plain.wav" --output "$work/a.mp4"
expect output_folder_missing 2 2 "$work/no/such/dir" -- "${t2v[@]}" --output "$work/no/such/dir/a.mp4"
echo "a file" > "$work/plainfile"
expect output_parent_is_file 1 2 "$work/plainfile" -- "${t2v[@]}" --output "$work/plainfile/a.mp4"
expect missing_model 2 3 "$work/no-model" -- --model "$work/no-model" --prompt x --output "$work/a.mp4"
expect ti2v_height_not_multiple_of_32 2 2 "multiples of 32" -- --model "$ref/ti2v-5b-tiny/model" --prompt x \
  --height 48 --width 32 --num-frames 9 --output "$work/a.mp4"
expect float16_on_cpu 1 2 "float16 needs --device cuda" -- --model "$ref/t2v-a14b-tiny/model" --prompt x \
  --height 32 --width 48 --num-frames 9 --max-sequence-length 24 --dtype float16 --output "$work/a.mp4"
# --device: cuda where no GPU is visible (this CPU suite's machines) is an agreed usage error on every rank,
# before any model is read; a malformed name is caught with the other options.
expect cuda_without_gpu 2 2 "--device cuda: no CUDA device is visible" -- "${t2v[@]}" --device cuda --output "$work/a.mp4"
expect cuda_index_without_gpu 1 2 "--device cuda:1: no CUDA device is visible" -- "${t2v[@]}" --device cuda:1 \
  --output "$work/a.mp4"
expect bad_device_name 2 2 "--device must be auto, cpu, cuda or cuda:N, got 'gpu'" -- "${t2v[@]}" --device gpu \
  --output "$work/a.mp4"
expect bad_collective_timeout 1 2 "--collective-timeout must be a positive number" -- "${t2v[@]}" \
  --collective-timeout 0 --output "$work/a.mp4"
expect no_prompt 1 2 "no prompt" -- --model "$ref/t2v-a14b-tiny/model" --output "$work/a.mp4"
if ls "$work"/a.mp4* >/dev/null 2>&1 || ls "$work"/.*tmp* >/dev/null 2>&1; then
  flunk "a failed run left a file behind"; ls -la "$work"
fi

# An existing output is kept without --overwrite (on every rank count), replaced with it.
echo "precious" > "$work/keep.mp4"
expect existing_output 2 2 "--overwrite" -- "${t2v[@]}" --output "$work/keep.mp4"
if [ "$(cat "$work/keep.mp4")" != "precious" ]; then flunk "existing output changed"; fi
if mpi 2 "$gen" "${t2v[@]}" --output "$work/keep.mp4" --overwrite --log-level warn &&
   ! grep -qx precious "$work/keep.mp4" && ffprobe -v error "$work/keep.mp4"; then
  pass "--overwrite replaces the file with a valid video"
else
  flunk "--overwrite did not replace the file"
fi

# A failure on one rank in the middle of the denoising loop, while the others wait in collectives: the whole job
# ends within seconds with that rank's one error line, and no video appears. Rank 2 fails after the first of the
# 2 steps, so the writing rank is still waiting in the second step's gathers (after the last step it could
# finish and commit a complete video before the abort reaches it).
start=$(date +%s)
out=$(OMNI_FAULT_INJECT=2:0 mpi -t 120 4 -x OMNI_FAULT_INJECT "$gen" "${t2v[@]}" --use-hsdp --hsdp-shard-size 4 \
      --output "$work/fault.mp4" 2>&1)
code=$?; took=$(( $(date +%s) - start ))
if [ "$code" = 1 ] && [ "$took" -lt 60 ] && [ "$(error_lines "$out")" = 1 ] &&
   grep -q 'error (rank 2/4): injected fault' <<<"$out" && ! ls "$work"/fault.mp4* "$work"/.fault* >/dev/null 2>&1; then
  pass "a mid-run failure on rank 2 ends all 4 ranks (exit $code, ${took} s)"
else
  flunk "mid-run failure: exit $code after ${took} s"; echo "$out"; ls -la "$work"
fi

# One video whose writing fails (its tensor file fills the disk: a 64 KiB tmpfs in a mount namespace of its own):
# exit 1 with exactly one error line, naming the file; the batch summary is for lists, so no "1 of 1 failed".
mkdir -p "$work/full"
out=$(unshare -m bash -c 'mount -t tmpfs -o size=64k tmpfs "$1" || exit 99; shift; "$@"' _ "$work/full" \
      "$gen" "${t2v[@]}" --output "$work/full/a.mp4" --save-tensors "$work/full/a.safetensors" 2>&1)
code=$?
errors=$(grep -cE '^omni-generate: error|^\[[0-9:.]+ error ' <<<"$out")
if [ "$code" = 1 ] && [ "$errors" = 1 ] && grep -q "failed to write $work/full/a.mp4" <<<"$out" &&
   ! grep -q "video(s) failed\|summary:" <<<"$out"; then
  pass "a single video that cannot be written: exit 1, one error line"
else
  flunk "single video write failure: exit $code (want 1), $errors error lines (want 1)"
  echo "$out"
fi

summary
