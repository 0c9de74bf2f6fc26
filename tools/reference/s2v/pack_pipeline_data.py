#!/usr/bin/env python3
"""Copies what the S2V pipeline parity tests (tests/e2e/parity/CMakeLists.txt, s2v-*) need from
record_s2v_pipeline.py's output into the repository (tests/data/reference/s2v-pipeline), under the names
omni-generate's --save-tensors gives them.

    python tools/reference/s2v/pack_pipeline_data.py --rec /tmp/s2vfull --out tests/data/reference/s2v-pipeline

Writes:
  - model/: the tiny checkpoint in Wan2.2-S2V's original folder layout, as the recorder wrote it (config.json and
    diffusion_pytorch_model.safetensors, models_t5_umt5-xxl-enc-bf16.pth, Wan2.1_VAE.pth, google/umt5-xxl/,
    wav2vec2-large-xlsr-53-english/);
  - inputs/: the recording, the reference images and the pose video the cases read;
  - <case>/expected.safetensors for each case, renamed:
      audio_embeds            audio.emb [1, 25, A, clips x F]
      reference_latents       ref_latents [1, 16, 1, h, w]
      clipNN.init_latents     clip<r>.noise as [1, 16, T, h, w] (the CPU generator seeded seed + r)
      clipNN.motion_latents   clip<r>.motion_latents
      clipNN.cond_states      clip<r>.cond_states (the pose latents, or zeros)
      stepNN.latents          clip<r>.step<i>.after as [1, 16, T, h, w], NN = r x steps + i
      clipNN.latents          the clip's last step
      frames                  video [3, F, H, W] in [-1, 1] as [1, F, H, W, 3] in [0, 1] (x / 2 + 0.5, clamped)
    and case.json: the case's arguments (prompt, negative prompt, size area, steps, shift, guidance, seed, frames
    per clip, clips, pose).
The prompt embeddings are left out (4096 wide: 8 MB a case); the steps depend on them.
Needs torch and safetensors (tools/reference/.venv).
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

CASES = {"a_cfg_2clips": "s2v-cfg-2clips", "b_pose_2clips": "s2v-pose-2clips", "c_noguide_1clip": "s2v-noguide",
         "d_start_ref_2clips": "s2v-start-ref"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rec", required=True, help="record_s2v_pipeline.py's --out folder")
    ap.add_argument("--out", required=True, help="the test data folder to write")
    args = ap.parse_args()
    rec, out = Path(args.rec), Path(args.out)
    meta = json.loads((rec / "meta.json").read_text())
    if (out / "model").exists():
        shutil.rmtree(out / "model")
    shutil.copytree(rec / "ckpt", out / "model")
    (out / "inputs").mkdir(parents=True, exist_ok=True)
    for f in (rec / "inputs").iterdir():
        shutil.copyfile(f, out / "inputs" / f.name)
    for name, folder in CASES.items():
        case = meta["cases"][name]
        t = load_file(str(rec / f"case_{name}.safetensors"))
        steps = case["steps"]
        exp = {"audio_embeds": t["audio.emb"], "reference_latents": t["ref_latents"]}
        for r in range(case["clips"]):
            c = f"clip{r:02d}"
            exp[f"{c}.init_latents"] = t[f"clip{r}.noise"].unsqueeze(0)
            exp[f"{c}.motion_latents"] = t[f"clip{r}.motion_latents"]
            exp[f"{c}.cond_states"] = t[f"clip{r}.cond_states"]
            for i in range(steps):
                exp[f"step{r * steps + i:02d}.latents"] = t[f"clip{r}.step{i}.after"].unsqueeze(0)
            exp[f"{c}.latents"] = t[f"clip{r}.step{steps - 1}.after"].unsqueeze(0).clone()
        video = t["video"]  # [3, F, H, W] in [-1, 1]
        exp["frames"] = (video / 2 + 0.5).clamp(0, 1).permute(1, 2, 3, 0).unsqueeze(0)
        exp = {k: v.contiguous().float() for k, v in exp.items()}
        (out / folder).mkdir(parents=True, exist_ok=True)
        save_file(exp, str(out / folder / "expected.safetensors"))
        keep = {k: case[k] for k in ["image", "max_area", "pose", "guide_scale", "n_prompt", "n_prompt_used",
                                     "steps", "shift", "seed", "prompt", "infer_frames", "size", "clips",
                                     "frame_ranges"]}
        if case.get("start_from_ref"):
            keep["start_from_ref"] = True
        keep["recorded_by"] = "tools/reference/s2v/record_s2v_pipeline.py"
        keep["wan2.2"] = meta["wan_head"]
        keep["versions"] = {k: meta[k] for k in ["torch", "torchvision", "decord", "librosa", "transformers"]}
        (out / folder / "case.json").write_text(json.dumps(keep, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
