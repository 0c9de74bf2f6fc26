#!/usr/bin/env python3
"""Records what Hugging Face diffusers' Wan2.2 pipelines compute, as parity references for omni-generate.

Loads a diffusers-layout checkpoint folder, runs its pipeline on the CPU in float32 with output_type="np", and
writes every intermediate that the parity tests compare (tokenizer output, UMT5 output, prompt embeddings, the
initial noise, every transformer call, the latents after every step, the VAE's inputs and outputs, the frames
and the schedule) to a safetensors file, under the key names of tests/data/reference/*/expected.safetensors.
A case.json beside it lists the run's inputs, the order of the transformer calls and the schedule.

Which pipeline runs:
  model_index.json WanImageToVideoPipeline            -> WanImageToVideoPipeline (--image required; --last-image:
                                                         first-last-frame, its last_image)
  model_index.json WanPipeline                        -> WanPipeline (text to video; TI2V-5B: expand_timesteps)
  model_index.json WanPipeline, expand_timesteps, --image
                                                      -> WanImageToVideoPipeline on the same folder: diffusers'
                                                         TI2V image mode (the image latent replaces latent frame 0)
  model_index.json WanPipeline, --video               -> WanVideoToVideoPipeline on the same folder (the clip as
                                                         load_video reads it, its first --num-frames frames); on
                                                         a two-expert folder with WanPipeline's expert rule (t >=
                                                         boundary_ratio * T: transformer, else transformer_2)
                                                         and one guidance scale, which is all it takes
  model_index.json WanVACEPipeline                    -> WanVACEPipeline (--control-video: its video, as load_video
                                                         reads it, its first --num-frames frames; --mask-video: its
                                                         mask, likewise; --reference-image: its reference_images,
                                                         as load_image reads them; --conditioning-scale)
  model_index.json WanAnimatePipeline                 -> WanAnimatePipeline (--image: the character image;
                                                         --pose-video, --face-video and, with --animate-mode
                                                         replace, --background-video and --mask-video: whole, as
                                                         load_video reads them; --segment-frames,
                                                         --prev-segment-frames). The video is as long as the pose
                                                         video: --num-frames is refused. The run goes in segments;
                                                         callNN and stepNN count over all of them (see Recorder)

Run it in the environment that tools/reference/setup.sh makes, for example
  tools/reference/.venv/bin/python tools/reference/record.py --model DIR --out expected.safetensors \
      --case-json case.json --prompt "..." --height 32 --width 48 --num-frames 9 --num-inference-steps 6
"""

import argparse
import hashlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path

