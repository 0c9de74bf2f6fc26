#!/usr/bin/env bash
# Remakes the parity references of tests/data/reference from their inputs with record.py.
#
#   tools/reference/cases.sh OUT_ROOT [CASE...]   record into OUT_ROOT/<case>/{expected.safetensors,case.json}
#   tools/reference/cases.sh --check [CASE...]    record into a temporary folder (or $CHECK_INTO) and compare
#                                                 every tensor with the committed expected.safetensors and the
#                                                 entries of case.json; exits 1 on any difference. Tensors are
#                                                 held to max abs / max |committed| <= $REL_TOLERANCE (default
#                                                 5e-6), the decoded video to $DECODED_REL_TOLERANCE (default
#                                                 1e-3): the same diffusers differs by up to 1.5e-6 and 4.7e-4
#                                                 between two x86-64 CPUs (AVX-512 and AVX2), its random-weight
#                                                 VAE decoders amplifying the difference of their input ~100 fold
#   tools/reference/cases.sh --make-inputs OMNI_MAKE_CHECKPOINT [CASE...]
#                                                 remake, in place, the committed inputs that these tools made:
#                                                 the generated checkpoints (tests/data/reference/<case>/model)
#                                                 and the conditioning images of ti2v-5b-tiny-image,
#                                                 i2v-jpeg, ti2v-jpeg and i2v-flf2v, the clip of
#                                                 t2v-v2v and ti2v-v2v, the VACE cases' folders,
#                                                 clips, masks and images, and the Animate cases' folder
#                                                 (animate-segments makes it), images and videos
#
# CASE is one of the names below (default: all). OUT_ROOT=tests/data/reference rewrites the committed
# references in place. The inputs stay where they are: the checkpoints (tests/data/reference/<model>, see
# model_of) and the conditioning images, copied beside an image case's case.json (case.json names it
# "image.png"). Runs tools/reference/setup.sh first (quick when the environment is there).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ref=$(cd "$here/../.." && pwd)/tests/data/reference
venv=${REFERENCE_VENV:-$here/.venv}
# The fixtures the project started with (their checkpoints and image were made elsewhere), then the cases made here.
fixture_cases=(t2v-a14b-tiny i2v-a14b-tiny ti2v-5b-tiny)
new_cases=(ti2v-5b-tiny-image t2v-headdim16 t2v-headdim64 t2v-portrait t2v-euler ti2v-guidance-off
           t2v-vae-blocks2 ti2v-vae-blocks2 t2v-lora i2v-jpeg ti2v-jpeg i2v-flf2v t2v-v2v ti2v-v2v i2v-wan21-clip
           flf2v-wan21-clip t2v-wan21 vace-a14b-control vace-ref2v vace-outpaint vace-lora animate-segments
           animate-prev5 animate-replace)
all_cases=("${fixture_cases[@]}" "${new_cases[@]}")

# model_of CASE: the checkpoint folder a case runs, relative to tests/data/reference. The new cases name it in
# their case.json ("model"); those with a checkpoint of their own also say how it was made ("model_made_by").
model_of() {
  case $1 in
    t2v-portrait | t2v-euler | t2v-lora | t2v-v2v) echo t2v-a14b-tiny/model ;;
    ti2v-5b-tiny-image | ti2v-guidance-off | ti2v-jpeg | ti2v-v2v) echo ti2v-5b-tiny/model ;;
    i2v-jpeg | i2v-flf2v) echo i2v-a14b-tiny/model ;;
    i2v-wan21-clip) echo i2v-wan21-tiny/model ;;
    flf2v-wan21-clip) echo flf2v-wan21-tiny/model ;;
    t2v-wan21) echo t2v-wan21-tiny/model ;;
    vace-a14b-control) echo vace-a14b-tiny/model ;;
    vace-ref2v | vace-outpaint | vace-lora) echo vace-tiny/model ;;
    animate-segments | animate-prev5 | animate-replace) echo animate-tiny/model ;;
    *) echo "$1/model" ;;
  esac
}

