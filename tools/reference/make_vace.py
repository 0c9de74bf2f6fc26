#!/usr/bin/env python3
"""Makes tiny VACE Diffusers folders, written by diffusers itself (WanVACETransformer3DModel.save_pretrained):
  (default)  one transformer, as Wan-AI/Wan2.1-VACE-1.3B-diffusers / 14B-diffusers are laid out
             (tests/data/reference/vace-tiny/model);
  --a14b     two experts with boundary_ratio 0.875, as the Wan2.2-VACE-Fun-A14B Diffusers conversions are laid out
             (tests/data/reference/vace-a14b-tiny/model).

  model_index.json   WanVACEPipeline (transformer_2 [null, null] and no boundary_ratio, or both)
  transformer/       WanVACETransformer3DModel: t2v-a14b-tiny's transformer config (16 input channels, 2 heads of 12,
  transformer_2/     text_dim 32) with 3 blocks, vace_layers [0, 2] and vace_in_channels 96 (the Wan2.1 VAE's
                     2 x 16 latent channels and 8 x 8 mask channels, as every published VACE model), random
                     weights with the norms and modulation tables moved off diffusers' 1 / 0 initialisation
  text_encoder/, tokenizer/, vae/, scheduler/  copied from t2v-a14b-tiny/model

Run it in the reference environment:
  tools/reference/.venv/bin/python tools/reference/make_vace.py tests/data/reference/vace-tiny/model
  tools/reference/.venv/bin/python tools/reference/make_vace.py --a14b tests/data/reference/vace-a14b-tiny/model
"""

import json
import os
import shutil
import sys

import torch
from diffusers import WanVACETransformer3DModel

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..", "tests", "data", "reference", "t2v-a14b-tiny", "model")


def transformer(seed):
    torch.manual_seed(seed)
    config = json.load(open(os.path.join(SOURCE, "transformer", "config.json")))
    config = {k: v for k, v in config.items() if not k.startswith("_")}
    config.update(num_layers=3, vace_layers=[0, 2], vace_in_channels=96)
    model = WanVACETransformer3DModel(**config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("norm2.weight", "norm_q.weight", "norm_k.weight")):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif "scale_shift_table" in name:
                p.copy_(0.3 * torch.randn_like(p))
    return model


def main():
    args = sys.argv[1:]
    a14b = "--a14b" in args
    args = [a for a in args if a != "--a14b"]
    if len(args) != 1:
        sys.exit(__doc__)
    out = args[0]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for part in ("text_encoder", "tokenizer", "vae", "scheduler"):
        shutil.copytree(os.path.join(SOURCE, part), os.path.join(out, part))
    transformer(4101 if a14b else 4100).save_pretrained(os.path.join(out, "transformer"))
    if a14b:
        transformer(4102).save_pretrained(os.path.join(out, "transformer_2"))
    index = {
        "_class_name": "WanVACEPipeline",
        "_diffusers_version": "0.40.0",
        "boundary_ratio": 0.875 if a14b else None,
        "scheduler": ["diffusers", "UniPCMultistepScheduler"],
        "text_encoder": ["transformers", "UMT5EncoderModel"],
        "tokenizer": ["transformers", "T5Tokenizer"],
        "transformer": ["diffusers", "WanVACETransformer3DModel"],
        "transformer_2": ["diffusers", "WanVACETransformer3DModel"] if a14b else [None, None],
        "vae": ["diffusers", "AutoencoderKLWan"],
    }
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
    print(f"make_vace: {out}")


if __name__ == "__main__":
    main()