# The checkpoint is a local folder: never ask the Hugging Face Hub for anything.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import sentencepiece  # noqa: E402
import torch  # noqa: E402
import diffusers.utils.logging  # noqa: E402
import transformers.utils.logging  # noqa: E402
from diffusers import (  # noqa: E402
    FlowMatchEulerDiscreteScheduler,
    UniPCMultistepScheduler,
    WanAnimatePipeline,
    WanImageToVideoPipeline,
    WanPipeline,
    WanTransformer3DModel,
    WanVACEPipeline,
    WanVideoToVideoPipeline,
)
from diffusers.pipelines.wan.pipeline_wan import prompt_clean  # noqa: E402
from diffusers.utils import load_image, load_video  # noqa: E402
from transformers import T5TokenizerFast  # noqa: E402
from safetensors.torch import save_file  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, type=Path, help="diffusers-layout checkpoint folder")
    p.add_argument("--out", required=True, type=Path, help="the safetensors file to write")
    p.add_argument("--case-json", required=True, type=Path, help="the case description to write")
    p.add_argument("--prompt", required=True)
    p.add_argument("--negative-prompt", default="", help="used only with guidance (default: empty)")
    # Defaults are the pipelines' own.
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--width", type=int, default=832)
    p.add_argument("--num-frames", type=int, default=None,
                   help="default 81; not for Animate, whose video is as long as its pose video")
    p.add_argument("--num-inference-steps", type=int, default=50)
    p.add_argument("--guidance-scale", type=float, default=5.0, help="1 (or less) turns guidance off")
    p.add_argument("--guidance-scale-2", type=float, default=None,
                   help="low-noise expert's scale (two-expert models; default: --guidance-scale)")
    p.add_argument("--seed", type=int, default=42, help="seed of the CPU generator that draws the initial noise")
    p.add_argument("--max-sequence-length", type=int, default=512)
    p.add_argument("--image", type=Path, default=None, help="conditioning image (image-to-video)")
    p.add_argument("--last-image", type=Path, default=None,
                   help="the last frame (WanImageToVideoPipeline's last_image: first-last-frame video)")
    p.add_argument("--video", type=Path, default=None,
                   help="video-to-video: the clip to start from (WanVideoToVideoPipeline)")
    p.add_argument("--strength", type=float, default=0.8, help="with --video: the pipeline's strength")
    p.add_argument("--control-video", type=Path, default=None, help="VACE: the control video (the pipeline's video)")
    p.add_argument("--mask-video", type=Path, default=None,
                   help="VACE: the mask video (the pipeline's mask); Animate (replace mode): its mask_video")
    p.add_argument("--reference-image", type=Path, action="append", default=[],
                   help="VACE: a reference image (the pipeline's reference_images, in order); repeatable")
    p.add_argument("--conditioning-scale", default=None,
                   help="VACE: one scale, or one per VACE layer separated by commas (default: the pipeline's 1)")
    p.add_argument("--pose-video", type=Path, default=None, help="Animate: the pose video (pose_video)")
    p.add_argument("--face-video", type=Path, default=None, help="Animate: the face video (face_video)")
    p.add_argument("--background-video", type=Path, default=None,
                   help="Animate, replace mode: the background video (background_video)")
    p.add_argument("--animate-mode", choices=("animate", "replace"), default="animate", help="Animate: mode")
    p.add_argument("--segment-frames", type=int, default=77,
                   help="Animate: frames per segment (segment_frame_length; 1 + a multiple of 4)")
    p.add_argument("--prev-segment-frames", type=int, default=1,
                   help="Animate: frames each segment takes from the one before (prev_segment_conditioning_frames)")
    p.add_argument("--solver", choices=("unipc", "euler"), default="unipc")
    p.add_argument("--flow-shift", type=float, default=None, help="replaces the scheduler config's flow_shift")
    p.add_argument("--boundary-ratio", type=float, default=None,
                   help="replaces model_index.json's boundary_ratio (two-expert models)")
    p.add_argument("--lora", action="append", default=[], metavar="FILE[:SCALE]",
                   help="LoRA loaded into transformer with load_lora_weights, at SCALE (default 1); repeatable")
    p.add_argument("--lora-2", action="append", default=[], metavar="FILE[:SCALE]",
                   help="LoRA loaded into transformer_2 (load_into_transformer_2=True); repeatable")
    p.add_argument("--unit-seed", type=int, default=None,
                   help="also record the stand-alone unit.transformer.* / unit.vae.* forwards on random inputs "
                        "drawn from a CPU generator with this seed")
    args = p.parse_args(argv)
    index = json.loads((args.model / "model_index.json").read_text())
    args.animate = index.get("_class_name") == "WanAnimatePipeline"
    animate_flags = (args.pose_video, args.face_video, args.background_video)
    if args.animate:
        if args.num_frames is not None:
            p.error("an Animate video is as long as its --pose-video: --num-frames does not apply")
        if args.pose_video is None or args.face_video is None or args.image is None:
            p.error("an Animate folder needs --image, --pose-video and --face-video")
        if (args.animate_mode == "replace") != (args.background_video is not None and args.mask_video is not None):
            p.error("--background-video and --mask-video go together with --animate-mode replace")
        for flag, value in (("--last-image", args.last_image), ("--video", args.video),
                            ("--control-video", args.control_video), ("--reference-image", args.reference_image),
                            ("--conditioning-scale", args.conditioning_scale),
                            ("--guidance-scale-2", args.guidance_scale_2), ("--boundary-ratio", args.boundary_ratio),
                            ("--lora-2", args.lora_2), ("--unit-seed", args.unit_seed)):
            if value:
                p.error(f"{flag} does not apply to an Animate folder (WanAnimatePipeline)")
    elif any(x is not None for x in animate_flags):
        p.error("--pose-video, --face-video and --background-video need an Animate folder (WanAnimatePipeline)")
    if args.num_frames is None:
        args.num_frames = 81
    return args


class ExpertSwitch(torch.nn.Module):
    """WanPipeline's expert rule inside WanVideoToVideoPipeline, which has one transformer: each call goes to
    `high` (transformer) while the timestep is at or above boundary_ratio * num_train_timesteps, else to `low`
    (transformer_2), exactly as WanPipeline.__call__ chooses. The experts' own forward hooks see every call."""

    def __init__(self, high, low, boundary_timestep: float):
        super().__init__()
        self.high, self.low, self.boundary_timestep = high, low, boundary_timestep

    @property
    def config(self):
        return self.high.config

    @property
    def dtype(self):
        return self.high.dtype

    @property
    def device(self):
        return self.high.device

    def forward(self, hidden_states, timestep, **kwargs):
        expert = self.high if timestep[0] >= self.boundary_timestep else self.low
        return expert(hidden_states=hidden_states, timestep=timestep, **kwargs)


