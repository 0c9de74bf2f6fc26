#!/usr/bin/env python3
"""Makes a tiny Wan2.2-Animate Diffusers folder whose CLIP has ViT-H/14's width and image size: what an original
Wan2.2-Animate-14B folder's models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth implies, whose config no file
states (the loader takes ViT-H/14 and CLIPImageProcessor's defaults for it, as for Wan2.1's image models).

    make_animate_vith.py OUT

Built from make_animate.py's tiny model (tests/data/reference/animate-tiny/model) with three changes:
  image_encoder/, image_processor/  make_wan21.write_clip(vith=True): 1280 wide, 16 heads of 80, MLP 5120, 224
                     pixels in 14-pixel patches, 2 layers; CLIPImageProcessor's defaults
  transformer/       make_animate.TRANSFORMER with image_dim 1280 (the image embedder takes that CLIP), and the two
                     keys no weight shows at the values diffusers' converter gives Wan2.2-Animate-14B
                     (rope_max_seq_len 1024, motion_encoder_batch_size 8), so that the config the original
                     layout's weights imply is this folder's exactly
  text_encoder/, tokenizer/, vae/, scheduler/, model_index.json  as make_animate.py writes them
The layouts tests (tests/e2e/layouts) write it into their cache, convert it to the original layout and hold
omni-generate's run on that to its run on this folder.
"""
import json
import os
import shutil
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ beside the tools for the imports below
import make_animate  # noqa: E402
from make_wan21 import SOURCE, write_clip  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for part in ("text_encoder", "tokenizer", "vae", "scheduler"):
        shutil.copytree(os.path.join(SOURCE, part), os.path.join(out, part))
    make_animate.TRANSFORMER = dict(make_animate.TRANSFORMER, image_dim=1280, rope_max_seq_len=1024,
                                    motion_encoder_batch_size=8)
    make_animate.transformer(2211).save_pretrained(os.path.join(out, "transformer"))
    torch.manual_seed(2212)
    write_clip(out, vith=True)
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump(make_animate.INDEX, f, indent=2)
        f.write("\n")
    print(f"make_animate_vith: {out}")


if __name__ == "__main__":
    main()
