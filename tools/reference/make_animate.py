#!/usr/bin/env python3
"""Makes a tiny Wan2.2-Animate Diffusers folder (tests/data/reference/animate-tiny/model), laid out as
Wan-AI/Wan2.2-Animate-14B-Diffusers is and written by the libraries that publish it (diffusers' and transformers'
save_pretrained):

  model_index.json   WanAnimatePipeline: tokenizer, text_encoder, vae, scheduler, image_processor, image_encoder and
                     one transformer, the components of WanAnimatePipeline.__init__ (no transformer_2, no
                     boundary_ratio, no expand_timesteps: the pipeline has none of them)
  transformer/       diffusers' WanAnimateTransformer3DModel: 2 heads of 12, 4 blocks, 36 input channels (16 noise +
                     4 mask + 16 reference / previous-segment latents), text_dim 32 (the UMT5 below), the CLIP image
                     branch (image_dim 16, added_kv_proj_dim 24), a 32-pixel motion encoder (channels 16, 16, 8, 4),
                     a face encoder (hidden 8, 2 heads) and a face adapter after blocks 0 and 2; random weights, the
                     norms, biases, modulation tables and the face padding token moved off diffusers' 1 / 0
                     initialisation as tools/reference/animate_cases.py does
  image_encoder/     the tiny CLIPVisionModel of make_wan21.py (hidden 16, 2 heads, MLP 32, 3 layers, patch 14,
  image_processor/   28 pixels, tensors under vision_model.*; CLIPImageProcessor shortest edge 28, crop 28x28),
                     written by make_wan21.write_clip with its own seed
  text_encoder/, tokenizer/, vae/, scheduler/  copied from i2v-a14b-tiny/model (UMT5 width 32, the Wan2.1 VAE,
                     UniPC with flow_shift 5, Wan2.2-Animate's own)

Run it in the reference environment:
  tools/reference/.venv/bin/python tools/reference/make_animate.py tests/data/reference/animate-tiny/model
"""

import inspect
import json
import os
import shutil
import sys

import torch
from diffusers import WanAnimatePipeline, WanAnimateTransformer3DModel

sys.dont_write_bytecode = True  # no __pycache__ beside the tools for the import below
from make_wan21 import SOURCE, write_clip  # noqa: E402

TRANSFORMER = dict(
    patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=36, latent_channels=16,
    out_channels=16, text_dim=32, freq_dim=32, ffn_dim=40, num_layers=4, cross_attn_norm=True,
    qk_norm="rms_norm_across_heads", eps=1e-6, image_dim=16, added_kv_proj_dim=24, rope_max_seq_len=64,
    motion_encoder_channel_sizes={"4": 16, "8": 16, "16": 8, "32": 4}, motion_encoder_size=32, motion_style_dim=10,
    motion_dim=4, motion_encoder_dim=12, face_encoder_hidden_dim=8, face_encoder_num_heads=2,
    inject_face_latents_blocks=2, motion_encoder_batch_size=4)

INDEX = {
    "_class_name": "WanAnimatePipeline",
    "_diffusers_version": "0.40.0",
    "image_encoder": ["transformers", "CLIPVisionModel"],
    "image_processor": ["transformers", "CLIPImageProcessor"],
    "scheduler": ["diffusers", "UniPCMultistepScheduler"],
    "text_encoder": ["transformers", "UMT5EncoderModel"],
    "tokenizer": ["transformers", "T5Tokenizer"],
    "transformer": ["diffusers", "WanAnimateTransformer3DModel"],
    "vae": ["diffusers", "AutoencoderKLWan"],
}


def transformer(seed):
    torch.manual_seed(seed)
    model = WanAnimateTransformer3DModel(**TRANSFORMER).eval()
    # diffusers initialises norms to 1, biases, modulation tables and the face padding token to 0: move them.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("norm2.weight", "norm_q.weight", "norm_k.weight", "norm_added_k.weight",
                              "norm1.weight")):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif "scale_shift_table" in name or name.endswith(".bias") or "padding_tokens" in name:
                p.copy_(0.3 * torch.randn_like(p))
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    # model_index.json names exactly the pipeline's components (DiffusionPipeline.save_pretrained writes those).
    components = set(inspect.signature(WanAnimatePipeline.__init__).parameters) - {"self"}
    if components != {k for k in INDEX if not k.startswith("_")}:
        sys.exit(f"make_animate: WanAnimatePipeline takes {sorted(components)}, model_index.json names others")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for part in ("text_encoder", "tokenizer", "vae", "scheduler"):
        shutil.copytree(os.path.join(SOURCE, part), os.path.join(out, part))
    transformer(2201).save_pretrained(os.path.join(out, "transformer"))
    torch.manual_seed(2202)
    write_clip(out)
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump(INDEX, f, indent=2)
        f.write("\n")
    print(f"make_animate: {out}")


if __name__ == "__main__":
    main()