def load_pipeline(model_dir: Path, image: Path | None, video: Path | None = None):
    """The pipeline for model_dir, in float32 on the CPU (see the module docstring for the choice)."""
    index = json.loads((model_dir / "model_index.json").read_text())
    name = index["_class_name"]
    if video is not None:
        if name != "WanPipeline" or image is not None:
            sys.exit(f"record.py: --video needs a text-to-video folder (WanPipeline) and no --image")
        cls = WanVideoToVideoPipeline
    elif name == "WanAnimatePipeline":
        cls = WanAnimatePipeline
    elif name == "WanVACEPipeline":
        if image is not None:
            sys.exit("record.py: a VACE folder takes --control-video, --mask-video and --reference-image, not --image")
        cls = WanVACEPipeline
    elif name == "WanImageToVideoPipeline":
        if image is None:
            sys.exit(f"record.py: {model_dir} is an image-to-video model: pass --image")
        cls = WanImageToVideoPipeline
    elif name == "WanPipeline":
        if image is not None and not index.get("expand_timesteps", False):
            sys.exit(f"record.py: {model_dir} is a text-to-video model without expand_timesteps: --image does not apply")
        cls = WanImageToVideoPipeline if image is not None else WanPipeline
    else:
        sys.exit(f"record.py: model_index.json names {name!r}, not a Wan pipeline")
    diffusers.utils.logging.disable_progress_bar()
    transformers.utils.logging.disable_progress_bar()
    pipe = cls.from_pretrained(model_dir, dtype=torch.float32)
    # tokenizer.json, where the folder has one, is the tokenizer's authority: read as
    # T5TokenizerFast(tokenizer_file=...) reads it (transformers 4.x's AutoTokenizer too). transformers 5's
    # AutoTokenizer rebuilds a T5 tokenizer from the file's vocabulary instead (unk_id 2, a WhitespaceSplit: for
    # UMT5 an out-of-vocabulary character would become <s>), which omni-generate does not follow (docs/DESIGN.md
    # section 5). For the ASCII prompts of the committed cases both give the same ids.
    tokenizer_json = model_dir / "tokenizer" / "tokenizer.json"
    if tokenizer_json.exists():
        config_path = model_dir / "tokenizer" / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        pipe.tokenizer = T5TokenizerFast(tokenizer_file=str(tokenizer_json), extra_ids=config.get("extra_ids", 100))
    if video is not None:
        # WanVideoToVideoPipeline takes the spatial factor as 2 ** len(vae.temperal_downsample), 8, where the Wan2.2
        # VAE (TI2V-5B: patch 2) has 16: its noise would be twice the latents' size and add_noise would fail.
        # WanPipeline reads vae.config.scale_factor_spatial; so does omni-generate.
        pipe.vae_scale_factor_spatial = pipe.vae.config.scale_factor_spatial
    if video is not None and index.get("transformer_2", [None])[0] is not None:
        # The second expert, which WanVideoToVideoPipeline does not load, behind WanPipeline's switch.
        low = WanTransformer3DModel.from_pretrained(model_dir / "transformer_2", torch_dtype=torch.float32)
        boundary = index["boundary_ratio"] * pipe.scheduler.config.num_train_timesteps
        object.__setattr__(pipe, "transformer", ExpertSwitch(pipe.transformer, low, boundary))
    pipe.to("cpu")
    pipe.set_progress_bar_config(disable=True)
    return pipe


def relative_to_case(path, case_json: Path) -> str:
    """`path` relative to case.json's folder where it lies beside or below it, else absolute."""
    path, case_dir = Path(path).resolve(), case_json.resolve().parent
    return str(path.relative_to(case_dir) if path.is_relative_to(case_dir) else path)


def lora_spec(text: str):
    """FILE[:SCALE] -> (FILE, SCALE), as omni-generate reads --lora."""
    path, _, scale = text.rpartition(":")
    try:
        return path, float(scale)
    except ValueError:
        return text, 1.0


def load_loras(pipe, loras, loras_2):
    """diffusers' own LoRA path: load_lora_weights (its format conversions included), then each expert's
    adapters activated at their scales (PEFT computes base(x) + scale * B(A(x)), unmerged)."""
    for specs, expert, into_2 in ((loras, "transformer", False), (loras_2, "transformer_2", True)):
        if not specs:
            continue
        model = getattr(pipe, expert, None)
        if model is None:
            sys.exit(f"record.py: this model has no {expert}")
        names, scales = [], []
        for i, spec in enumerate(specs):
            path, scale = lora_spec(spec)
            name = f"{expert}_{i}"
            pipe.load_lora_weights(path, adapter_name=name, load_into_transformer_2=into_2)
            names.append(name)
            scales.append(scale)
        model.set_adapters(names, weights=scales)


