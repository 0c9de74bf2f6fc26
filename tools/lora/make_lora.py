#!/usr/bin/env python3
"""Writes a random LoRA file for a Wan transformer, in the formats people download, and optionally the
transformer weights with it merged (computed here, in float64, independently of omni-generate's merge).

  make_lora.py --transformer MODEL/transformer --out lora.safetensors [--format diffusers|kohya|wan|wan-peft-ckpt]
               [--rank 4] [--alpha A] [--seed 0] [--targets attn,ffn] [--full-deltas]
               [--dtype float32|bfloat16] [--std-down X] [--std-up Y]
               [--merge-into W.safetensors --scale S --merged-out OUT.safetensors]

The update of a weight is scale * (alpha / rank) * B @ A; the file holds A (lora_A / lora_down), B (lora_B /
lora_up) and, with --alpha, alpha. With the same --seed and --rank, every format describes the same update:
B is stored as B * rank / alpha where an alpha is stored, so (alpha / rank) * stored_B = B.

--format wan-peft-ckpt: Wan2.2-Animate-14B's relighting_lora.ckpt: torch.save({"state_dict": sd}) (a torch zip
  archive, as wan/animate.py reads it: torch.load(path)["state_dict"] -> peft's set_peft_model_state_dict) whose
  keys are what peft's get_peft_model_state_dict gives for Wan's WanAnimateModel wrapped by get_peft_model:
  base_model.model.<Wan module>.lora_A.weight / .lora_B.weight (--peft-prefix none: without base_model.model.,
  what diffusers' add_adapter + get_peft_model_state_dict give), no adapter name, no alpha (the LoraConfig holds
  it: Wan's is lora_alpha = r = 128, a scale of 1). Its targets, Wan's get_loraconfig rule (every nn.Linear whose
  name holds "blocks" but not "face" or "modulation"), are --targets attn,img,ffn. tools/reference/
  peft_relighting_keys.py proves the naming with peft itself.

--targets: attn (self- and cross-attention q, k, v, o), ffn (both FFN projections), head (proj_out),
  img (the image key / value projections of an image model's cross-attention: attn2.add_k_proj / add_v_proj,
  Wan's cross_attn.k_img / v_img),
  time (the time embedding MLP and time projection), text (the text embedding MLP), vace (a VACE transformer's
  vace_blocks.K: their attention, FFN and proj_in / proj_out, Wan's before_proj / after_proj); comma-separated.
--full-deltas (Wan format only): adds the full deltas some files carry: "diff" on the first block's
  self-attention q weight and cross-attention norm, "diff_b" on every targeted bias of the first block, and
  "diff" on the first block's modulation table.

Only the config.json of --transformer is needed to write a LoRA (shapes); --merge-into needs the weights.
A Wan-named transformer (Wan2.2-S2V's config.json: dim, ffn_dim, num_heads, num_layers; its weights in Wan's
names) is merged under Wan's names. --merged-dtype float32 writes the merged weights in float32 (default: the
dtype each weight is stored in), so that a float32 run's merge is compared without a bfloat16 rounding.
"""
import argparse
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

# Our module path (after "blocks.N.") -> the original Wan one.
BLOCK_WAN = {
    "attn1.to_q": "self_attn.q", "attn1.to_k": "self_attn.k", "attn1.to_v": "self_attn.v",
    "attn1.to_out.0": "self_attn.o",
    "attn2.to_q": "cross_attn.q", "attn2.to_k": "cross_attn.k", "attn2.to_v": "cross_attn.v",
    "attn2.to_out.0": "cross_attn.o",
    "attn2.add_k_proj": "cross_attn.k_img", "attn2.add_v_proj": "cross_attn.v_img",
    "ffn.net.0.proj": "ffn.0", "ffn.net.2": "ffn.2",
    "norm2": "norm3", "scale_shift_table": "modulation",
}
ROOT_WAN = {
    "proj_out": "head.head",
    "condition_embedder.time_embedder.linear_1": "time_embedding.0",
    "condition_embedder.time_embedder.linear_2": "time_embedding.2",
    "condition_embedder.time_proj": "time_projection.1",
    "condition_embedder.text_embedder.linear_1": "text_embedding.0",
    "condition_embedder.text_embedder.linear_2": "text_embedding.2",
}


