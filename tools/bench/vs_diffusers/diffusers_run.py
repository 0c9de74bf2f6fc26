#!/usr/bin/env python3
"""Times diffusers' WanPipeline per denoising step on the CPU and saves its frames (tools/bench/vs_diffusers).

  diffusers_run.py --model DIR --out frames.safetensors --threads N [pipeline settings]

Prints one line `diffusers: {"per_step": s, "denoise": s, "steps": n, "threads": n}`. The denoising time runs from
the first transformer call to the end of the last step (callback_on_step_end), the span omni-generate's report
calls "denoise": text encoding and the VAE are outside both.
"""

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from diffusers import WanPipeline  # noqa: E402
from safetensors.torch import save_file  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--prompt", required=True)
    p.add_argument("--negative-prompt", default="")
    p.add_argument("--height", type=int, required=True)
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--num-frames", type=int, required=True)
    p.add_argument("--num-inference-steps", type=int, required=True)
    p.add_argument("--guidance-scale", type=float, required=True)
    p.add_argument("--guidance-scale-2", type=float, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--max-sequence-length", type=int, required=True)
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    pipe = WanPipeline.from_pretrained(a.model, dtype=torch.float32).to("cpu")
    pipe.set_progress_bar_config(disable=True)

    marks = {}

    def first_call(module, args, kwargs):
        marks.setdefault("start", time.perf_counter())

    handles = [m.register_forward_pre_hook(first_call, with_kwargs=True)
               for m in (pipe.transformer, pipe.transformer_2) if m is not None]

    def on_step_end(pipeline, step, timestep, kwargs):
        marks["end"] = time.perf_counter()
        return {}

    with torch.inference_mode():
        out = pipe(prompt=a.prompt, negative_prompt=a.negative_prompt, height=a.height, width=a.width,
                   num_frames=a.num_frames, num_inference_steps=a.num_inference_steps,
                   guidance_scale=a.guidance_scale, guidance_scale_2=a.guidance_scale_2,
                   generator=torch.Generator("cpu").manual_seed(a.seed),
                   max_sequence_length=a.max_sequence_length, output_type="np",
                   callback_on_step_end=on_step_end)
    for h in handles:
        h.remove()
    frames = torch.from_numpy(out.frames).to(torch.float32).contiguous()  # [1, F, H, W, 3] in [0, 1]
    save_file({"frames": frames}, a.out)
    denoise = marks["end"] - marks["start"]
    print("diffusers: " + json.dumps({"per_step": denoise / a.num_inference_steps, "denoise": denoise,
                                      "steps": a.num_inference_steps, "threads": a.threads}))


if __name__ == "__main__":
    main()