class EulerOnUniPCSchedule(FlowMatchEulerDiscreteScheduler):
    """diffusers' flow-match Euler step, x + (sigma_next - sigma) * v, on the checkpoint's UniPC flow schedule.

    This is what omni-generate's --sample-solver euler computes: the shifted flow sigmas of UniPCMultistepScheduler
    (float64 arithmetic, sigma[0] moved 1e-6 below 1, final sigma 0) and its integer timesteps. The stock
    FlowMatchEulerDiscreteScheduler.set_timesteps would space the sigmas differently (linspace from 1 to the
    shifted 1/T over n points) and feed the transformer fractional timesteps.
    """

    def adopt_schedule_of(self, unipc: UniPCMultistepScheduler):
        self.unipc = unipc

    def set_timesteps(self, num_inference_steps=None, device=None):
        self.unipc.set_timesteps(num_inference_steps, device=device)
        # Same values as UniPC's int64 timesteps; float because Euler's step() refuses integer timesteps.
        self.timesteps = self.unipc.timesteps.to(torch.float32)
        self.sigmas = self.unipc.sigmas.to(torch.float32)
        self.num_inference_steps = num_inference_steps
        self._step_index = None
        self._begin_index = None


def configure_scheduler(pipe, solver: str, flow_shift: float | None):
    unipc = pipe.scheduler
    if flow_shift is not None:
        unipc = UniPCMultistepScheduler.from_config(unipc.config, flow_shift=flow_shift)
    if solver == "unipc":
        pipe.scheduler = unipc
    else:
        euler = EulerOnUniPCSchedule(num_train_timesteps=unipc.config.num_train_timesteps,
                                     shift=unipc.config.flow_shift)
        euler.adopt_schedule_of(unipc)
        pipe.scheduler = euler
    return unipc.config.flow_shift


