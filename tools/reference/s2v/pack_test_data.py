#!/usr/bin/env python3
"""Copies the part of record_s2v.py's output that tests/models/wan_s2v_transformer_test.cpp needs into the
repository (tests/data/reference/s2v-tiny), small enough to commit.

    python tools/reference/s2v/pack_test_data.py --rec /tmp/s2vrec --out tests/data/reference/s2v-tiny

Writes ckpt/config.json and ckpt/diffusion_pytorch_model.safetensors as the recorder wrote them (the wav2vec2 folder
is not needed), and forward_<case>.safetensors with a subset of each case's tensors:
  - the inputs; an input equal to clip1's is stored in forward_clip1 only (the test reads it from there);
  - `out`;
  - the small intermediates of every case (audio tokens, embeddings, rope positions) and, for clip1, the motion
    tokens and the first audio injection's AdaLN and attention outputs.
The test compares every tensor a file holds, so the full recorder output (OMNI_S2V_REFERENCE=<--out folder>)
checks all intermediates.  Needs torch and safetensors (tools/reference/.venv).
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

CASES = ["clip1", "clip0", "clip1_uncond"]
SMALL = ["audio.merged_emb", "audio.emb_global", "embed.e", "embed.e0", "embed.context", "embed.seg_idx",
         "embed.mask_ids", "rope.pos"]
CLIP1_EXTRA = ["embed.motion_tokens", "inject.0.adain", "inject.0.attn"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rec", required=True, help="record_s2v.py's --out folder")
    ap.add_argument("--out", required=True, help="the test data folder to write")
    args = ap.parse_args()
    rec, out = Path(args.rec), Path(args.out)
    (out / "ckpt").mkdir(parents=True, exist_ok=True)
    for name in ["config.json", "diffusion_pytorch_model.safetensors"]:
        shutil.copyfile(rec / "ckpt" / name, out / "ckpt" / name)
    cases = {c: load_file(str(rec / f"forward_{c}.safetensors")) for c in CASES}
    base = cases["clip1"]
    for c, tensors in cases.items():
        keep = {}
        for name, t in tensors.items():
            if name.startswith("in."):
                if c == "clip1" or not (t.shape == base[name].shape and torch.equal(t, base[name])):
                    keep[name] = t
            elif name == "out" or name in SMALL or (c == "clip1" and name in CLIP1_EXTRA):
                keep[name] = t
        save_file({k: v.contiguous() for k, v in keep.items()}, str(out / f"forward_{c}.safetensors"))
    meta = json.loads((rec / "meta.json").read_text())
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({total} bytes); recorded from Wan2.2 @ {meta.get('wan_head')}")


if __name__ == "__main__":
    main()
