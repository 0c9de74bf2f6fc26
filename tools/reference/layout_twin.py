#!/usr/bin/env python3
"""The diffusers-layout twin of a converted (ComfyUI single-file) model: the same stored values under
diffusers / transformers names, read back by the public readers, so that omni-generate's run on the converted
files can be held bit for bit to its run on the twin.

    layout_twin.py SRC_PIPELINE_DIR COMFY_DIR OUT_DIR

Every tensor is written in float32: the file's fp16 / bf16 / float8 x scale values convert to float32 exactly, so
a float32 run reads the same numbers from either.
- transformers: diffusers' own WanTransformer3DModel (VACE: WanVACETransformer3DModel).from_single_file (config
  from SRC);
  an fp8_scaled file is first dequantized here (float8 x scale_weight in float32: ComfyUI's definition of the
  format, independent of any name table), since diffusers ignores the scales.
- text encoder: the ComfyUI file already has transformers' names; its scales are applied the same way and the
  carried `spiece_model` and `scaled_fp8` notes dropped.
- VAE: the source VAE cast to the dtype the ComfyUI VAE file stores (a cast does not depend on names;
  diffusers' single-file VAE reader handles only num_res_blocks 2).
Everything else (configs, tokenizer, scheduler, model_index.json) is copied from SRC.
"""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file


def dequantized(sd):
    """float8 weights times their `<layer>.scale_weight` / `<layer>.weight_scale`, in float32; notes dropped."""
    out = {}
    for k, v in sd.items():
        base = k.rsplit(".", 1)[0] if "." in k else ""
        if k.endswith((".scale_weight", ".weight_scale", ".scale_input", ".input_scale", ".comfy_quant")):
            continue
        if k.split(".")[-1] in ("scaled_fp8", "spiece_model") or k in ("scaled_fp8", "spiece_model"):
            continue
        scale = sd.get(base + ".scale_weight", sd.get(base + ".weight_scale"))
        if v.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            s = torch.ones(()) if scale is None else scale.float()
            if s.numel() > 1:
                s = s.reshape(-1, *([1] * (v.dim() - 1)))
            v = v.float() * s
        out[k] = v
    return out


def stored_dtype(path):
    with safe_open(str(path), "pt") as f:
        return {f.get_slice(k).get_dtype() for k in f.keys()}


def main():
    src, comfy, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    import diffusers

    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(src, out)
    index = json.loads((src / "model_index.json").read_text())
    files = sorted(comfy.glob("*.safetensors"))
    experts = {"transformer": [f for f in files if "high_noise" in f.name or "_5B_" in f.name
                               or f.name.startswith("wan2.1_")],
               "transformer_2": [f for f in files if "low_noise" in f.name]}
    for component, found in experts.items():
        if index.get(component, [None])[0] is None:
            continue
        assert len(found) == 1, (component, found)
        sd = load_file(str(found[0]))
        with tempfile.TemporaryDirectory() as tmp:
            plain = Path(tmp) / "plain.safetensors"
            save_file(dequantized(sd), str(plain))
            # WanVACETransformer3DModel for a VACE source (its vace_blocks), else WanTransformer3DModel.
            cls = getattr(diffusers, json.loads((src / component / "config.json").read_text())["_class_name"])
            model = cls.from_single_file(str(plain), config=str(src), subfolder=component,
                                                           torch_dtype=torch.float32)
            state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
        target = out / component / "diffusion_pytorch_model.safetensors"
        for p in (out / component).glob("diffusion_pytorch_model*"):
            p.unlink()
        save_file(state, str(target))
    t5 = [f for f in files if f.name.startswith("umt5")]
    assert len(t5) == 1, t5
    te = {k: v.float() for k, v in dequantized(load_file(str(t5[0]))).items()}
    for p in (out / "text_encoder").glob("model*.safetensors*"):
        p.unlink()
    save_file({k: v.contiguous() for k, v in te.items()}, str(out / "text_encoder" / "model.safetensors"))
    vae = [f for f in files if "vae" in f.name]
    assert len(vae) == 1, vae
    (dt,) = stored_dtype(vae[0])
    dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[dt]
    vsrc = sorted((src / "vae").glob("*.safetensors"))
    assert len(vsrc) == 1, vsrc
    vsd = {k: v.to(dtype).float().contiguous() for k, v in load_file(str(vsrc[0])).items()}
    save_file(vsd, str(out / "vae" / vsrc[0].name))
    clip = comfy / "clip_vision_h.safetensors"
    if clip.exists():
        # The image encoder as the file stores it (its 16 bits in float32), under the source folder's names.
        names = set(load_file(str(sorted((src / "image_encoder").glob("*.safetensors"))[0])))
        csd = {k: v.float().contiguous() for k, v in load_file(str(clip)).items()}
        csd = {k: v for k, v in csd.items() if k in names}
        assert set(csd) == names, sorted(names ^ set(csd))[:3]
        for p in (out / "image_encoder").glob("*.safetensors"):
            p.unlink()
        save_file(csd, str(out / "image_encoder" / "model.safetensors"))
    print(f"twin written: {out}")


if __name__ == "__main__":
    main()