class Recorder:
    """Collects the tensors of one run under the fixture key names, in the order they happen.

    WanAnimatePipeline runs its denoising loop once per segment (prepare_latents, then the steps, then the VAE
    decode). callNN and stepNN count over the whole run; init_latents is the first segment's noise, segNN.noise
    every segment's, segNN.pose_latents the pose_hidden_states of each segment's first call; call00 alone keeps
    face_pixel_values (the conditional face crops; with guidance the unconditional call's are all -1), and only
    the calls of each segment's first step keep encoder_hidden_states (the others repeat prompt_embeds or
    negative_prompt_embeds). The calls and steps of case.json say their segment. vae_encode.* and vae_decode.*
    are the last call's, as for the other pipelines: the last segment's previous-segment video and its decode.
    """

    def __init__(self, pipe):
        self.tensors = {}
        self.calls = []  # [{"key": "callNN", "model": "transformer" | "transformer_2"[, "segment": s]}]
        self.steps = []  # [{"index": n, "timestep": t[, "segment": s, "segment_index": i]}]
        self.text_calls = 0
        self.animate = isinstance(pipe, WanAnimatePipeline)
        self.segment = -1  # Animate: the segment running (prepare_latents calls - 1)
        self.segment_steps = 0  # Animate: steps done in this segment
        self.handles = [pipe.text_encoder.register_forward_hook(self.on_text_encoder, with_kwargs=True)]
        experts = {"transformer": getattr(pipe, "transformer", None), "transformer_2": getattr(pipe, "transformer_2", None)}
        if isinstance(experts["transformer"], ExpertSwitch):
            experts = {"transformer": experts["transformer"].high, "transformer_2": experts["transformer"].low}
        for name, model in experts.items():
            if model is not None:
                self.handles.append(model.register_forward_hook(self.expert_hook(name), with_kwargs=True))

    def put(self, key, tensor):
        # Token ids and masks stay int64; everything else is stored as float32, the pipelines' int64 timesteps
        # included, as in the fixtures.
        tensor = tensor.detach().cpu()
        if not key.endswith((".input_ids", ".attention_mask")):
            tensor = tensor.to(torch.float32)
        self.tensors[key] = tensor.clone().contiguous()

    def on_text_encoder(self, module, args, kwargs, output):
        # encode_prompt runs the prompt first, then (with guidance) the negative prompt.
        prefix = ("prompt", "negative")[self.text_calls]
        self.text_calls += 1
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
        mask = kwargs["attention_mask"] if "attention_mask" in kwargs else args[1]
        self.put(f"{prefix}.input_ids", ids)
        self.put(f"{prefix}.attention_mask", mask)
        if prefix == "prompt":
            self.put("prompt.last_hidden_state", output.last_hidden_state)

    def expert_hook(self, name):
        def hook(module, args, kwargs, output):
            key = f"call{len(self.calls):02d}"
            self.calls.append({"key": key, "model": name})
            self.put(f"{key}.hidden_states", kwargs["hidden_states"])
            self.put(f"{key}.timestep", kwargs["timestep"])
            if self.animate:
                self.calls[-1]["segment"] = self.segment
                if f"seg{self.segment:02d}.pose_latents" not in self.tensors:
                    self.put(f"seg{self.segment:02d}.pose_latents", kwargs["pose_hidden_states"])
                if key == "call00":
                    self.put(f"{key}.face_pixel_values", kwargs["face_pixel_values"])
                if self.segment_steps == 0:
                    self.put(f"{key}.encoder_hidden_states", kwargs["encoder_hidden_states"])
            else:
                self.put(f"{key}.encoder_hidden_states", kwargs["encoder_hidden_states"])
            if "control_hidden_states" in kwargs and "vace_context" not in self.tensors:
                # WanVACEPipeline's conditioning_latents, the same on every call.
                self.put("vace_context", kwargs["control_hidden_states"])
            self.put(f"{key}.out", output[0] if isinstance(output, tuple) else output.sample)
        return hook

    def wrap_pipeline(self, pipe):
        """Instance-level wrappers around the pipeline steps whose inputs or outputs no module hook sees."""
        encode_prompt, prepare_latents = pipe.encode_prompt, pipe.prepare_latents
        vae_encode, vae_decode = pipe.vae.encode, pipe.vae.decode

        def recorded_encode_prompt(*args, **kwargs):
            prompt_embeds, negative_prompt_embeds = encode_prompt(*args, **kwargs)
            self.put("prompt_embeds", prompt_embeds)
            if negative_prompt_embeds is not None:
                self.put("negative_prompt_embeds", negative_prompt_embeds)
            return prompt_embeds, negative_prompt_embeds

        def recorded_prepare_latents(*args, **kwargs):
            out = prepare_latents(*args, **kwargs)
            if self.animate:
                # Once per segment: the segment's noise (reference frame included), the first also init_latents.
                self.segment += 1
                self.segment_steps = 0
                self.put(f"seg{self.segment:02d}.noise", out)
                if self.segment == 0:
                    self.put("init_latents", out)
                return out
            if isinstance(pipe, WanVideoToVideoPipeline):
                # The clip's latents noised to the first timestep; init_latents stays the noise, as in the other
                # pipelines: the generator's first draw (the VAE's argmax draws nothing), checked to give `out`.
                self.put("noised_latents", out)
                self.put("init_latents", self.video_noise(pipe, out, args))
                return out
            # WanPipeline returns the noise; WanImageToVideoPipeline (noise, condition[, first-frame mask]).
            self.put("init_latents", out[0] if isinstance(out, tuple) else out)
            return out

        def recorded_vae_encode(x, *args, **kwargs):
            out = vae_encode(x, *args, **kwargs)
            self.put("vae_encode.in", x)
            # The pipelines take the mode of the posterior, i.e. its mean (before normalization).
            posterior = out.latent_dist if hasattr(out, "latent_dist") else out[0]
            self.put("vae_encode.mean", posterior.mean)
            return out

        def recorded_vae_decode(z, *args, **kwargs):
            out = vae_decode(z, *args, **kwargs)
            self.put("vae_decode.in", z)
            self.put("vae_decode.out", out[0] if isinstance(out, tuple) else out.sample)
            return out

        pipe.encode_prompt = recorded_encode_prompt
        pipe.prepare_latents = recorded_prepare_latents
        if getattr(pipe, "image_encoder", None) is not None:
            # Wan2.1's image models: the CLIP encoder's penultimate states (encode_image's result).
            encode_image = pipe.encode_image

            def recorded_encode_image(*args, **kwargs):
                out = encode_image(*args, **kwargs)
                self.put("image_embeds", out)
                return out

            pipe.encode_image = recorded_encode_image
        pipe.vae.encode = recorded_vae_encode
        pipe.vae.decode = recorded_vae_decode

        def unwrap():
            for obj, attr in ((pipe, "encode_prompt"), (pipe, "prepare_latents"), (pipe.vae, "encode"),
                              (pipe.vae, "decode")):
                delattr(obj, attr)

        return unwrap

    def video_noise(self, pipe, noised, args):
        """WanVideoToVideoPipeline.prepare_latents(video, batch, channels, h, w, dtype, device, generator, latents,
        timestep)'s noise: redrawn from the seed, and held to reproduce `noised` bit for bit with the scheduler's
        add_noise on the recorded (normalized) VAE mean."""
        noise = torch.randn(noised.shape, generator=torch.Generator("cpu").manual_seed(self.seed), dtype=torch.float32)
        vae = pipe.vae
        mean = torch.tensor(vae.config.latents_mean).view(1, vae.config.z_dim, 1, 1, 1)
        inv_std = 1.0 / torch.tensor(vae.config.latents_std).view(1, vae.config.z_dim, 1, 1, 1)
        z = (self.tensors["vae_encode.mean"] - mean) * inv_std
        again = pipe.scheduler.add_noise(z, noise, args[9]) if hasattr(pipe.scheduler, "add_noise") else \
            pipe.scheduler.scale_noise(z, args[9], noise)
        if not torch.equal(again, noised):
            sys.exit("record.py: the video-to-video latents are not the seed's noise added to the clip's latents")
        return noise

    def on_step_end(self, pipe, i, t, callback_kwargs):
        # Numbered over the run: WanAnimatePipeline's i restarts at 0 in every segment.
        n = len(self.steps)
        self.put(f"step{n:02d}.latents", callback_kwargs["latents"])
        self.steps.append({"index": n, "timestep": float(t)})
        if self.animate:
            self.steps[-1].update(segment=self.segment, segment_index=i)
            self.segment_steps += 1
        return {}

    def check_animate_noise(self, seed):
        """WanAnimatePipeline draws each segment's noise from the one generator, and nothing else from it (the VAE
        encodes take the posterior's mode): the segments' noise must be the seed's consecutive randn draws."""
        g = torch.Generator("cpu").manual_seed(seed)
        for s in range(self.segment + 1):
            noise = self.tensors[f"seg{s:02d}.noise"]
            if not torch.equal(torch.randn(noise.shape, generator=g, dtype=torch.float32), noise):
                sys.exit(f"record.py: segment {s}'s noise is not the seed's draw number {s + 1}")

    def close(self):
        for h in self.handles:
            h.remove()