# VACE blocks add these (diffusers' convert_wan_to_diffusers: before_proj -> proj_in, after_proj -> proj_out).
VACE_WAN = dict(BLOCK_WAN, proj_in="before_proj", proj_out="after_proj")


def wan_name(module):
    for prefix, table in (("blocks.", BLOCK_WAN), ("vace_blocks.", VACE_WAN)):
        if module.startswith(prefix):
            n, rest = module[len(prefix):].split(".", 1)
            return f"{prefix}{n}.{table[rest]}"
    return ROOT_WAN[module]


def diffusers_config(cfg):
    """`cfg` with diffusers' keys: a Wan-named config (Wan2.2-S2V's: dim, num_heads, ...) translated."""
    if "dim" not in cfg:
        return cfg
    return dict(cfg, num_attention_heads=cfg["num_heads"], attention_head_dim=cfg["dim"] // cfg["num_heads"],
                patch_size=cfg.get("patch_size", [1, 2, 2]), out_channels=cfg["out_dim"],
                text_dim=cfg.get("text_dim", 4096))


def linear_modules(cfg, targets):
    """(module, out_features, in_features) of every targeted linear layer."""
    dim = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    ffn = cfg["ffn_dim"]
    out = []
    for i in range(cfg["num_layers"]):
        if "attn" in targets:
            for a in ("attn1", "attn2"):
                for p in ("to_q", "to_k", "to_v", "to_out.0"):
                    out.append((f"blocks.{i}.{a}.{p}", dim, dim))
        if "img" in targets:
            for p in ("add_k_proj", "add_v_proj"):
                out.append((f"blocks.{i}.attn2.{p}", dim, cfg["added_kv_proj_dim"]))
        if "ffn" in targets:
            out.append((f"blocks.{i}.ffn.net.0.proj", ffn, dim))
            out.append((f"blocks.{i}.ffn.net.2", dim, ffn))
    if "vace" in targets:
        for k in range(len(cfg["vace_layers"])):
            for a in ("attn1", "attn2"):
                for p in ("to_q", "to_k", "to_v", "to_out.0"):
                    out.append((f"vace_blocks.{k}.{a}.{p}", dim, dim))
            out.append((f"vace_blocks.{k}.ffn.net.0.proj", ffn, dim))
            out.append((f"vace_blocks.{k}.ffn.net.2", dim, ffn))
            if k == 0:
                out.append(("vace_blocks.0.proj_in", dim, dim))
            out.append((f"vace_blocks.{k}.proj_out", dim, dim))
    if "head" in targets:
        patch = cfg["patch_size"]
        out.append(("proj_out", cfg["out_channels"] * patch[0] * patch[1] * patch[2], dim))
    if "time" in targets:
        out.append(("condition_embedder.time_embedder.linear_1", dim, cfg["freq_dim"]))
        out.append(("condition_embedder.time_embedder.linear_2", dim, dim))
        out.append(("condition_embedder.time_proj", 6 * dim, dim))
    if "text" in targets:
        out.append(("condition_embedder.text_embedder.linear_1", dim, cfg["text_dim"]))
        out.append(("condition_embedder.text_embedder.linear_2", dim, dim))
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transformer", required=True, type=Path, help="a transformer component folder")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--format", choices=("diffusers", "kohya", "wan", "wan-peft-ckpt"), default="diffusers")
    p.add_argument("--peft-prefix", default="base_model.model.",
                   help="wan-peft-ckpt: the key prefix (default base_model.model.: a PeftModel's; none: no prefix)")
    p.add_argument("--rank", type=int, default=4)
    p.add_argument("--alpha", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--targets", default="attn,ffn")
    p.add_argument("--full-deltas", action="store_true")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--std-down", type=float, default=None, help="std of A (default 1/sqrt(in_features))")
    p.add_argument("--std-up", type=float, default=0.2, help="std of B")
    p.add_argument("--merge-into", type=Path, default=None, help="transformer weights to merge the LoRA into")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--merged-out", type=Path, default=None)
    p.add_argument("--merged-dtype", choices=("stored", "float32"), default="stored")
    args = p.parse_args(argv)
    if args.full_deltas and args.format != "wan":
        p.error("--full-deltas needs --format wan (diff / diff_b are Wan-format keys)")
    if args.format == "wan-peft-ckpt" and args.alpha is not None:
        p.error("--alpha: a PEFT state dict holds no alpha (its LoraConfig does; Wan's: lora_alpha = r)")
    peft_prefix = "" if args.peft_prefix in ("", "none") else args.peft_prefix

    raw = json.loads((args.transformer / "config.json").read_text())
    wan_named = "dim" in raw  # the weights keep Wan's names (Wan2.2-S2V)
    cfg = diffusers_config(raw)
    targets = set(args.targets.split(","))
    gen = torch.Generator().manual_seed(args.seed)
    dtype = getattr(torch, args.dtype)
    r = args.rank
    tensors = {}
    updates = {}  # parameter name -> float64 update (before the scale)
    for module, out_f, in_f in linear_modules(cfg, targets):
        std_down = args.std_down if args.std_down is not None else in_f ** -0.5
        a = (torch.randn(r, in_f, generator=gen) * std_down).to(dtype)
        b = (torch.randn(out_f, r, generator=gen) * args.std_up).to(dtype)
        stored_b = b if args.alpha is None else (b.double() * r / args.alpha).to(dtype)
        updates[module + ".weight"] = b.double() @ a.double()
        if args.alpha is not None:
            # What the file's numbers give: (alpha / rank) * stored_B @ A.
            updates[module + ".weight"] = (args.alpha / r) * stored_b.double() @ a.double()
        if args.format == "diffusers":
            key = f"transformer.{module}"
            tensors[f"{key}.lora_A.weight"] = a
            tensors[f"{key}.lora_B.weight"] = stored_b
        elif args.format == "kohya":
            key = "lora_unet_" + wan_name(module).replace(".", "_")
            tensors[f"{key}.lora_down.weight"] = a
            tensors[f"{key}.lora_up.weight"] = stored_b
        elif args.format == "wan-peft-ckpt":
            # peft's get_peft_model_state_dict: the module path, lora_A / lora_B, the adapter name removed.
            key = f"{peft_prefix}{wan_name(module)}"
            tensors[f"{key}.lora_A.weight"] = a
            tensors[f"{key}.lora_B.weight"] = stored_b
        else:
            key = f"diffusion_model.{wan_name(module)}"
            tensors[f"{key}.lora_down.weight"] = a
            tensors[f"{key}.lora_up.weight"] = stored_b
        if args.alpha is not None:
            tensors[f"{key}.alpha"] = torch.tensor(args.alpha, dtype=dtype)
        if args.full_deltas and module.startswith("blocks.0."):
            bias = (torch.randn(out_f, generator=gen) * 0.05).to(dtype)
            tensors[f"{key}.diff_b"] = bias
            updates[module + ".bias"] = bias.double()
    if args.full_deltas:
        dim = cfg["num_attention_heads"] * cfg["attention_head_dim"]
        full = {
            "blocks.0.attn1.to_q.weight": ("blocks.0.self_attn.q.diff", (dim, dim)),
            "blocks.0.norm2.weight": ("blocks.0.norm3.diff", (dim,)),
            "blocks.0.scale_shift_table": ("blocks.0.modulation.diff", (1, 6, dim)),
        }
        for param, (key, shape) in full.items():
            d = (torch.randn(*shape, generator=gen) * 0.05).to(dtype)
            tensors[f"diffusion_model.{key}"] = d
            updates[param] = updates.get(param, 0) + d.double()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.format == "wan-peft-ckpt":
        torch.save({"state_dict": {k: v.contiguous() for k, v in tensors.items()}}, str(args.out))
    else:
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(args.out))
    print(f"wrote {args.out}: {len(tensors)} tensors, rank {r}, format {args.format}", file=sys.stderr)

    if args.merge_into is not None:
        weights = load_file(str(args.merge_into))
        if args.merged_dtype == "float32":
            weights = {k: v.float() for k, v in weights.items()}
        for name, u in updates.items():
            if wan_named:  # our parameter name -> Wan's: module path and the bare modulation table
                module, leaf = (name[:-7], ".weight") if name.endswith(".weight") else \
                    (name[:-5], ".bias") if name.endswith(".bias") else (name, "")
                name = wan_name(module) + leaf
            w = weights[name]
            weights[name] = (w.double() + args.scale * u.reshape(w.shape)).to(w.dtype)
        save_file(weights, str(args.merged_out))
        print(f"wrote {args.merged_out}: {len(updates)} parameters updated at scale {args.scale}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
