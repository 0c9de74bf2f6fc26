#!/usr/bin/env python3
"""Makes tiny Wan2.1 Diffusers folders, written by the libraries that publish them:
  (default)  image-to-video (tests/data/reference/i2v-wan21-tiny/model): Wan-AI/Wan2.1-I2V-14B-480P-Diffusers'
             layout, below;
  --flf2v    first-last-frame (Wan-AI/Wan2.1-FLF2V-14B-720P-Diffusers, tests/data/reference/flf2v-wan21-tiny/model):
             the same with the transformer's image position table (pos_embed_seq_len: two images' CLIP tokens, 2 x 5);
  --vith     image-to-video with a CLIP of ViT-H/14's width and image size (1280 wide, 16 heads of 80, MLP 5120,
             224 pixels in 14-pixel patches, exact GELU) but 2 layers, and CLIPImageProcessor's defaults (the
             published image_processor): what an original Wan2.1 folder's CLIP implies, whose config no file states
             (the layouts tests write it to their cache);
  --t2v      text-to-video (Wan-AI/Wan2.1-T2V-14B-Diffusers, tests/data/reference/t2v-wan21-tiny/model): one
             transformer (t2v-a14b-tiny's first expert, as stored), no boundary_ratio, no image encoder; the other
             components copied from t2v-a14b-tiny/model.

  model_index.json   WanImageToVideoPipeline, one transformer, no boundary_ratio, image_encoder CLIPVisionModel,
                     image_processor CLIPImageProcessor (as the published repository's)
  transformer/       diffusers' WanTransformer3DModel: i2v-a14b-tiny's transformer config (36 input channels) plus
                     the CLIP image branch (image_dim 16, added_kv_proj_dim 24 = its inner width), random weights
  image_encoder/     transformers' CLIPVisionModel (hidden 16, 2 heads, MLP 32, 3 layers, patch 14, 28 pixels,
                     exact GELU as open_clip's ViT-H), random weights, its tensors under vision_model.* as the
                     published folder holds them (transformers 4 wrote that; 5 would write bare names)
  image_processor/   CLIPImageProcessor: shortest edge 28, crop 28x28, bicubic, OpenAI's statistics
  text_encoder/, tokenizer/, vae/, scheduler/  copied from i2v-a14b-tiny/model

Run it in the reference environment:
  tools/reference/.venv/bin/python tools/reference/make_wan21.py tests/data/reference/i2v-wan21-tiny/model
  tools/reference/.venv/bin/python tools/reference/make_wan21.py --flf2v tests/data/reference/flf2v-wan21-tiny/model
  tools/reference/.venv/bin/python tools/reference/make_wan21.py --t2v tests/data/reference/t2v-wan21-tiny/model
"""

import json
import os
import shutil
import sys

import torch
from diffusers import WanTransformer3DModel
from safetensors.torch import load_file, save_file
from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..", "tests", "data", "reference", "i2v-a14b-tiny", "model")
T2V_SOURCE = os.path.join(HERE, "..", "..", "tests", "data", "reference", "t2v-a14b-tiny", "model")


def make_t2v(out):
    """One transformer of the two-expert T2V fixture, in a WanPipeline without a boundary (Wan2.1 T2V's index)."""
    for part in ("transformer", "text_encoder", "tokenizer", "vae", "scheduler"):
        shutil.copytree(os.path.join(T2V_SOURCE, part), os.path.join(out, part))
    index = json.load(open(os.path.join(T2V_SOURCE, "model_index.json")))
    index.pop("boundary_ratio", None)
    index["transformer_2"] = [None, None]
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
    print(f"make_wan21: {out}")


