#!/usr/bin/env python3
"""Holds DiffSynth-Studio's S2V transformer (pip: diffsynth, diffsynth/models/wan_video_dit_s2v.py WanS2VModel)
against Wan2.2's own WanModel_S2V once, on the tiny checkpoint and the forwards record_s2v.py recorded
(tests/data/reference/s2v-tiny): issue 43's second, pip-installable implementation.

    python tools/reference/s2v/diffsynth_check.py tests/data/reference/s2v-tiny

Needs torch, safetensors, einops and the diffsynth wheel (installed --no-deps: its package __init__ imports
training dependencies, so only diffsynth.models.wan_video_dit_s2v and what it imports are loaded, from empty
package stand-ins). DiffSynth's forward always drops the motion tokens (inject_motion's default) and takes the
reference latent as latent frame 0 of its input, so the comparable case is the first clip (forward_clip0: motion
dropped, zero pose) with the inputs it shares with clip1; the context is zero-padded to text_len as Wan's forward
pads it. The tiny checkpoint loads into WanS2VModel under Wan's names (strict). Prints the largest difference of
the velocity relative to its largest value and fails above 1e-5.
"""
import importlib.util
import json
import sys
import types
from pathlib import Path

import torch
from safetensors.torch import load_file


def import_diffsynth_s2v():
    spec = importlib.util.find_spec("diffsynth")
    if spec is None:
        sys.exit("diffsynth is not installed (pip install --no-deps diffsynth)")
    root = Path(spec.submodule_search_locations[0])
    for name, sub in [("diffsynth", ""), ("diffsynth.models", "models"), ("diffsynth.core", "core")]:
        module = types.ModuleType(name)
        module.__path__ = [str(root / sub)]
        sys.modules[name] = module
    import diffsynth.models.wan_video_dit_s2v as s2v  # noqa: E402
    return s2v


def main():
    data = Path(sys.argv[1])
    config = json.loads((data / "ckpt" / "config.json").read_text())
    s2v = import_diffsynth_s2v()
    model = s2v.WanS2VModel(
        dim=config["dim"], in_dim=config["in_dim"], ffn_dim=config["ffn_dim"], out_dim=config["out_dim"],
        text_dim=4096, freq_dim=config["freq_dim"], eps=config["eps"], patch_size=(1, 2, 2),
        num_heads=config["num_heads"], num_layers=config["num_layers"], cond_dim=config["cond_dim"],
        audio_dim=config["audio_dim"], num_audio_token=config["num_audio_token"],
        enable_adain=config["enable_adain"], audio_inject_layers=config["audio_inject_layers"],
        zero_timestep=config["zero_timestep"], add_last_motion=config["add_last_motion"],
        framepack_drop_mode=config["framepack_drop_mode"]).eval()
    weights = load_file(str(data / "ckpt" / "diffusion_pytorch_model.safetensors"))
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=False)
    print(f"load: {len(weights)} tensors; missing {missing}; unexpected {unexpected}")
    if missing or unexpected:
        sys.exit("FAIL: the names differ")
    shared = load_file(str(data / "forward_clip1.safetensors"))
    clip0 = load_file(str(data / "forward_clip0.safetensors"))
    context = torch.zeros(1, config["text_len"], 4096)
    context[0, : shared["in.context"].shape[0]] = shared["in.context"]
    latents = torch.cat([shared["in.ref_latents"], shared["in.x"].unsqueeze(0)], dim=2)  # ref latent as frame 0
    with torch.no_grad():
        out = model(latents, shared["in.t"].float(), context, clip0["in.audio_input"], shared["in.motion_latents"],
                    clip0["in.cond_states"])[0, :, 1:]  # its output keeps the reference frame first
    want = clip0["out"]
    rel = ((out - want).abs().max() / want.abs().max()).item()
    print(f"DiffSynth-Studio WanS2VModel vs Wan2.2 WanModel_S2V (first clip): max |diff| / max |out| = {rel:.3e}")
    sys.exit(0 if rel <= 1e-5 else 1)


if __name__ == "__main__":
    main()
