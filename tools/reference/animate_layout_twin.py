#!/usr/bin/env python3
"""The diffusers-layout twin of a Wan2.2-Animate ComfyUI file set (foreign_layouts.py comfy on an Animate source):
layout_twin.py's twin, whose transformer is read by diffusers' own converter script instead of its single-file
reader (which knows only Wan2.2-Animate-14B's 7 motion-encoder ResBlocks and keeps the Blur buffers).

    animate_layout_twin.py SRC_PIPELINE_DIR COMFY_DIR OUT_DIR

Every tensor is written in float32 (the file's fp16 / bf16 / float8 x scale values convert exactly):
- transformer: the wan2.2_animate_14B_*.safetensors file, prefix stripped and float8 dequantized (layout_twin's
  `dequantized`: float8 x scale_weight, ComfyUI's definition, independent of names), through diffusers'
  scripts/convert_wan_to_diffusers.py convert_transformer (check_foreign_layouts.convert_animate), config from SRC;
- text encoder, VAE, CLIP: as layout_twin.py writes them (the ComfyUI text encoder already has transformers'
  names, the VAE is the source's cast to the file's dtype, the CLIP the file's values under the source's names).
Everything else (configs, tokenizer, scheduler, image processor, model_index.json) is copied from SRC.
"""
import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.dont_write_bytecode = True  # no __pycache__ beside the tools for the imports below

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from check_foreign_layouts import convert_animate  # noqa: E402
from layout_twin import dequantized, stored_dtype  # noqa: E402

PREFIX = "model.diffusion_model."


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, comfy, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(src, out)
    files = sorted(comfy.glob("*.safetensors"))
    (tfile,) = [f for f in files if f.name.startswith("wan2.2_animate_")]
    sd = {k.removeprefix(PREFIX): v for k, v in dequantized(load_file(str(tfile))).items()}
    config = {k: v for k, v in json.loads((src / "transformer" / "config.json").read_text()).items()
              if not k.startswith("_")}
    state = {k: v.float().contiguous() for k, v in convert_animate(sd, config).items()}
    for p in (out / "transformer").glob("diffusion_pytorch_model*"):
        p.unlink()
    save_file(state, str(out / "transformer" / "diffusion_pytorch_model.safetensors"))

    (t5,) = [f for f in files if f.name.startswith("umt5")]
    te = {k: v.float().contiguous() for k, v in dequantized(load_file(str(t5))).items()}
    for p in (out / "text_encoder").glob("model*.safetensors*"):
        p.unlink()
    save_file(te, str(out / "text_encoder" / "model.safetensors"))
    (vae,) = [f for f in files if "vae" in f.name]
    (dt,) = stored_dtype(vae)
    dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[dt]
    (vsrc,) = sorted((src / "vae").glob("*.safetensors"))
    save_file({k: v.to(dtype).float().contiguous() for k, v in load_file(str(vsrc)).items()},
              str(out / "vae" / vsrc.name))
    clip = comfy / "clip_vision_h.safetensors"
    names = set(load_file(str(sorted((src / "image_encoder").glob("*.safetensors"))[0])))
    csd = {k: v.float().contiguous() for k, v in load_file(str(clip)).items() if k in names}
    assert set(csd) == names, sorted(names ^ set(csd))[:3]
    for p in (out / "image_encoder").glob("*.safetensors"):
        p.unlink()
    save_file(csd, str(out / "image_encoder" / "model.safetensors"))
    print(f"twin written: {out}")


if __name__ == "__main__":
    main()