# checkpoint_flags CASE: the omni-make-checkpoint flags of a case's own generated checkpoint; nothing for the
# cases that reuse a fixture checkpoint. The generator is deterministic (same flags, same binary: the same
# bytes, tokenizer included), but the committed files are what the references were recorded on, so nothing
# depends on that. Each varies one thing against the fixtures' tiny A14B / TI2V-5B checkpoints.
checkpoint_flags() {
  case $1 in
    # attention_head_dim 16: RoPE split (t, h, w) = (8, 4, 4) in diffusers 0.40 (d - 4*(d//6), 2*(d//6) twice),
    # (6, 5, 5) in older diffusers. Two heads.
    t2v-headdim16) echo --kind t2v-a14b --preset tiny --head-dim 16 --seed 16 ;;
    # attention_head_dim 64: (24, 20, 20) against the older (22, 21, 21). One head and one block to stay small.
    t2v-headdim64) echo --kind t2v-a14b --preset tiny --heads 1 --head-dim 64 --layers 1 --seed 64 ;;
    # The Wan2.1 VAE (z 16) with 2 residual blocks per level, base_dim 4 and channel multipliers 1,3,2,4
    # (channels 4, 12, 8, 16: a level narrower than the one before it).
    t2v-vae-blocks2)
      echo --kind t2v-a14b --preset tiny --vae-res-blocks 2 --vae-base-dim 4 --vae-dim-mult 1,3,2,4 --seed 21
      ;;
    # The Wan2.2 VAE (z 48, patch 2, residual) likewise.
    ti2v-vae-blocks2) echo --kind ti2v-5b --preset tiny --vae-res-blocks 2 --vae-base-dim 4 --seed 22 ;;
  esac
}

# make_image PATH: the conditioning image of ti2v-5b-tiny-image, 88x56 RGB, deterministic (gradients, a disc,
# seeded noise). Its size is not the case's 64x32, so both sides resize it (Pillow's LANCZOS in diffusers).
make_image() {
  "$venv/bin/python" - "$1" <<'PY'
import sys
import numpy as np
from PIL import Image
h, w = 56, 88
y, x = np.mgrid[0:h, 0:w].astype(np.float64)
r = 128 + 100 * np.sin(x / 9) * np.cos(y / 7)
g = 255 * x / (w - 1)
b = 230.0 * ((x - 40) ** 2 + (y - 24) ** 2 < 15 ** 2) + 20
noise = np.random.default_rng(2025).normal(0, 12, (h, w, 3))
pixels = np.clip(np.rint(np.stack([r, g, b], -1) + noise), 0, 255).astype(np.uint8)
Image.fromarray(pixels, "RGB").save(sys.argv[1])
PY
}

# make_jpeg PATH ORIENTATION HEIGHT WIDTH SUBSAMPLING QUALITY: a photo-like JPEG (tools/reference/image_corpus.py's
# source) as a camera writes one: upright HEIGHT x WIDTH after its EXIF orientation is applied, so that with
# orientation 6 the stored pixels are WIDTH x HEIGHT, turned a quarter counter-clockwise.
make_jpeg() {
  PYTHONPATH=$here "$venv/bin/python" - "$@" <<'PY'
import sys
from PIL import Image
from image_corpus import exif_with_orientation, photo
path, orientation, h, w, subsampling, quality = sys.argv[1:]
img = photo(int(h), int(w), 2027)
undo = {1: None, 6: Image.Transpose.ROTATE_90, 8: Image.Transpose.ROTATE_270, 3: Image.Transpose.ROTATE_180}
if undo[int(orientation)] is not None:
    img = img.transpose(undo[int(orientation)])
img.save(path, quality=int(quality), subsampling=int(subsampling), exif=exif_with_orientation(int(orientation)))
PY
}

# make_clip PATH: the video-to-video cases' clip, as a phone or an editor writes one: H.264 (x264, 4:2:0, CRF 18)
# in MP4, tagged BT.709, 64 x 40 at 16 fps, 12 frames of moving test pattern with grain. Debian's ffmpeg.
make_clip() {
  ffmpeg -v error -y -f lavfi -i "testsrc2=size=64x40:rate=16,noise=alls=24:allf=t" -frames:v 12 \
    -c:v libx264 -preset medium -crf 18 -pix_fmt yuv420p -colorspace bt709 -color_primaries bt709 -color_trc bt709 \
    -fflags +bitexact -flags:v +bitexact -movflags +faststart "$1"
}

# make_vace_clip PATH: the VACE cases' control video: H.264 MP4 as make_clip's, 96 x 64 (the 48 x 32 videos'
# aspect: WanVACEPipeline sizes a control video by its own aspect), 12 frames.
make_vace_clip() {
  ffmpeg -v error -y -f lavfi -i "testsrc2=size=96x64:rate=16,noise=alls=24:allf=t" -frames:v 12 \
    -c:v libx264 -preset medium -crf 18 -pix_fmt yuv420p -colorspace bt709 -color_primaries bt709 -color_trc bt709 \
    -fflags +bitexact -flags:v +bitexact -movflags +faststart "$1"
}

