#!/usr/bin/env python3
"""A real-size Wan2.2 Diffusers folder with sparse data, for planning (omni-generate --dry-run --plan-for).

    sparse_checkpoint.py KIND SOURCE OUT      KIND: t2v-a14b, i2v-a14b or ti2v-5b

The configs are SOURCE's (a tiny reference model of the same kind: model_index.json, scheduler, tokenizer)
with the sizes the published Wan-AI/Wan2.2-{T2V-A14B,I2V-A14B,TI2V-5B}-Diffusers configs carry. Every weight
name, shape and dtype comes from the libraries that publish the checkpoints, instantiated from those configs
without memory (accelerate.init_empty_weights): diffusers' WanTransformer3DModel and AutoencoderKLWan,
transformers' UMT5EncoderModel. Each safetensors file holds its real header and the data's size as a hole
(nothing on disk), sharded with an index json as save_pretrained does (5 GB shards, as the published repos).
Stored dtypes as published: transformers float32, the text encoder bfloat16, the VAE float32.

A dry run reads configs and headers only, so it plans these as it would the real files. Prints, per
component, the parameter count, its stored bytes, the bytes held in bfloat16 (the library's float32 modules
kept), its blocks and the rest (root), as JSON: the hand computation the plan tests compare with.
"""
import json
import os
import shutil
import struct
import sys

import torch
from accelerate import init_empty_weights
from diffusers import AutoencoderKLWan, ModelMixin, WanTransformer3DModel
from transformers import UMT5Config, UMT5EncoderModel

# The published sizes (Wan-AI/Wan2.2-*-Diffusers config.json files).
TEXT = dict(d_model=4096, num_layers=24, num_heads=64, d_kv=64, d_ff=10240, vocab_size=256384)
TRANSFORMER = {
    "t2v-a14b": dict(num_attention_heads=40, attention_head_dim=128, num_layers=40, ffn_dim=13824, text_dim=4096),
    "i2v-a14b": dict(num_attention_heads=40, attention_head_dim=128, num_layers=40, ffn_dim=13824, text_dim=4096),
    "ti2v-5b": dict(num_attention_heads=24, attention_head_dim=128, num_layers=30, ffn_dim=14336, text_dim=4096),
}
VAE = {  # Wan2.1's VAE for the A14B models, Wan2.2's for TI2V-5B
    "t2v-a14b": dict(base_dim=96, dim_mult=[1, 2, 4, 4], num_res_blocks=2),
    "i2v-a14b": dict(base_dim=96, dim_mult=[1, 2, 4, 4], num_res_blocks=2),
    "ti2v-5b": dict(base_dim=160, decoder_base_dim=256, dim_mult=[1, 2, 4, 4], num_res_blocks=2),
}
SHARD_BYTES = 5 * 10**9
DTYPE_NAMES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


def write_sparse(folder, stem, index_name, tensors):
    """tensors: [(name, shape, dtype)] in state-dict order -> safetensors files with holes, an index when sharded."""
    shards, current, size = [], [], 0
    for t in tensors:
        n = t[2].itemsize
        for d in t[1]:
            n *= d
        if current and size + n > SHARD_BYTES:
            shards.append(current)
            current, size = [], 0
        current.append((t, n))
        size += n
    shards.append(current)
    os.makedirs(folder, exist_ok=True)
    weight_map = {}
    for i, shard in enumerate(shards):
        name = f"{stem}.safetensors" if len(shards) == 1 else f"{stem}-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        header, offset = {}, 0
        for (tname, shape, dtype), n in shard:
            header[tname] = {"dtype": DTYPE_NAMES[dtype], "shape": list(shape), "data_offsets": [offset, offset + n]}
            offset += n
            weight_map[tname] = name
        blob = json.dumps(header, separators=(",", ":")).encode()
        blob += b" " * (-len(blob) % 8)  # 8-byte alignment of the data, as safetensors writes it
        with open(os.path.join(folder, name), "wb") as f:
            f.write(struct.pack("<Q", len(blob)) + blob)
            f.truncate(8 + len(blob) + offset)  # the data: a hole
    if len(shards) > 1:
        total = sum(n for shard in shards for _, n in shard)
        with open(os.path.join(folder, index_name), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def tensors_of(model, dtype):
    # Every tensor save_pretrained writes: parameters and persistent buffers; of tied weights only the one the
    # others point to (UMT5's shared.weight, not encoder.embed_tokens.weight: transformers' _tied_weights_keys).
    tied = getattr(model, "_tied_weights_keys", None) or {}
    out = []
    for name, t in model.state_dict().items():
        if name in tied:
            continue
        out.append((name, tuple(t.shape), dtype if t.is_floating_point() else t.dtype))
    return out


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in TRANSFORMER:
        sys.exit(__doc__)
    kind, source, out = sys.argv[1:]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for item in ("model_index.json", "scheduler", "tokenizer"):
        src = os.path.join(source, item)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(out, item))
    summary = {}

    def component(name, config_update, build, dtype, stem, index_name):
        cfg_path = os.path.join(source, name, "config.json")
        cfg = json.load(open(cfg_path))
        cfg.update(config_update)
        with init_empty_weights():
            model = build(cfg)
        tensors = tensors_of(model, dtype)
        folder = os.path.join(out, name)
        write_sparse(folder, stem, index_name, tensors)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        numel = {n: int(torch.Size(s).numel()) for n, s, _ in tensors}
        # Held in bfloat16 (--dtype bfloat16), but for the modules the library keeps in float32 when it loads in
        # bfloat16: diffusers' _keep_in_fp32_modules (the transformer's time embedder, modulation tables and
        # norms); transformers keeps _keep_in_fp32_modules for float16 only, _keep_in_fp32_modules_strict always.
        if isinstance(model, ModelMixin):
            keep = model._keep_in_fp32_modules or []
        else:
            keep = getattr(model, "_keep_in_fp32_modules_strict", None) or []
        held = {n: k * (4 if any(m in n.split(".") for m in keep) else 2) for n, k in numel.items()}
        block = {"transformer": "blocks", "transformer_2": "blocks", "text_encoder": "block"}.get(name)
        blocks = {}
        for n, b in held.items():
            parts = n.split(".")
            if block in parts and parts[parts.index(block) + 1].isdigit():
                key = int(parts[parts.index(block) + 1])
                blocks[key] = blocks.get(key, 0) + b
        summary[name] = {
            "parameters": sum(numel.values()),
            "stored_bytes": sum(numel[n] * d.itemsize for n, _, d in tensors),
            "bf16_held_bytes": sum(held.values()),
            "blocks": len(blocks),
            "largest_block_bytes": max(blocks.values(), default=0),
            "root_bytes": sum(held.values()) - sum(blocks.values()),
        }

    def transformer(cfg):
        return WanTransformer3DModel.from_config(cfg)

    experts = ["transformer"] + (["transformer_2"] if os.path.isdir(os.path.join(source, "transformer_2")) else [])
    for e in experts:
        component(e, TRANSFORMER[kind], transformer, torch.float32, "diffusion_pytorch_model",
                  "diffusion_pytorch_model.safetensors.index.json")
    component("text_encoder", TEXT, lambda cfg: UMT5EncoderModel(UMT5Config(**cfg)), torch.bfloat16, "model",
              "model.safetensors.index.json")
    component("vae", VAE[kind], lambda cfg: AutoencoderKLWan.from_config(cfg), torch.float32,
              "diffusion_pytorch_model", "diffusion_pytorch_model.safetensors.index.json")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
