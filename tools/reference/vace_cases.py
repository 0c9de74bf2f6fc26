#!/usr/bin/env python3
"""Writes the VACE transformer cases tests/models/wan_vace_test.cpp reads, into OUT_DIR: diffusers'
WanVACETransformer3DModel (Wan2.1-VACE, Wan2.2-VACE-Fun) at a tiny size with random weights, and its output on
random inputs.

OUT_DIR/<case>/transformer/    save_pretrained (config.json, diffusion_pytorch_model.safetensors)
OUT_DIR/<case>/io.safetensors  hidden_states [B, 16, 3, 4, 6], timestep [B], encoder_hidden_states [B, 7, 16],
                               control_hidden_states [B, 12, F', 4, 6] (F' < 3 in "padded": diffusers pads the
                               context's tokens with zeros), control_scale [K], output [B, 16, 3, 4, 6],
                               output_without_hints (every VACE scale 0: the hints' contribution shows); float32

Cases: "layers" (vace_layers [0, 2] of 4 blocks, one scale per layer, batch 2), "padded" (vace_layers [0, 1, 3],
a context of fewer latent frames than the video, the default scale of 1).

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/vace_cases.py OUT_DIR
"""

import os
import sys

import torch
from diffusers import WanVACETransformer3DModel
from safetensors.torch import save_file


def case(out, name, layers, batch, control_frames, scale):
    torch.manual_seed(11 + len(layers))
    model = WanVACETransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12,
                                      in_channels=16, out_channels=16, text_dim=16, freq_dim=32, ffn_dim=40,
                                      num_layers=4, cross_attn_norm=True, qk_norm="rms_norm_across_heads", eps=1e-6,
                                      rope_max_seq_len=64, vace_layers=layers, vace_in_channels=12).eval()
    # diffusers initialises norms to 1/0 and the modulation tables to 0: move every parameter.
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("norm2.weight") or pname.endswith("norm_q.weight") or pname.endswith("norm_k.weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif "scale_shift_table" in pname or pname.endswith(".bias"):
                p.copy_(0.3 * torch.randn_like(p))
    d = os.path.join(out, name)
    model.save_pretrained(os.path.join(d, "transformer"))
    io = {
        "hidden_states": torch.randn(batch, 16, 3, 4, 6),
        "timestep": torch.tensor([731.0, 412.0][:batch]),
        "encoder_hidden_states": torch.randn(batch, 7, 16),
        "control_hidden_states": torch.randn(batch, 12, control_frames, 4, 6),
        "control_scale": torch.tensor(scale if scale else [1.0] * len(layers)),
    }
    kw = dict(hidden_states=io["hidden_states"], timestep=io["timestep"],
              encoder_hidden_states=io["encoder_hidden_states"],
              control_hidden_states=io["control_hidden_states"], return_dict=False)
    with torch.no_grad():
        io["output"] = model(**kw, control_hidden_states_scale=io["control_scale"] if scale else None)[0]
        io["output_without_hints"] = model(**kw, control_hidden_states_scale=torch.zeros(len(layers)))[0]
    save_file({k: v.contiguous() for k, v in io.items()}, os.path.join(d, "io.safetensors"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    case(out, "layers", [0, 2], 2, 3, [0.7, 1.3])
    case(out, "padded", [0, 1, 3], 1, 2, None)
    print(f"vace_cases: {out}")


if __name__ == "__main__":
    main()