# make_mask PATH KIND: a VACE mask video as an editor exports one (H.264, 4:2:0, grey), 96 x 64, 12 frames. box: a
# white box (generated) moving right over black (kept), inpainting; border: black in the middle, white around it,
# outpainting.
make_mask() {
  local graph
  if [[ $2 == box ]]; then
    graph="color=c=black:size=96x64:rate=16[bg];color=c=white:size=40x32:rate=16[box];[bg][box]overlay=x='8+4*n':y=12:shortest=1,format=yuv420p"
  else
    graph="color=c=white:size=96x64:rate=16[bg];color=c=black:size=64x32:rate=16[box];[bg][box]overlay=x=16:y=16:shortest=1,format=yuv420p"
  fi
  ffmpeg -v error -y -filter_complex "$graph" -frames:v 12 -c:v libx264 -preset medium -crf 18 -pix_fmt yuv420p \
    -fflags +bitexact -flags:v +bitexact -movflags +faststart "$1"
}

# make_animate_video PATH KIND: an Animate case's input video, H.264 MP4 as make_clip's, 14 frames at 16 fps.
# pose: a test pattern figure (testsrc2, 20 x 28) moving right and bobbing over black, 64 x 40 (not the
# 48 x 32 video's size: resized); face: a zooming Mandelbrot with grain, 40 x 40 (resized to the motion encoder's
# 32 x 32); background: testsrc with grain, 64 x 40; mask: a white 24 x 20 box moving right over black (white:
# the character, generated; black: the background, kept), grey, 64 x 40.
make_animate_video() {
  local tagged="-colorspace bt709 -color_primaries bt709 -color_trc bt709" input
  case $2 in
    pose)
      input=(-filter_complex "color=c=black:size=64x40:rate=16[bg];testsrc2=size=20x28:rate=16[fig];[bg][fig]overlay=x='6+2*n':y='6+2*mod(n,3)':shortest=1,format=yuv420p")
      ;;
    face) input=(-f lavfi -i "mandelbrot=size=40x40:rate=16:start_scale=2:end_scale=0.8:end_pts=1,noise=alls=16:allf=t") ;;
    background) input=(-f lavfi -i "testsrc=size=64x40:rate=16,noise=alls=24:allf=t") ;;
    mask)
      input=(-filter_complex "color=c=black:size=64x40:rate=16[bg];color=c=white:size=24x20:rate=16[box];[bg][box]overlay=x='8+2*n':y=10:shortest=1,format=yuv420p")
      tagged=""
      ;;
  esac
  # shellcheck disable=SC2086 # tagged is words
  ffmpeg -v error -y "${input[@]}" -frames:v 14 -c:v libx264 -preset medium -crf 18 -pix_fmt yuv420p $tagged \
    -fflags +bitexact -flags:v +bitexact -movflags +faststart "$1"
}

# record CASE OUT_DIR [record.py flags...]: the case's checkpoint in, OUT_DIR/{expected.safetensors,case.json} out.
record() {
  local name=$1 out=$2
  shift 2
  local model
  model=$(model_of "$name")
  "$venv/bin/python" "$here/record.py" --model "$ref/$model" \
    --out "$out/expected.safetensors" --case-json "$out/case.json" "$@"
  if [[ " ${new_cases[*]} " == *" $name "* ]]; then
    local made_by=""
    [[ -z $(checkpoint_flags "$name") ]] || made_by="omni-make-checkpoint $(checkpoint_flags "$name")"
    "$venv/bin/python" - "$out/case.json" "$model" "$made_by" <<'PY'
import json, sys
path, model, made_by = sys.argv[1:]
case = json.load(open(path))
case["model"] = model
if made_by:
    case["model_made_by"] = made_by
open(path, "w").write(json.dumps(case, indent=2) + "\n")
PY
  fi
}

# copy_image CASE OUT_DIR [NAME]: the case's committed image (NAME, default image.png) beside the new case.json.
copy_image() {
  local file=${3:-image.png}
  [[ "$2/$file" -ef "$ref/$1/$file" ]] || cp "$ref/$1/$file" "$2/$file"
}