def write_clip(out, vith=False):
    """image_encoder/ and image_processor/ of `out`: the tiny CLIP (--vith: the ViT-H/14-wide one) with random
    weights drawn from torch's global generator as it stands (the caller seeds it), its tensors re-saved under
    vision_model.*, and its CLIPImageProcessor. make_animate.py writes its CLIP with this too."""
    if vith:
        clip_config = CLIPVisionConfig(hidden_size=1280, intermediate_size=5120, num_attention_heads=16,
                                       num_hidden_layers=2, image_size=224, patch_size=14, hidden_act="gelu",
                                       layer_norm_eps=1e-5, projection_dim=1024)
    else:
        clip_config = CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                       num_hidden_layers=3, image_size=28, patch_size=14, hidden_act="gelu",
                                       layer_norm_eps=1e-5, projection_dim=16)
    clip = CLIPVisionModel(clip_config).eval()
    with torch.no_grad():
        for name, p in clip.named_parameters():
            if "position_embedding" in name or "class_embedding" in name:
                p.normal_(0, 0.5)
            elif "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p) if name.endswith("weight") else 0.2 * torch.randn_like(p))
    enc = os.path.join(out, "image_encoder")
    clip.save_pretrained(enc)
    # The published layout: every tensor under vision_model.* (what transformers 4 saved).
    path = os.path.join(enc, "model.safetensors")
    tensors = load_file(path)
    save_file({k if k.startswith("vision_model.") else "vision_model." + k: v for k, v in tensors.items()}, path,
              metadata={"format": "pt"})

    if vith:
        CLIPImageProcessor().save_pretrained(os.path.join(out, "image_processor"))
    else:
        CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}, resample=3,
                           do_center_crop=True, do_resize=True, do_rescale=True, do_normalize=True,
                           do_convert_rgb=True).save_pretrained(os.path.join(out, "image_processor"))


def main():
    args = sys.argv[1:]
    flf2v, t2v, vith = "--flf2v" in args, "--t2v" in args, "--vith" in args
    args = [a for a in args if a not in ("--flf2v", "--t2v", "--vith")]
    if len(args) != 1 or flf2v + t2v + vith > 1:
        sys.exit(__doc__)
    out = args[0]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    if t2v:
        return make_t2v(out)
    for part in ("text_encoder", "tokenizer", "vae", "scheduler"):
        shutil.copytree(os.path.join(SOURCE, part), os.path.join(out, part))

    torch.manual_seed(2022 if flf2v else 2023 if vith else 2021)
    clip_width = 1280 if vith else 16
    config = json.load(open(os.path.join(SOURCE, "transformer", "config.json")))
    config = {k: v for k, v in config.items() if not k.startswith("_")}
    # The CLIP below makes (28 / 14)^2 + 1 = 5 tokens per image (--vith: 257).
    config.update(image_dim=clip_width, added_kv_proj_dim=24, pos_embed_seq_len=10 if flf2v else None)
    transformer = WanTransformer3DModel(**config).eval()
    with torch.no_grad():
        for name, p in transformer.named_parameters():
            # diffusers initialises norms to 1 / 0 and the modulation table to 0: move every parameter.
            if name.endswith("norm_added_k.weight") or ("image_embedder.norm" in name and name.endswith("weight")):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif ("scale_shift_table" in name or "pos_embed" in name
                  or ("image_embedder" in name and name.endswith("bias"))):
                p.copy_(0.2 * torch.randn_like(p))
    transformer.save_pretrained(os.path.join(out, "transformer"))

    write_clip(out, vith)

    index = {
        "_class_name": "WanImageToVideoPipeline",
        "_diffusers_version": "0.40.0",
        "boundary_ratio": None,
        "expand_timesteps": False,
        "image_encoder": ["transformers", "CLIPVisionModel"],
        "image_processor": ["transformers", "CLIPImageProcessor"],
        "scheduler": ["diffusers", "UniPCMultistepScheduler"],
        "text_encoder": ["transformers", "UMT5EncoderModel"],
        "tokenizer": ["transformers", "T5Tokenizer"],
        "transformer": ["diffusers", "WanTransformer3DModel"],
        "transformer_2": [None, None],
        "vae": ["diffusers", "AutoencoderKLWan"],
    }
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
    print(f"make_wan21: {out}")


if __name__ == "__main__":
    main()
