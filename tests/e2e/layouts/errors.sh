#!/usr/bin/env bash
# Weight files that do not fit, through the command line: one error line naming the file, exit 3, on every rank,
# within seconds, nothing written and nothing from the file run.
#   errors.sh GENERATE SOURCE_DIR PTH_CASES CONVERTED WORK_DIR
# PTH_CASES: tools/reference/pth_cases.py's files (PyPI torch's, and hostile ones); CONVERTED: convert.sh's
# folder of the T2V-A14B fixture.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; src=$2; cases=$3; conv=$4; work=$5
rm -rf "$work"; mkdir -p "$work"
model=$src/tests/data/reference/t2v-a14b-tiny/model
run=(--model "$model" --prompt "a fox" --height 32 --width 32 --num-frames 5 --num-inference-steps 1
     --device cpu --output "$work/a.mp4")
marker=$(grep -o '/tmp/omni_pth_pwned_[0-9a-f]*' "$cases/cases.json" | head -1)

expect global_os_system 2 3 "bad_global_os_system.pth: data.pkl: byte" x "${run[@]}" \
  --text-encoder "$cases/bad_global_os_system.pth"
expect reduce_os_system 2 3 "GLOBAL posix.system is not allowed in a state dict" x "${run[@]}" \
  --vae "$cases/bad_reduce_os_system.pth"
[ -z "$marker" ] || [ ! -e "$marker" ] && pass "the REDUCE payload did not run" || flunk "the REDUCE payload ran"
expect truncated_zip 2 3 "bad_truncated.pth: truncated or corrupt zip" x "${run[@]}" \
  --text-encoder "$cases/bad_truncated.pth"
expect short_record 1 3 "shorter than its storage" x "${run[@]}" --vae "$cases/bad_short_record.pth"
expect legacy_pickle 2 3 "legacy (pre-1.6, non-zip) torch.save file" x "${run[@]}" \
  --text-encoder "$cases/bad_legacy.pth"
expect vae_as_transformer 2 3 "not the weights of a transformer of Wan2.2" x "${run[@]}" \
  --transformer "$conv/comfy-fp16/wan_2.1_vae.safetensors"
expect unrelated_pth 1 3 "not the weights of a text_encoder of Wan2.2" x "${run[@]}" \
  --text-encoder "$cases/good_state_dict.pth"
expect no_such_file 2 3 "--vae $work/missing.safetensors: no such file or folder" x "${run[@]}" \
  --vae "$work/missing.safetensors"
mkdir -p "$work/empty"
expect neither_layout 1 3 "is neither a diffusers pipeline folder" x --model "$work/empty" --prompt "a fox" \
  --device cpu --output "$work/a.mp4"
# Wan's T5 .pth carries no tokenizer (ComfyUI's umt5_xxl files do: a spiece_model tensor, used when present).
expect no_tokenizer 1 3 "and there is no tokenizer (give --tokenizer DIR" x --prompt "a fox" --device cpu \
  --output "$work/a.mp4" --transformer "$conv/comfy-fp16/wan2.2_t2v_high_noise_14B_fp16.safetensors" \
  --text-encoder "$conv/original/models_t5_umt5-xxl-enc-bf16.pth" --vae "$conv/comfy-fp16/wan_2.1_vae.safetensors"
expect heads_unknown 1 3 "the model width 24 is not a multiple of 128" x --prompt "a fox" --device cpu \
  --output "$work/a.mp4" --transformer "$conv/comfy-fp16/wan2.2_t2v_high_noise_14B_fp16.safetensors" \
  --text-encoder "$conv/comfy-fp16/umt5_xxl_fp16.safetensors" --vae "$conv/comfy-fp16/wan_2.1_vae.safetensors" \
  --tokenizer "$model/tokenizer"
[ ! -e "$work/a.mp4" ] && pass "no output written" || flunk "an output was written"
summary