# The inputs of each case, as its committed case.json states them. --unit-seed makes the stand-alone
# unit.transformer.* / unit.vae.* tensors; the fixtures drew them with seeds 101, 102, 103. The new cases do not
# (their files stay small): a few steps, few frames, short prompts.
run_case() {
  local name=$1 out=$2
  mkdir -p "$out"
  case $name in
    t2v-a14b-tiny)
      # Two experts (boundary_ratio 0.875 from model_index.json), flow_shift 3 from the scheduler config,
      # the prompt truncated at 24 tokens.
      record "$name" "$out" \
        --prompt "A red fox runs through the snow, cinematic lighting" \
        --negative-prompt "blurry, low quality, static frame" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 6 \
        --guidance-scale 4 --guidance-scale-2 3 --seed 42 --max-sequence-length 24 --unit-seed 101
      ;;
    i2v-a14b-tiny)
      copy_image "$name" "$out"
      record "$name" "$out" --image "$out/image.png" \
        --prompt "The camera pans slowly over the city at night" \
        --negative-prompt "blurry, low quality, static frame" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 6 \
        --guidance-scale 3.5 --seed 7 --max-sequence-length 24 --unit-seed 102
      ;;
    ti2v-5b-tiny)
      # Text-only TI2V-5B: WanPipeline with expand_timesteps, one expert.
      record "$name" "$out" \
        --prompt "Waves roll onto a sandy beach at sunset" \
        --negative-prompt "blurry, low quality, static frame" \
        --height 64 --width 32 --num-frames 9 --num-inference-steps 5 \
        --guidance-scale 5 --seed 123 --max-sequence-length 24 --unit-seed 103
      ;;
    ti2v-5b-tiny-image)
      # TI2V-5B image mode on the ti2v-5b-tiny checkpoint: the 88x56 image resized (LANCZOS) to 64x32, its
      # latent replaces latent frame 0, whose tokens get timestep 0.
      copy_image "$name" "$out"
      record "$name" "$out" --image "$out/image.png" \
        --prompt "A paper boat drifts down a rainy street" \
        --negative-prompt "blurry, low quality, static frame" \
        --height 32 --width 64 --num-frames 9 --num-inference-steps 4 \
        --guidance-scale 5 --seed 11 --max-sequence-length 24
      ;;
    i2v-jpeg)
      # A camera JPEG (4:2:0, quality 90) stored 45 x 72 with EXIF orientation 6: load_image turns it upright to
      # 72 x 45, then it is resized (LANCZOS) to 48 x 32. Pins libjpeg-turbo's decode and the transpose.
      copy_image "$name" "$out" image.jpg
      record "$name" "$out" --image "$out/image.jpg" \
        --prompt "A cyclist rides along a harbour wall at dusk" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 3.5 --seed 8 --max-sequence-length 16
      ;;
    ti2v-jpeg)
      # TI2V-5B image mode from a baseline 4:2:0 JPEG (quality 85), 52 x 100, resized to 32 x 64.
      copy_image "$name" "$out" image.jpg
      record "$name" "$out" --image "$out/image.jpg" \
        --prompt "A tram passes a row of shops in the rain" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 64 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 5 --seed 12 --max-sequence-length 16
      ;;
    i2v-flf2v)
      # First-last-frame (WanImageToVideoPipeline's last_image) on the two-expert I2V checkpoint: a camera JPEG
      # stored 40 x 64 with EXIF orientation 8 (upright 64 x 40) as the first frame, the 88 x 56 PNG as the last,
      # both resized (LANCZOS) to 32 x 48. 9 frames: the last image is latent frame 2's last pixel frame.
      copy_image "$name" "$out" first.jpg
      copy_image "$name" "$out" last.png
      record "$name" "$out" --image "$out/first.jpg" --last-image "$out/last.png" \
        --prompt "A hot air balloon rises over a valley at sunrise" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 3 \
        --guidance-scale 3.5 --guidance-scale-2 2 --seed 17 --max-sequence-length 16
      ;;
    i2v-wan21-clip)
      # Wan2.1 image-to-video with its CLIP image encoder (one transformer with the image branch; the model made by
      # tools/reference/make_wan21.py): the camera JPEG of i2v-jpeg (upright 72 x 45), to CLIP as it was read
      # (resized to 44 x 28 and center-cropped to 28 x 28 by CLIPImageProcessor), to the VAE resized to 32 x 48.
      # max_sequence_length 512: diffusers' blocks take the first len - 512 context tokens as the image's, so with
      # any other text length it routes the image tokens through the text attention (omni-generate does not).
      copy_image "$name" "$out" image.jpg
      record "$name" "$out" --image "$out/image.jpg" \
        --prompt "A red kite dances above a windy beach" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 4 --seed 21 --max-sequence-length 512
      ;;
    t2v-wan21)
      # Wan2.1 text-to-video: one transformer, no boundary (make_wan21.py --t2v: t2v-a14b-tiny's first expert).
      record "$name" "$out" \
        --prompt "A lighthouse beam sweeps across a foggy harbour" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 5 --seed 13 --max-sequence-length 16
      ;;
    flf2v-wan21-clip)
      # Wan2.1 first-last-frame (make_wan21.py --flf2v: the transformer's pos_embed over both images' CLIP
      # tokens): i2v-flf2v's turned camera JPEG first and PNG last, both to CLIP as read in one batch and to the
      # VAE resized to 32 x 48. 512 text tokens, as in i2v-wan21-clip.
      copy_image "$name" "$out" first.jpg
      copy_image "$name" "$out" last.png
      record "$name" "$out" --image "$out/first.jpg" --last-image "$out/last.png" \
        --prompt "A paper lantern floats over a night market" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 3 \
        --guidance-scale 5 --seed 22 --max-sequence-length 512
      ;;
    t2v-v2v)
      # Video-to-video on the two-expert T2V checkpoint (WanVideoToVideoPipeline with WanPipeline's expert rule,
      # record.py): an H.264 MP4 (64 x 40, BT.709, 12 frames) read by load_video, its first 9 frames resized to
      # 32 x 48. strength 0.75 of 4 steps: the last 3 run, the first on transformer, the others on transformer_2.
      copy_image "$name" "$out" clip.mp4
      record "$name" "$out" --video "$out/clip.mp4" --strength 0.75 \
        --prompt "A red fox runs through the snow, cinematic lighting" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 4 \
        --guidance-scale 4 --seed 23 --max-sequence-length 16
      ;;
    ti2v-v2v)
      # Video-to-video on TI2V-5B (text mode, z 48): the same clip, 5 frames at 32 x 64; strength 0.6 of 5 steps.
      copy_image "$name" "$out" clip.mp4
      record "$name" "$out" --video "$out/clip.mp4" --strength 0.6 \
        --prompt "Waves roll onto a sandy beach at sunset" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 64 --num-frames 5 --num-inference-steps 5 \
        --guidance-scale 5 --seed 24 --max-sequence-length 16
      ;;
    vace-a14b-control)
      # VACE with two experts (make_vace.py --a14b): an H.264 control video, a mask video of a moving box (its
      # first 9 frames), a landscape JPEG as the reference image on a white canvas, one conditioning scale per VACE
      # layer. The first step on transformer, the others on transformer_2.
      copy_image "$name" "$out" control.mp4
      copy_image "$name" "$out" mask.mp4
      copy_image "$name" "$out" ref.jpg
      record "$name" "$out" --control-video "$out/control.mp4" --mask-video "$out/mask.mp4" \
        --reference-image "$out/ref.jpg" --conditioning-scale 0.8,1.2 \
        --prompt "A dancer spins on a stage under a spotlight" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 3 \
        --guidance-scale 4 --guidance-scale-2 3 --seed 41 --max-sequence-length 16
      ;;
    vace-ref2v)
      # VACE reference-to-video on one transformer (make_vace.py): two reference images (a turned camera JPEG, a PNG
      # of another aspect) and no control video or mask (diffusers' grey clip and all-white mask); diffusers puts
      # each reference in front of the ones before it.
      copy_image "$name" "$out" first.jpg
      copy_image "$name" "$out" second.png
      record "$name" "$out" --reference-image "$out/first.jpg" --reference-image "$out/second.png" \
        --prompt "A corgi wearing sunglasses walks on a beach" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 5 --seed 42 --max-sequence-length 16
      ;;
    vace-outpaint)
      # VACE outpainting on one transformer: the control video kept in the middle, a white border generated, one
      # conditioning scale.
      copy_image "$name" "$out" control.mp4
      copy_image "$name" "$out" mask.mp4
      record "$name" "$out" --control-video "$out/control.mp4" --mask-video "$out/mask.mp4" \
        --conditioning-scale 0.7 \
        --prompt "A harbour at dusk, wide shot" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 3 \
        --guidance-scale 5 --seed 43 --max-sequence-length 16
      ;;
    vace-lora)
      # A LoRA on the VACE transformer (make_lora.py --targets attn,ffn,vace: the main blocks' and the VACE
      # blocks' attention and FFN, their proj_in / proj_out), loaded by diffusers' load_lora_weights at 0.8; no
      # control input (diffusers' grey clip and white mask through the VACE blocks).
      record "$name" "$out" --lora "$ref/$name/lora.safetensors:0.8" \
        --prompt "A lantern festival on a river at night" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 5 --seed 44 --max-sequence-length 16
      ;;
    animate-segments)
      # Wan2.2-Animate (WanAnimatePipeline on make_animate.py's folder), animate mode: a portrait JPEG as the
      # character (letterboxed into 48 x 32 with black bars left and right, LANCZOS: diffusers' processor drops the
      # pipeline's bilinear; to CLIP as read), a 64 x 40
      # pose video (resized) and a 40 x 40 face video (resized to 32 x 32), 14 frames each. Segments of 9 frames
      # taking 1 from the one before: 2 segments (9 frames, then 8 after the 1 taken; 17 cut to 14), the videos
      # reflect-padded to 17 frames (frames 12, 11, 10 after frame 13). 512 text tokens: diffusers finds the CLIP
      # tokens as the first len - 512 context tokens.
      copy_image "$name" "$out" ref.jpg
      copy_image "$name" "$out" pose.mp4
      copy_image "$name" "$out" face.mp4
      record "$name" "$out" --image "$out/ref.jpg" --pose-video "$out/pose.mp4" --face-video "$out/face.mp4" \
        --animate-mode animate --segment-frames 9 --prev-segment-frames 1 \
        --prompt "A dancer waves her arms in a studio" \
        --height 32 --width 48 --num-inference-steps 3 \
        --guidance-scale 1 --seed 51 --max-sequence-length 512
      ;;
    animate-prev5)
      # Animate mode with 5 frames from the segment before: segments of 13 (4 latent frames), 2 of them, the videos
      # padded to 21 frames; the second segment's mask marks its first 2 latent frames known. A landscape JPEG.
      copy_image "$name" "$out" ref.jpg
      copy_image "$name" "$out" pose.mp4
      copy_image "$name" "$out" face.mp4
      record "$name" "$out" --image "$out/ref.jpg" --pose-video "$out/pose.mp4" --face-video "$out/face.mp4" \
        --animate-mode animate --segment-frames 13 --prev-segment-frames 5 \
        --prompt "A man walks across a quiet street" \
        --height 32 --width 48 --num-inference-steps 3 \
        --guidance-scale 1 --seed 52 --max-sequence-length 512
      ;;
    animate-replace)
      # Replace mode: the character into a background video where a mask video is white (1 - mask, nearest-resized
      # to the latent grid, is the known part); the first segment's conditioning video is the background's. A
      # camera JPEG turned by EXIF orientation 8. Guidance 2 with a negative prompt: the unconditional call's face
      # crops are all -1.
      copy_image "$name" "$out" ref.jpg
      copy_image "$name" "$out" pose.mp4
      copy_image "$name" "$out" face.mp4
      copy_image "$name" "$out" bg.mp4
      copy_image "$name" "$out" mask.mp4
      record "$name" "$out" --image "$out/ref.jpg" --pose-video "$out/pose.mp4" --face-video "$out/face.mp4" \
        --background-video "$out/bg.mp4" --mask-video "$out/mask.mp4" \
        --animate-mode replace --segment-frames 9 --prev-segment-frames 1 \
        --prompt "A woman in a red coat dances on a stage" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-inference-steps 3 \
        --guidance-scale 2 --seed 53 --max-sequence-length 512
      ;;
    t2v-headdim16)
      # The generated head-dim checkpoints (see checkpoint_flags), both experts used.
      record "$name" "$out" \
        --prompt "A hummingbird hovers beside a red flower" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 4 \
        --guidance-scale 4 --guidance-scale-2 3 --seed 16 --max-sequence-length 16
      ;;
    t2v-headdim64)
      # Guidance scales other than the Wan2.2 T2V preset's 4 / 3 (which omni-generate would supply itself).
      record "$name" "$out" \
        --prompt "A hummingbird hovers beside a red flower" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 4 \
        --guidance-scale 5 --guidance-scale-2 2 --seed 64 --max-sequence-length 16
      ;;
    t2v-portrait)
      # The t2v-a14b-tiny checkpoint at 80x48 (portrait; 5x3 tokens per latent frame, 30 tokens in all, which
      # 4 does not divide).
      record "$name" "$out" \
        --prompt "A lighthouse on a cliff above stormy waves" \
        --negative-prompt "blurry, low quality" \
        --height 80 --width 48 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 4.5 --guidance-scale-2 2.5 --seed 5 --max-sequence-length 16
      ;;
    t2v-euler)
      # The t2v-a14b-tiny checkpoint with the flow-match Euler step on the UniPC flow schedule
      # (omni-generate --sample-solver euler).
      record "$name" "$out" --solver euler \
        --prompt "A red fox runs through the snow, cinematic lighting" \
        --negative-prompt "blurry, low quality, static frame" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 4 \
        --guidance-scale 4 --guidance-scale-2 3 --seed 3 --max-sequence-length 24
      ;;
    ti2v-guidance-off)
      # guidance_scale 1 on the ti2v-5b-tiny checkpoint: one transformer call per step, no negative prompt.
      record "$name" "$out" \
        --prompt "Snow falls on a quiet pine forest" \
        --height 32 --width 64 --num-frames 9 --num-inference-steps 4 \
        --guidance-scale 1 --seed 99 --max-sequence-length 16
      ;;
    t2v-vae-blocks2)
      record "$name" "$out" \
        --prompt "A sailboat crosses a calm bay at dawn" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 4 --guidance-scale-2 3 --seed 21 --max-sequence-length 16
      ;;
    ti2v-vae-blocks2)
      record "$name" "$out" \
        --prompt "A sailboat crosses a calm bay at dawn" \
        --negative-prompt "blurry, low quality" \
        --height 64 --width 32 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 5 --seed 22 --max-sequence-length 16
      ;;
    t2v-lora)
      # diffusers' own LoRA path (load_lora_weights, load_into_transformer_2, set_adapters) with one generated
      # rank-4 LoRA (diffusers names, every attention and FFN projection) on both experts at different scales.
      record "$name" "$out" --lora "$ref/$name/lora.safetensors:0.8" --lora-2 "$ref/$name/lora.safetensors:1.3" \
        --prompt "A kite flies over a green hill" \
        --negative-prompt "blurry, low quality" \
        --height 32 --width 48 --num-frames 5 --num-inference-steps 3 \
        --guidance-scale 4 --guidance-scale-2 3 --seed 31 --max-sequence-length 16
      ;;
    *)
      echo "cases.sh: unknown case '$name' (known: ${all_cases[*]})" >&2
      return 2
      ;;
  esac
}

