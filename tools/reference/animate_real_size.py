#!/usr/bin/env python3
"""Wan2.2-Animate-14B's transformer at its real size in Wan's original layout, with sparse data, and the diffusers
config diffusers' converter gives it: what the config omni-generate infers from the original layout must equal.

    animate_real_size.py OUT

OUT/transformer/        config.json (WanAnimateModel's, foreign_layouts.animate_wan_config) and the weights in
                        Wan's names (foreign_layouts.to_original_transformer of diffusers' WanAnimateTransformer3DModel
                        built from the converter's config without memory: accelerate.init_empty_weights), bfloat16,
                        sharded with an index json; each file holds its real header and the data as a hole
                        (sparse_checkpoint.write_sparse: nothing on disk)
OUT/converter_config.json  WanAnimateTransformer3DModel.from_config(the diffusers_config of
                        get_transformer_config("Wan2.2-Animate-14B"), diffusers' scripts/convert_wan_to_diffusers.py,
                        vendored) .config: every key of the model diffusers' converter builds, defaults included
With WAN22_SRC (a Wan-Video/Wan2.2 checkout), Wan's own WanAnimateModel() (wan/modules/animate/model_animate.py, its
defaults are Wan2.2-Animate-14B's) is built on the meta device, and its state dict's names and shapes must be
exactly the ones written: the inverse name table at the real size, Blur buffers and [1, C, 1, 1] biases included.
Prints one line per check ("PASS|SKIP|FAIL what detail"); exit 1 on a FAIL.
"""
import json
import os
import shutil
import sys
import types
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.dont_write_bytecode = True  # no __pycache__ beside the tools for the imports below

import torch  # noqa: E402
from accelerate import init_empty_weights  # noqa: E402
from diffusers import WanAnimateTransformer3DModel  # noqa: E402

from check_foreign_layouts import converter_renames, diffusers_converter  # noqa: E402
from foreign_layouts import animate_wan_config, to_original_transformer  # noqa: E402
from sparse_checkpoint import write_sparse  # noqa: E402

FAILS = []


def line(status, what, detail=""):
    if status == "FAIL":
        FAILS.append(what)
    print(f"{status:4s}  {what}  {detail}".rstrip(), flush=True)


def wan_animate_model(root):
    """Wan's WanAnimateModel class from a checkout, imported without running wan/__init__.py (its pipelines need
    CUDA-only packages): package stubs for wan, wan.modules, wan.modules.animate and wan.distributed, and einops
    stubbed when missing (used only in forward)."""
    import importlib
    try:
        importlib.import_module("einops")
    except ImportError:
        stub = types.ModuleType("einops")
        stub.rearrange = None
        sys.modules["einops"] = stub
    for pkg, sub in (("wan", "wan"), ("wan.modules", "wan/modules"), ("wan.modules.animate", "wan/modules/animate"),
                     ("wan.distributed", "wan/distributed")):
        m = types.ModuleType(pkg)
        m.__path__ = [str(Path(root, sub))]
        sys.modules[pkg] = m
    return importlib.import_module("wan.modules.animate.model_animate").WanAnimateModel


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    C = diffusers_converter()
    config = C.get_transformer_config("Wan2.2-Animate-14B")[0]["diffusers_config"]
    with init_empty_weights():
        model = WanAnimateTransformer3DModel.from_config(config)
    full = {k: (list(v) if isinstance(v, tuple) else v) for k, v in model.config.items() if not k.startswith("_")}
    (out / "converter_config.json").write_text(json.dumps(full, indent=2, sort_keys=True) + "\n")
    wan = to_original_transformer(model.state_dict())
    tensors = [(k, tuple(v.shape), torch.bfloat16) for k, v in sorted(wan.items())]
    write_sparse(str(out / "transformer"), "diffusion_pytorch_model", "diffusion_pytorch_model.safetensors.index.json",
                 tensors)
    tcfg = dict(full, _class_name="WanAnimateTransformer3DModel")
    (out / "transformer" / "config.json").write_text(json.dumps(animate_wan_config(tcfg), indent=2) + "\n")
    n = sum(torch.Size(s).numel() for _, s, _ in tensors)
    line("PASS", "real-size original layout written", f"{len(tensors)} tensors, {n / 1e9:.2f} B parameters")
    # The converter's own renames and handlers, unmodified (final_conv_idx 8), on the written names at their
    # shapes (meta tensors), then strict-loaded into the model it builds.
    meta = {k: torch.empty(s, device="meta", dtype=torch.bfloat16) for k, s, _ in tensors}
    converted = converter_renames(C, meta, C.ANIMATE_TRANSFORMER_SPECIAL_KEYS_REMAP)
    want = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in converted.items()}
    try:
        model.load_state_dict(converted, strict=True, assign=True)
        loaded = "strict load_state_dict"
    except Exception as e:  # noqa: BLE001
        loaded = str(e).replace("\n", " ")[:300]
    ok = got == want and loaded == "strict load_state_dict"
    line("PASS" if ok else "FAIL", "diffusers' converter (final_conv_idx 8) maps the written names onto its model",
         f"{len(got)} tensors, {loaded}" if ok else f"differ {sorted(set(got) ^ set(want))[:6]}; {loaded}")

    root = os.environ.get("WAN22_SRC")
    if not root or not Path(root, "wan", "modules", "animate", "model_animate.py").exists():
        line("SKIP", "Wan's WanAnimateModel state dict == the names and shapes written", "WAN22_SRC not set")
    else:
        cls = wan_animate_model(root)
        with torch.device("meta"):
            wan_model = cls()
        theirs = {k: tuple(v.shape) for k, v in wan_model.state_dict().items()}
        ours = {k: s for k, s, _ in tensors}
        diff = sorted(set(theirs) ^ set(ours))
        shapes = sorted(k for k in set(theirs) & set(ours) if theirs[k] != ours[k])
        ok = not diff and not shapes
        line("PASS" if ok else "FAIL", "Wan's WanAnimateModel state dict == the names and shapes written",
             f"{len(theirs)} tensors" if ok else f"names differ {diff[:6]}, shapes differ {shapes[:6]}")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
