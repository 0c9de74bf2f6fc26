#!/usr/bin/env python3
"""The table of ctest's layouts runs (tests/e2e/layouts, after it ran): for each fixture and layout, the frames'
max difference of omni-generate's run on the converted files against (a) its diffusers-layout twin (the same
stored values: must be 0) and (b) the diffusers-layout float32 source (what rounding the weights to the file's
dtype costs), on one rank and on HSDP 4.

    foreign_layouts_table.py [BUILD_DIR/test-cache/layouts]
"""
import sys
from pathlib import Path

from safetensors.torch import load_file

root = Path(sys.argv[1] if len(sys.argv) > 1 else "build/test-cache/layouts")
print(f"{'case':16s} {'layout':20s} {'ranks':6s} {'vs twin':>9s} {'vs fp32 source':>15s}")
for case in sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "original").exists()):
    for run in sorted((root / case).glob("run-*-np*")):
        layout, np_ = run.name[4:].rsplit("-np", 1)
        src_run = "original" if layout == "original" else "comfy-fp32"
        source = root / case / f"run-{src_run}-np{np_}" / "twin.safetensors"
        if not (run / "conv.safetensors").exists() or not source.exists():
            continue
        conv = load_file(str(run / "conv.safetensors"))["frames"].double()
        twin = load_file(str(run / "twin.safetensors"))["frames"].double()
        src = load_file(str(source))["frames"].double()
        ranks = "1" if np_ == "1" else "hsdp4"
        print(f"{case:16s} {layout:20s} {ranks:6s} {(conv - twin).abs().max().item():9.3g} "
              f"{(conv - src).abs().max().item():15.3g}")