def record_unit_forwards(pipe, rec: Recorder, seed: int, latent_shape, args):
    """Stand-alone forwards on random inputs: the transformer (batch 2, timesteps 999 and 17) and the VAE.

    Mirrors how the committed fixtures were made: one generator draws, in order, the transformer input and
    context (randn), the VAE clip (uniform in [-1, 1)) and the VAE latent (randn). The transformer forward runs
    with the call hooks still attached, so it is also the last callNN; the fixtures ran it only for the
    two-expert models (not for expand_timesteps ones, whose inputs are still drawn to keep the VAE draws the same).
    """
    g = torch.Generator("cpu").manual_seed(seed)
    transformer, vae = pipe.transformer, pipe.vae
    _, _, frames, lat_h, lat_w = latent_shape
    x = torch.randn((2, transformer.config.in_channels, frames, lat_h, lat_w), generator=g)
    context = torch.randn((2, args.max_sequence_length, transformer.config.text_dim), generator=g)
    clip = torch.rand((1, 3, args.num_frames, args.height, args.width), generator=g) * 2 - 1
    z = torch.randn((1, vae.config.z_dim, frames, lat_h, lat_w), generator=g)

    if not pipe.config.expand_timesteps:
        timestep = torch.tensor([999.0, 17.0])
        out = transformer(hidden_states=x, timestep=timestep, encoder_hidden_states=context, return_dict=False)[0]
        rec.put("unit.transformer.in", x)
        rec.put("unit.transformer.context", context)
        rec.put("unit.transformer.timestep", timestep)
        rec.put("unit.transformer.out", out)
    rec.put("unit.vae.encode_in", clip)
    rec.put("unit.vae.encode_mean", vae.encode(clip).latent_dist.mean)
    rec.put("unit.vae.decode_in", z)
    rec.put("unit.vae.decode_out", vae.decode(z).sample)


def sentencepiece_ids(model_dir: Path, texts: dict):
    """The ids SentencePiece alone gives for each cleaned text (no eos, no padding, no truncation)."""
    spm = model_dir / "tokenizer" / "spiece.model"
    if not spm.exists():
        return None
    sp = sentencepiece.SentencePieceProcessor(model_file=str(spm))
    return {name: sp.encode(prompt_clean(text)) for name, text in texts.items()}


def check_geometry(pipe, args):
    """Refuses sizes that the pipeline would silently round, so that case.json states what actually ran."""
    temporal, spatial = pipe.vae_scale_factor_temporal, pipe.vae_scale_factor_spatial
    patch = (pipe.transformer or pipe.transformer_2).config.patch_size
    if args.animate:
        # No frame count (the pose video's length is the video's); the segment length is rounded instead.
        if (args.segment_frames - 1) % temporal:
            sys.exit(f"record.py: --segment-frames must be 1 + a multiple of {temporal}, got {args.segment_frames}")
    elif (args.num_frames - 1) % temporal:
        sys.exit(f"record.py: --num-frames must be 1 + a multiple of {temporal}, got {args.num_frames}")
    for flag, value, patch_side in (("--height", args.height, patch[1]), ("--width", args.width, patch[2])):
        # check_inputs wants multiples of 16 besides; all these factors are powers of two.
        multiple = max(spatial * patch_side, 16)
        if value % multiple:
            sys.exit(f"record.py: {flag} must be a multiple of {multiple}, got {value}")


