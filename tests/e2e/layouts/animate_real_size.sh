#!/usr/bin/env bash
# Wan2.2-Animate-14B's transformer at its real size in Wan's original layout (tools/reference/animate_real_size.py:
# names and shapes from diffusers' WanAnimateTransformer3DModel at the config diffusers' converter gives it, mapped
# to Wan's names and checked there against the converter's own renames (and, with WAN22_SRC, against Wan's
# WanAnimateModel); sparse data, nothing on disk). The transformer config omni-generate infers from that folder
# (config.json and the tensor shapes; --log-level debug prints it) must be the converter's, key for key.
#   animate_real_size.sh GENERATE VENV SOURCE_DIR CONVERTED WORK
# CONVERTED: animate_convert.sh's folder (its ViT-H-wide CLIP file stands in for the image encoder).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; venv=$2; src=$3; conv=$4; work=$5
need_venv "$venv"
py=$(cd "$venv" && pwd)/bin/python
rm -rf "$work"; mkdir -p "$work"
(cd "$src/tools/reference" && "$py" animate_real_size.py "$work/real") >"$work/real.txt" 2>&1 ||
  { cat "$work/real.txt"; fail "animate_real_size.py"; }
grep -E '^(PASS|SKIP)' "$work/real.txt" | sed 's/^/  /'
[ "$(du -sk "$work/real" | cut -f1)" -lt 20000 ] || fail "the sparse checkpoint takes disk space"
seg=$src/tests/data/reference/animate-segments
tiny=$src/tests/data/reference/animate-tiny/model
set +e
"$gen" --transformer "$work/real/transformer" --text-encoder "$tiny/text_encoder" --vae "$tiny/vae" \
  --tokenizer "$tiny/tokenizer" --image-encoder "$conv/original/models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth" \
  --image "$seg/ref.jpg" --pose-video "$seg/pose.mp4" --face-video "$seg/face.mp4" --prompt "a dancer" \
  --dry-run --device cpu --log-level debug --output "$work/a.mp4" >"$work/dry.txt" 2>&1
code=$?
set -e
if [ "$code" != 0 ]; then
  # Component files whose transformer is Animate's run as WanAnimatePipeline only with lib/io/model_dir.cpp's
  # change (animate_layout.sh); the config under test is inferred before that.
  grep -qF "in a pipeline that is not WanAnimatePipeline" "$work/dry.txt" || { cat "$work/dry.txt"; fail "dry run"; }
  echo "note: the dry run stopped where this omni-generate lacks lib/io/model_dir.cpp's change (exit $code)"
fi
"$py" - "$work/dry.txt" "$work/real/converter_config.json" <<'PY' || fail "the inferred config is not the converter's"
import json, sys
text, want = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
lines = [l for l in text.splitlines() if "--transformer" in l and "the transformer config from" in l]
assert len(lines) == 1, f"no config line in the debug log ({len(lines)})"
got = json.loads(lines[0][lines[0].index("{"):])
assert got.pop("_class_name") == "WanAnimateTransformer3DModel", "not an Animate config"
bad = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k, "absent") != want.get(k, "absent")}
assert not bad, f"differs from diffusers' converter: {bad}"
print(f"ok: the inferred config is the converter's: {len(want)} keys (motion_encoder_size "
      f"{got['motion_encoder_size']}, inject_face_latents_blocks {got['inject_face_latents_blocks']}, "
      f"face_encoder_num_heads {got['face_encoder_num_heads']}, motion_encoder_channel_sizes "
      f"{got['motion_encoder_channel_sizes']})")
PY