# make_inputs GENERATOR CASE: remakes the case's generated inputs in tests/data/reference (nothing for the rest).
make_inputs() {
  local generator=$1 name=$2 flags
  flags=$(checkpoint_flags "$name")
  if [[ -n $flags ]]; then
    # shellcheck disable=SC2086 # flags are words
    "$generator" $flags --output "$ref/$name/model" --overwrite
    echo "cases.sh: $name/model <- omni-make-checkpoint $flags"
  fi
  if [[ $name == t2v-lora ]]; then
    # One LoRA in two formats: diffusers names, and Kohya names with alpha 2 (lora_up stored x rank / alpha,
    # so both describe the same update; tools/lora/make_lora.py).
    local transformer=$ref/t2v-a14b-tiny/model/transformer
    "$venv/bin/python" "$here/../lora/make_lora.py" --transformer "$transformer" --seed 31 --rank 4 \
      --targets attn,ffn --format diffusers --out "$ref/$name/lora.safetensors"
    "$venv/bin/python" "$here/../lora/make_lora.py" --transformer "$transformer" --seed 31 --rank 4 \
      --targets attn,ffn --format kohya --alpha 2 --out "$ref/$name/lora-kohya.safetensors"
  fi
  if [[ $name == ti2v-5b-tiny-image ]]; then
    mkdir -p "$ref/$name"
    make_image "$ref/$name/image.png"
    echo "cases.sh: $name/image.png made"
  fi
  if [[ $name == i2v-jpeg ]]; then
    mkdir -p "$ref/$name"
    make_jpeg "$ref/$name/image.jpg" 6 45 72 2 90
    echo "cases.sh: $name/image.jpg made"
  fi
  if [[ $name == i2v-wan21-clip ]]; then
    mkdir -p "$ref/$name"
    "$venv/bin/python" "$here/make_wan21.py" "$ref/i2v-wan21-tiny/model"
    make_jpeg "$ref/$name/image.jpg" 6 45 72 2 90
    echo "cases.sh: i2v-wan21-tiny/model and $name/image.jpg made"
  fi
  if [[ $name == t2v-wan21 ]]; then
    "$venv/bin/python" "$here/make_wan21.py" --t2v "$ref/t2v-wan21-tiny/model"
    echo "cases.sh: t2v-wan21-tiny/model made"
  fi
  if [[ $name == flf2v-wan21-clip ]]; then
    mkdir -p "$ref/$name"
    "$venv/bin/python" "$here/make_wan21.py" --flf2v "$ref/flf2v-wan21-tiny/model"
    make_jpeg "$ref/$name/first.jpg" 8 64 40 2 88
    make_image "$ref/$name/last.png"
    echo "cases.sh: flf2v-wan21-tiny/model, $name/first.jpg and last.png made"
  fi
  if [[ $name == i2v-flf2v ]]; then
    mkdir -p "$ref/$name"
    make_jpeg "$ref/$name/first.jpg" 8 64 40 2 88
    make_image "$ref/$name/last.png"
    echo "cases.sh: $name/first.jpg and last.png made"
  fi
  if [[ $name == t2v-v2v || $name == ti2v-v2v ]]; then
    mkdir -p "$ref/$name"
    make_clip "$ref/$name/clip.mp4"
    echo "cases.sh: $name/clip.mp4 made"
  fi
  if [[ $name == vace-a14b-control ]]; then
    mkdir -p "$ref/$name"
    "$venv/bin/python" "$here/make_vace.py" --a14b "$ref/vace-a14b-tiny/model"
    make_vace_clip "$ref/$name/control.mp4"
    make_mask "$ref/$name/mask.mp4" box
    make_jpeg "$ref/$name/ref.jpg" 1 52 100 2 85
    echo "cases.sh: vace-a14b-tiny/model, $name/control.mp4, mask.mp4 and ref.jpg made"
  fi
  if [[ $name == vace-ref2v ]]; then
    mkdir -p "$ref/$name"
    "$venv/bin/python" "$here/make_vace.py" "$ref/vace-tiny/model"
    make_jpeg "$ref/$name/first.jpg" 6 45 72 2 90
    make_image "$ref/$name/second.png"
    echo "cases.sh: vace-tiny/model, $name/first.jpg and second.png made"
  fi
  if [[ $name == vace-lora ]]; then
    # One LoRA in two formats, as t2v-lora's: diffusers names, and Kohya names (vace_blocks_0_before_proj, ...).
    mkdir -p "$ref/$name"
    local transformer=$ref/vace-tiny/model/transformer
    "$venv/bin/python" "$here/../lora/make_lora.py" --transformer "$transformer" --seed 45 --rank 4 \
      --targets attn,ffn,vace --format diffusers --out "$ref/$name/lora.safetensors"
    "$venv/bin/python" "$here/../lora/make_lora.py" --transformer "$transformer" --seed 45 --rank 4 \
      --targets attn,ffn,vace --format kohya --alpha 2 --out "$ref/$name/lora-kohya.safetensors"
    echo "cases.sh: $name/lora.safetensors and lora-kohya.safetensors made"
  fi
  if [[ $name == vace-outpaint ]]; then
    mkdir -p "$ref/$name"
    make_vace_clip "$ref/$name/control.mp4"
    make_mask "$ref/$name/mask.mp4" border
    echo "cases.sh: $name/control.mp4 and mask.mp4 made"
  fi
  if [[ $name == animate-segments || $name == animate-prev5 || $name == animate-replace ]]; then
    mkdir -p "$ref/$name"
    if [[ $name == animate-segments ]]; then
      "$venv/bin/python" "$here/make_animate.py" "$ref/animate-tiny/model"
      echo "cases.sh: animate-tiny/model made"
      make_jpeg "$ref/$name/ref.jpg" 1 72 45 2 90
    elif [[ $name == animate-prev5 ]]; then
      make_jpeg "$ref/$name/ref.jpg" 1 52 100 2 85
    else
      make_jpeg "$ref/$name/ref.jpg" 8 64 40 2 88
      make_animate_video "$ref/$name/bg.mp4" background
      make_animate_video "$ref/$name/mask.mp4" mask
    fi
    make_animate_video "$ref/$name/pose.mp4" pose
    make_animate_video "$ref/$name/face.mp4" face
    echo "cases.sh: $name/ref.jpg, pose.mp4, face.mp4$([[ $name != animate-replace ]] || echo ', bg.mp4, mask.mp4') made"
  fi
  if [[ $name == ti2v-jpeg ]]; then
    mkdir -p "$ref/$name"
    make_jpeg "$ref/$name/image.jpg" 1 52 100 2 85
    echo "cases.sh: $name/image.jpg made"
  fi
}

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[[ $# -ge 1 ]] || usage
check=false
generator=
if [[ $1 == --check ]]; then
  check=true
  if [[ -n ${CHECK_INTO:-} ]]; then
    out_root=$CHECK_INTO
    mkdir -p "$out_root"
  else
    out_root=$(mktemp -d)
    trap 'rm -rf "$out_root"' EXIT
  fi
elif [[ $1 == --make-inputs ]]; then
  [[ $# -ge 2 ]] || usage
  generator=$2
  shift
elif [[ $1 == -* ]]; then
  usage
else
  out_root=$1
fi
shift
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=("${all_cases[@]}")

"$here/setup.sh" >/dev/null

status=0
for name in "${cases[@]}"; do
  if [[ -n $generator ]]; then
    make_inputs "$generator" "$name"
    continue
  fi
  start=$SECONDS
  run_case "$name" "$out_root/$name"
  echo "cases.sh: $name recorded in $((SECONDS - start)) s"
  if $check; then
    echo "cases.sh: $name against the committed reference"
    "$venv/bin/python" "$here/compare.py" --quiet --rel-tolerance "${REL_TOLERANCE:-5e-6}" \
      --decoded-rel-tolerance "${DECODED_REL_TOLERANCE:-1e-3}" \
      --cases "$ref/$name/case.json" "$out_root/$name/case.json" \
      "$ref/$name/expected.safetensors" "$out_root/$name/expected.safetensors" || status=1
  fi
done
exit $status
