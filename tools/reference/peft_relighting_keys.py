#!/usr/bin/env python3
"""Proves the key names of Wan2.2-Animate-14B's relighting_lora.ckpt with peft itself, and that a file written by
tools/lora/make_lora.py --format wan-peft-ckpt has exactly them and loads as Wan's code loads the real one.

    peft_relighting_keys.py TRANSFORMER_DIR CKPT

TRANSFORMER_DIR: a diffusers WanAnimateTransformer3DModel folder (its config.json gives the sizes); CKPT: the file.

Wan's code (wan/animate.py _configure_model, wan/modules/animate/animate_utils.py get_loraconfig):
    lora_config = get_loraconfig(model, rank=128, alpha=128)      # LoraConfig(r, lora_alpha, target_modules=...)
    model.add_adapter(lora_config)                                # diffusers' PeftAdapterMixin: peft's
                                                                  # inject_adapter_in_model, adapter "default"
    set_peft_model_state_dict(model, torch.load(path)["state_dict"])
target_modules: every nn.Linear of WanAnimateModel whose name contains "blocks" but neither "face" nor
"modulation". Here a module tree with WanAnimateModel's module names (wan/modules/animate/model_animate.py,
face_blocks.py, motion_encoder.py; the sizes of TRANSFORMER_DIR) stands in for it, and peft's own functions give:
  1. the target list of Wan's rule (get_loraconfig itself with WAN22_SRC, else the same rule written here);
  2. get_peft_model_state_dict of the model wrapped by peft.get_peft_model (a PeftModel: keys
     base_model.model.<module>.lora_A.weight / lora_B.weight, the adapter name removed) and of the model with the
     adapter injected as diffusers' add_adapter does (no prefix);
  3. CKPT (read with weights_only=True): {"state_dict": ...} only, whose keys are exactly one of the two sets;
  4. Wan's loading of CKPT: inject_adapter_in_model + set_peft_model_state_dict: no unexpected key, no LoRA key
     missing, every LoRA tensor the file's; peft's scaling lora_alpha / r = 1; each merged weight (peft's merge)
     equals W + B @ A.
With WAN22_SRC (a Wan-Video/Wan2.2 checkout) also: Wan's own WanAnimateModel() (meta device, Wan2.2-Animate-14B's
sizes) under get_loraconfig gives 40 x 12 targets, the same 12 per block as the stand-in's.
Prints one line per check ("PASS|SKIP|FAIL what detail"); exit 1 on a FAIL.
"""
import copy
import json
import os
import sys
from pathlib import Path

import torch
from torch import nn

FAILS = []


def line(status, what, detail=""):
    if status == "FAIL":
        FAILS.append(what)
    print(f"{status:4s}  {what}  {detail}".rstrip(), flush=True)


class EqualLinear(nn.Module):
    """Wan's motion encoder linear (motion_encoder.py EqualLinear): a weight and bias, not an nn.Linear."""

    def __init__(self, i, o):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(o, i))
        self.bias = nn.Parameter(torch.zeros(o))


class Block(nn.Module):
    """WanAnimateAttentionBlock's modules (model_animate.py): norm1 / norm2 without weights are left out."""

    def __init__(self, dim, ffn, kv):
        super().__init__()
        self.self_attn = nn.Module()
        for n in ("q", "k", "v", "o"):
            setattr(self.self_attn, n, nn.Linear(dim, dim))
        self.self_attn.norm_q, self.self_attn.norm_k = nn.RMSNorm(dim), nn.RMSNorm(dim)
        self.norm3 = nn.LayerNorm(dim)
        self.cross_attn = nn.Module()
        for n in ("q", "k", "v", "o"):
            setattr(self.cross_attn, n, nn.Linear(dim, dim))
        self.cross_attn.k_img, self.cross_attn.v_img = nn.Linear(kv, dim), nn.Linear(kv, dim)
        self.cross_attn.norm_q, self.cross_attn.norm_k = nn.RMSNorm(dim), nn.RMSNorm(dim)
        self.cross_attn.norm_k_img = nn.RMSNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn), nn.GELU(approximate="tanh"), nn.Linear(ffn, dim))
        self.modulation = nn.Parameter(torch.randn(1, 6, dim))