def produced_by():
    versions = {name: importlib.metadata.version(name) for name in ("diffusers", "transformers", "torch", "ftfy")}
    return (f"tools/reference/record.py: diffusers {versions['diffusers']}, transformers {versions['transformers']}, "
            f"torch {torch.__version__}, ftfy {versions['ftfy']}, CPU fp32")


def main(argv):
    args = parse_args(argv)
    pipe = load_pipeline(args.model, args.image, args.video)
    check_geometry(pipe, args)
    if args.boundary_ratio is not None:
        if args.video is not None:
            sys.exit("record.py: --boundary-ratio with --video is not supported (the folder's is used)")
        if getattr(pipe, "transformer_2", None) is None:
            sys.exit(f"record.py: {args.model} has one expert: --boundary-ratio does not apply")
        pipe.register_to_config(boundary_ratio=args.boundary_ratio)
    flow_shift = configure_scheduler(pipe, args.solver, args.flow_shift)
    load_loras(pipe, args.lora, args.lora_2)

    guidance = args.guidance_scale > 1.0  # the pipelines' do_classifier_free_guidance
    index = json.loads((args.model / "model_index.json").read_text())
    boundary_ratio = index.get("boundary_ratio") if args.video is not None or args.animate \
        else pipe.config.boundary_ratio
    # The pipelines fall back to guidance_scale for the low-noise expert.
    guidance_2 = args.guidance_scale_2
    if boundary_ratio is not None and guidance_2 is None:
        guidance_2 = args.guidance_scale

    call = dict(
        prompt=args.prompt,
        negative_prompt=args.negative_prompt,
        height=args.height,
        width=args.width,
        num_frames=args.num_frames,
        num_inference_steps=args.num_inference_steps,
        guidance_scale=args.guidance_scale,
        guidance_scale_2=args.guidance_scale_2,
        generator=torch.Generator("cpu").manual_seed(args.seed),
        output_type="np",
        max_sequence_length=args.max_sequence_length,
    )
    if args.image is not None:
        # As a user's script loads it: Image.open, ImageOps.exif_transpose, convert("RGB").
        call["image"] = load_image(str(args.image))
    if args.last_image is not None:
        if args.image is None or type(pipe).__name__ != "WanImageToVideoPipeline" or pipe.config.expand_timesteps:
            sys.exit("record.py: --last-image needs --image and an image-to-video model without expand_timesteps "
                     "(where diffusers would ignore it)")
        call["last_image"] = load_image(str(args.last_image))

    if args.video is not None:
        # WanVideoToVideoPipeline: one guidance scale for both experts; the clip as a user's script loads it.
        if args.guidance_scale_2 not in (None, args.guidance_scale):
            sys.exit("record.py: --video takes one guidance scale (--guidance-scale-2 equal to it or unset)")
        del call["guidance_scale_2"]
        call["video"] = load_video(str(args.video))[: args.num_frames]
        if len(call["video"]) < args.num_frames:
            sys.exit(f"record.py: {args.video} has {len(call['video'])} frames, fewer than --num-frames")
        call["strength"] = args.strength
        del call["num_frames"]
    if args.animate:
        # WanAnimatePipeline: the videos whole, as a user's script loads them; no frame count, one guidance scale.
        for key in ("num_frames", "guidance_scale_2"):
            del call[key]
        call.update(pose_video=load_video(str(args.pose_video)), face_video=load_video(str(args.face_video)),
                    mode=args.animate_mode, segment_frame_length=args.segment_frames,
                    prev_segment_conditioning_frames=args.prev_segment_frames)
        if args.animate_mode == "replace":
            call.update(background_video=load_video(str(args.background_video)),
                        mask_video=load_video(str(args.mask_video)))
    vace = isinstance(pipe, WanVACEPipeline)
    if not vace and not args.animate and (args.control_video or args.mask_video or args.reference_image
                                          or args.conditioning_scale):
        sys.exit("record.py: --control-video, --mask-video, --reference-image and --conditioning-scale need a VACE "
                 "folder (WanVACEPipeline)")
    if vace:
        for flag, path in (("video", args.control_video), ("mask", args.mask_video)):
            if path is not None:
                call[flag] = load_video(str(path))[: args.num_frames]
                if len(call[flag]) < args.num_frames:
                    sys.exit(f"record.py: {path} has {len(call[flag])} frames, fewer than --num-frames")
        if args.reference_image:
            call["reference_images"] = [load_image(str(p)) for p in args.reference_image]
        if args.conditioning_scale is not None:
            scales = [float(x) for x in args.conditioning_scale.split(",")]
            call["conditioning_scale"] = scales[0] if len(scales) == 1 else scales
    rec = Recorder(pipe)
    rec.seed = args.seed
    unwrap = rec.wrap_pipeline(pipe)
    with torch.no_grad():
        frames = pipe(**call, callback_on_step_end=rec.on_step_end).frames
        unwrap()
        if args.animate:
            rec.check_animate_noise(args.seed)
        rec.put("frames", torch.from_numpy(np.asarray(frames, dtype=np.float32)))
        rec.put("scheduler.timesteps", pipe.scheduler.timesteps)
        rec.put("scheduler.sigmas", pipe.scheduler.sigmas)
        latent_shape = list(rec.tensors["init_latents"].shape)
        if args.unit_seed is not None:
            record_unit_forwards(pipe, rec, args.unit_seed, latent_shape, args)
    rec.close()

    texts = {"prompt": args.prompt}
    if guidance:
        texts["negative"] = args.negative_prompt
    image = None
    if args.image is not None:
        # Relative to case.json where it lies beside or below it, as in the fixtures ("image.png").
        image = relative_to_case(args.image, args.case_json)
    case = {
        "prompt": args.prompt,
        "negative_prompt": args.negative_prompt,
        "height": args.height,
        "width": args.width,
        "frames": len(call["pose_video"]) if args.animate else args.num_frames,
        "image": image,
        **({"video": relative_to_case(args.video, args.case_json), "strength": args.strength}
           if args.video is not None else {}),
        **({"last_image": relative_to_case(args.last_image, args.case_json)} if args.last_image is not None else {}),
        **({"control_video": relative_to_case(args.control_video, args.case_json) if args.control_video else None,
            "mask_video": relative_to_case(args.mask_video, args.case_json) if args.mask_video else None,
            "reference_images": [relative_to_case(p, args.case_json) for p in args.reference_image],
            "conditioning_scale": args.conditioning_scale} if vace else {}),
        **({"pose_video": relative_to_case(args.pose_video, args.case_json),
            "face_video": relative_to_case(args.face_video, args.case_json),
            "background_video": relative_to_case(args.background_video, args.case_json)
            if args.background_video else None,
            "mask_video": relative_to_case(args.mask_video, args.case_json) if args.mask_video else None,
            "animate_mode": args.animate_mode,
            "segment_frames": args.segment_frames,
            "prev_segment_frames": args.prev_segment_frames,
            "segments": rec.segment + 1} if args.animate else {}),
        "pipeline": type(pipe).__name__,
        "solver": args.solver,
        "num_inference_steps": args.num_inference_steps,
        "guidance_scale": args.guidance_scale,
        "guidance_scale_2": guidance_2,
        "boundary_ratio": boundary_ratio,
        "flow_shift": flow_shift,
        "seed": args.seed,
        "max_sequence_length": args.max_sequence_length,
        "expand_timesteps": bool(index.get("expand_timesteps", False)),
        "unit_seed": args.unit_seed,
        "latent_shape": latent_shape,
        "frames_shape": list(rec.tensors["frames"].shape),
        "transformer_calls": rec.calls,
        "step_log": rec.steps,
        "sentencepiece_ids": sentencepiece_ids(args.model, texts),
        # What the text encoder got (diffusers' prompt_clean: ftfy.fix_text, html.unescape twice, whitespace).
        "prompt_clean": {name: prompt_clean(text) for name, text in texts.items()},
        "produced_by": produced_by(),
    }

    # The LoRA files by name, content and scale (not by path: --check records into a temporary folder).
    for key, specs in (("lora", args.lora), ("lora_2", args.lora_2)):
        if specs:
            case[key] = [{"file": Path(lora_spec(x)[0]).name,
                          "sha256": hashlib.sha256(Path(lora_spec(x)[0]).read_bytes()).hexdigest(),
                          "scale": lora_spec(x)[1]} for x in specs]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.case_json.parent.mkdir(parents=True, exist_ok=True)
    save_file(rec.tensors, str(args.out))
    args.case_json.write_text(json.dumps(case, indent=2) + "\n")
    print(f"record.py: {len(rec.tensors)} tensors -> {args.out}, {len(rec.calls)} transformer calls, "
          f"{len(rec.steps)} steps; case -> {args.case_json}")


if __name__ == "__main__":
    main(sys.argv[1:])
