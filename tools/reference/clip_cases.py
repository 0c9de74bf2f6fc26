#!/usr/bin/env python3
"""Writes the CLIP image encoder cases that tests/models/clip_vision_model_test.cpp reads, into OUT_DIR.

What diffusers' Wan image pipelines do with an image before the transformer (WanImageToVideoPipeline.encode_image):
  pixel_values = image_processor(images=image, return_tensors="pt").pixel_values
  image_embeds = image_encoder(pixel_values, output_hidden_states=True).hidden_states[-2]
with transformers' CLIPImageProcessor (its PIL backend: this environment has no torchvision) configured as the
Wan2.1 Diffusers repositories' image_processor/preprocessor_config.json, and a CLIPVisionModel at the real
ViT-H/14 width of their image_encoder/config.json (1280 wide, 16 heads, MLP 5120, patch 14, 224 pixels, exact
GELU) with 3 layers instead of 32 and random weights.

OUT_DIR/
  encoder/               CLIPVisionModel.save_pretrained (config.json, model.safetensors): transformers 5 writes
                         the tower's names bare (embeddings.*, encoder.layers.<i>.*, pre_layrnorm.*)
  encoder_with_projection/  CLIPVisionModelWithProjection of the same weights: vision_model.* names (what
                         transformers 4 wrote for the published Wan2.1 image_encoder folders), plus
                         visual_projection.weight and the old position_ids buffer (as in ComfyUI's
                         clip_vision_h.safetensors)
  processor/             CLIPImageProcessor.save_pretrained (preprocessor_config.json)
  images/<name>.{png,jpg}  inputs of several sizes and aspect ratios (a phone-like JPEG among them)
  expected.safetensors   <name>.pixel_values [1, 3, 224, 224]; <name>.hidden_0 / hidden_penultimate /
                         hidden_last [1, 257, 1280] (hidden_states[0], [-2], [-1]) in float32
  cases.json             {"images": [names...], "files": {name: file}}

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/clip_cases.py OUT_DIR
"""

import json
import os
import sys

import numpy as np
import torch
from diffusers.utils import load_image
from PIL import Image
from safetensors.torch import load_file, save_file
from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel, CLIPVisionModelWithProjection


def images(out):
    """Inputs that need resizing and cropping: landscape, portrait, small (upscaled), odd sizes, a JPEG."""
    rng = np.random.default_rng(7)
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    files = {}

    def smooth(h, w):
        # A photo-like image: gradients plus blobs plus a little noise (edges and flat areas both).
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        img = np.stack([x / w * 255, y / h * 255, (x + y) / (w + h) * 255], axis=-1)
        for _ in range(6):
            cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(min(h, w) / 10, min(h, w) / 3)
            color = rng.uniform(0, 255, 3)
            inside = ((y - cy) ** 2 + (x - cx) ** 2) < r * r
            img[inside] = 0.3 * img[inside] + 0.7 * color
        img += rng.normal(0, 6, img.shape)
        return np.clip(img, 0, 255).astype(np.uint8)

    for name, (h, w), ext in [("landscape", (480, 832), "png"), ("portrait", (701, 389), "png"),
                              ("small", (150, 200), "png"), ("square", (224, 224), "png"),
                              ("photo", (1200, 1600), "jpg")]:
        path = os.path.join(out, "images", f"{name}.{ext}")
        im = Image.fromarray(smooth(h, w))
        if ext == "jpg":
            im.save(path, quality=88, subsampling=2)  # 4:2:0, as phone cameras write
        else:
            im.save(path)
        files[name] = os.path.relpath(path, out)
    return files


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    config = CLIPVisionConfig(hidden_size=1280, intermediate_size=5120, num_attention_heads=16, num_hidden_layers=3,
                              image_size=224, patch_size=14, hidden_act="gelu", layer_norm_eps=1e-5,
                              projection_dim=1024)
    model = CLIPVisionModelWithProjection(config).eval()
    # transformers' initialisation leaves the position table and class token tiny next to the patches and
    # the layers near identity; wider weights make every part of the forward move the result.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("position_embedding.weight") or name.endswith("class_embedding"):
                p.normal_(0, 0.5)
            elif "layer_norm" in name or "layrnorm" in name or "layernorm" in name:
                p.copy_(1 + 0.1 * torch.randn_like(p) if name.endswith("weight") else 0.1 * torch.randn_like(p))
    model.save_pretrained(os.path.join(out, "encoder_with_projection"))
    # The old buffer, as files written before transformers 4.31 (and ComfyUI's) carry it.
    path = os.path.join(out, "encoder_with_projection", "model.safetensors")
    tensors = load_file(path)
    tensors["vision_model.embeddings.position_ids"] = torch.arange(257).unsqueeze(0)
    save_file(tensors, path, metadata={"format": "pt"})

    vision = CLIPVisionModel(config).eval()
    # transformers 5's CLIPVisionModel holds the tower's modules itself (no vision_model attribute) and saves
    # them under bare names (embeddings.*, encoder.layers.*, pre_layrnorm.*): the second layout the loader reads.
    prefix = "vision_model."
    vision.load_state_dict({k[len(prefix):]: v for k, v in model.state_dict().items() if k.startswith(prefix)},
                           strict=True)
    vision.save_pretrained(os.path.join(out, "encoder"))
    saved = load_file(os.path.join(out, "encoder", "model.safetensors"))
    assert "pre_layrnorm.weight" in saved and not any(k.startswith(prefix) for k in saved), sorted(saved)[:4]

    # The Wan2.1 repositories' preprocessor_config.json values (OpenAI's statistics, bicubic, 224).
    processor = CLIPImageProcessor(do_resize=True, size={"shortest_edge": 224}, resample=3, do_center_crop=True,
                                   crop_size={"height": 224, "width": 224}, do_rescale=True,
                                   rescale_factor=1 / 255, do_normalize=True,
                                   image_mean=[0.48145466, 0.4578275, 0.40821073],
                                   image_std=[0.26862954, 0.26130258, 0.27577711], do_convert_rgb=True)
    assert type(processor).__name__ == "CLIPImageProcessorPil", type(processor)
    processor.save_pretrained(os.path.join(out, "processor"))

    files = images(out)
    expected = {}
    with torch.no_grad():
        for name, rel in files.items():
            image = load_image(os.path.join(out, rel))
            pixels = processor(images=image, return_tensors="pt").pixel_values
            hidden = vision(pixels, output_hidden_states=True).hidden_states
            assert len(hidden) == config.num_hidden_layers + 1
            expected[f"{name}.pixel_values"] = pixels.contiguous()
            expected[f"{name}.hidden_0"] = hidden[0].contiguous()
            expected[f"{name}.hidden_penultimate"] = hidden[-2].contiguous()
            expected[f"{name}.hidden_last"] = hidden[-1].contiguous()
    save_file(expected, os.path.join(out, "expected.safetensors"))
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"images": list(files), "files": files}, f, indent=1)
    print(f"clip cases: {len(files)} images, encoder at width 1280 in {out}")


if __name__ == "__main__":
    main()