class FaceBlock(nn.Module):
    def __init__(self, dim, head_dim):
        super().__init__()
        self.linear1_kv, self.linear1_q, self.linear2 = nn.Linear(dim, 2 * dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.q_norm, self.k_norm = nn.RMSNorm(head_dim), nn.RMSNorm(head_dim)


def wan_animate_like(cfg):
    """A module tree with WanAnimateModel's module names at the sizes of a diffusers config."""
    dim = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    m = nn.Module()
    m.patch_embedding = nn.Conv3d(cfg["in_channels"], dim, (1, 2, 2), (1, 2, 2))
    m.pose_patch_embedding = nn.Conv3d(cfg["latent_channels"], dim, (1, 2, 2), (1, 2, 2))
    m.text_embedding = nn.Sequential(nn.Linear(cfg["text_dim"], dim), nn.GELU(), nn.Linear(dim, dim))
    m.time_embedding = nn.Sequential(nn.Linear(cfg["freq_dim"], dim), nn.SiLU(), nn.Linear(dim, dim))
    m.time_projection = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))
    m.blocks = nn.ModuleList(Block(dim, cfg["ffn_dim"], cfg["added_kv_proj_dim"]) for _ in range(cfg["num_layers"]))
    m.head = nn.Module()
    m.head.head = nn.Linear(dim, cfg["out_channels"] * 4)
    m.head.modulation = nn.Parameter(torch.randn(1, 2, dim))
    m.img_emb = nn.Module()
    m.img_emb.proj = nn.Sequential(nn.LayerNorm(cfg["image_dim"]), nn.Linear(cfg["image_dim"], cfg["image_dim"]),
                                   nn.GELU(), nn.Linear(cfg["image_dim"], dim), nn.LayerNorm(dim))
    m.face_adapter = nn.Module()
    m.face_adapter.fuser_blocks = nn.ModuleList(FaceBlock(dim, cfg["attention_head_dim"])
                                                for _ in range(cfg["num_layers"] // cfg["inject_face_latents_blocks"]))
    m.face_encoder = nn.Module()
    m.face_encoder.out_proj = nn.Linear(cfg["face_encoder_hidden_dim"], dim)
    m.motion_encoder = nn.Module()
    m.motion_encoder.enc = nn.Module()
    m.motion_encoder.enc.fc = nn.Sequential(*[EqualLinear(cfg["motion_style_dim"], cfg["motion_style_dim"])
                                              for _ in range(4)], EqualLinear(cfg["motion_style_dim"], 4))
    return m


def wan_rule(model):
    """animate_utils.get_loraconfig's target rule, as written there."""
    return [name for name, module in model.named_modules()
            if "blocks" in name and "face" not in name and "modulation" not in name and isinstance(module, nn.Linear)]


def wan_get_loraconfig():
    """Wan's own get_loraconfig from WAN22_SRC, or None."""
    root = os.environ.get("WAN22_SRC")
    path = Path(root or "", "wan", "modules", "animate", "animate_utils.py")
    if not root or not path.exists():
        return None
    import importlib.util
    spec = importlib.util.spec_from_file_location("wan_animate_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_loraconfig


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, inject_adapter_in_model
    from peft import set_peft_model_state_dict
    import peft

    cfg = json.loads(Path(sys.argv[1], "config.json").read_text())
    ckpt_path = sys.argv[2]
    torch.manual_seed(0)
    base = wan_animate_like(cfg)
    blob = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    line("PASS" if isinstance(blob, dict) and list(blob) == ["state_dict"] else "FAIL",
         f"{Path(ckpt_path).name}: torch.load(...)[\"state_dict\"]", f"top-level keys {list(blob)}")
    sd = blob["state_dict"]
    rank = next(v.shape[0] for k, v in sd.items() if k.endswith("lora_A.weight"))

    get_loraconfig = wan_get_loraconfig()
    if get_loraconfig is not None:
        lora_config = get_loraconfig(base, rank=rank, alpha=rank)
        source = "Wan's get_loraconfig (WAN22_SRC)"
    else:
        lora_config = LoraConfig(r=rank, lora_alpha=rank, init_lora_weights="gaussian", target_modules=wan_rule(base))
        source = "get_loraconfig's rule"
    targets = sorted(lora_config.target_modules)
    per_block = sorted({t.split(".", 2)[2] for t in targets})
    line("PASS" if len(targets) == 12 * cfg["num_layers"] else "FAIL", f"targets by {source}",
         f"{len(targets)} modules, per block {per_block}")

    wrapped = get_peft_model(copy.deepcopy(base), copy.deepcopy(lora_config))
    keys_wrapped = set(get_peft_model_state_dict(wrapped))
    injected = inject_adapter_in_model(copy.deepcopy(lora_config), copy.deepcopy(base), "default")
    keys_injected = set(get_peft_model_state_dict(injected))
    example = sorted(keys_wrapped)[0]
    line("PASS", f"peft {peft.__version__} get_peft_model_state_dict of get_peft_model(model)",
         f"{len(keys_wrapped)} keys, e.g. {example}")
    line("PASS", "get_peft_model_state_dict after inject_adapter_in_model (diffusers' add_adapter)",
         f"{len(keys_injected)} keys, e.g. {sorted(keys_injected)[0]}")
    prefixed = {"base_model.model." + k for k in keys_injected} == keys_wrapped
    line("PASS" if prefixed else "FAIL", "the two differ by the prefix base_model.model. only")
    keys = set(sd)
    which = "get_peft_model" if keys == keys_wrapped else "add_adapter" if keys == keys_injected else None
    line("PASS" if which else "FAIL", f"{Path(ckpt_path).name}: its keys are peft's",
         f"{len(keys)} keys = {which}'s" if which else
         f"not peft's: extra {sorted(keys - keys_wrapped - keys_injected)[:3]}, "
         f"missing {sorted(keys_wrapped - keys)[:3]}")

    # Wan's loading, on a fresh model.
    model = copy.deepcopy(base)
    inject_adapter_in_model(copy.deepcopy(lora_config), model, "default")
    model.peft_config = {"default": lora_config}  # what ModelMixin.add_adapter records beside the injection
    result = set_peft_model_state_dict(model, sd)
    lora_missing = [k for k in result.missing_keys if "lora_" in k]
    ok = not result.unexpected_keys and not lora_missing
    line("PASS" if ok else "FAIL", "set_peft_model_state_dict (Wan's load)",
         "no unexpected key, no LoRA key missing" if ok else
         f"unexpected {result.unexpected_keys[:3]}, missing {lora_missing[:3]}")
    worst_copy, worst_merge, scalings = 0.0, 0.0, set()
    for name in targets:
        layer = model.get_submodule(name)
        bare = name if f"{name}.lora_A.weight" in sd else "base_model.model." + name
        a, b = sd[f"{bare}.lora_A.weight"].float(), sd[f"{bare}.lora_B.weight"].float()
        worst_copy = max(worst_copy, (layer.lora_A["default"].weight.float() - a).abs().max().item(),
                         (layer.lora_B["default"].weight.float() - b).abs().max().item())
        scalings.add(layer.scaling["default"])
        w = layer.base_layer.weight.detach().double().clone()
        layer.merge()
        worst_merge = max(worst_merge, (layer.base_layer.weight.double() - (w + b.double() @ a.double())).abs().max()
                          .item())
    line("PASS" if worst_copy == 0 else "FAIL", "every LoRA tensor loaded is the file's", f"max difference {worst_copy}")
    line("PASS" if scalings == {1.0} else "FAIL", "peft's scaling lora_alpha / r", f"{sorted(scalings)}")
    line("PASS" if worst_merge < 1e-5 else "FAIL", "peft's merge: W + B @ A",
         f"{len(targets)} weights, max difference {worst_merge:.2g}")

    if get_loraconfig is None:
        line("SKIP", "Wan's WanAnimateModel (14B) targets", "WAN22_SRC not set")
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from animate_real_size import wan_animate_model
        with torch.device("meta"):
            wan = wan_animate_model(os.environ["WAN22_SRC"])()
        real = sorted(get_loraconfig(wan, rank=128, alpha=128).target_modules)
        real_per_block = sorted({t.split(".", 2)[2] for t in real})
        ok = len(real) == 40 * 12 and real_per_block == per_block
        line("PASS" if ok else "FAIL", "Wan's WanAnimateModel (14B) targets",
             f"{len(real)} modules, per block {real_per_block}")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
