#!/usr/bin/env python3
"""Records Wan2.2's WanS2V.generate (wan/speech2video.py) end to end on tiny random models, on the CPU in float32.

Why this exists
  record_s2v.py records the S2V pieces (one transformer forward, the audio path, the scheduler, the size rule).
  This script runs the WHOLE pipeline of Wan-Video/Wan2.2 (the original code, from a checkout, unmodified) so that
  a C++ port can check its clip loop end to end: sizes, reference/motion/pose VAE encodes, T5, wav2vec2 and audio
  bucketing, the per-clip noise, every UniPC step with the cond/uncond model outputs, the decode, the motion
  re-encode between clips, and the final video. See docs/s2v-reference.md sections 5, 7 and 9.

Run (CPU, float32, one thread; about 12 s)
  /tmp/s2vvenv/bin/python tools/reference/s2v/record_s2v_pipeline.py --wan-src /tmp/wan22wt --out /tmp/s2vfull

  --wan-src  a checkout of Wan-Video/Wan2.2 (written against 42bf4cfaa384bc21833865abc2f9e6c0e67233dc)
  --out      output folder (default /tmp/s2vfull); nothing is written anywhere else
  Python: the reference environment (tools/reference/.venv: torch 2.11, diffusers 0.40, transformers 5.17,
  librosa 0.11, scipy, safetensors) plus what speech2video.py imports and the reference environment lacks:
  torchvision (the build matching torch: 0.26.0), decord 0.6.0, einops, easydict. A throwaway venv that sees the
  reference environment:
      python3 -m venv /tmp/s2vvenv
      tools/reference/.venv/bin/python -c 'import site; print(site.getsitepackages()[0])' \\
          > /tmp/s2vvenv/lib/python3.11/site-packages/refvenv.pth
      /tmp/s2vvenv/bin/pip install einops easydict decord==0.6.0
      /tmp/s2vvenv/bin/pip install --no-deps torchvision==0.26.0
  ffmpeg (the command line tool, libx264) writes the pose video.

What it writes (under --out)
  ckpt/                                   the tiny checkpoint in the ORIGINAL layout WanS2V.__init__ loads:
    config.json + diffusion_pytorch_model.safetensors   WanModel_S2V (record_s2v.TINY_CFG with text_len 512;
                                                        text_dim is not configurable (ignore_for_config): 4096),
                                                        bf16 values as published (loaded as float32)
    models_t5_umt5-xxl-enc-bf16.pth       Wan's T5Encoder state dict (torch.save, bf16 values), TINY_T5 below:
                                          dim 4096 (the transformer's fixed text_dim), 1 layer, 4 heads x 4,
                                          ffn 8, vocab 160 (the tiny fixtures' tokenizer)
    google/umt5-xxl/                      copy of tests/data/reference/t2v-a14b-tiny/model/tokenizer
    Wan2.1_VAE.pth                        the tiny fixture VAE (t2v-a14b-tiny/model/vae: base dim 3, dim_mult
                                          1,1,1,1, 1 res block) in Wan's names (foreign_layouts.to_original_vae)
    wav2vec2-large-xlsr-53-english/       tiny wav2vec2 as record_s2v.make_wav2vec writes it
  inputs/audio.wav                        1.5 s, 16 kHz mono float32 (record_s2v.make_audio): 2 clips of 12 frames
  inputs/ref_80x96.png, inputs/ref_90x200.png   reference images (height x width in the name)
  inputs/pose_80x96_25fps.mp4             30 frames, 25 fps, libx264 yuv420p (decord reads every 2nd frame)
  audio.safetensors                       the audio path (identical for every case; asserted):
    wave [N] (librosa.load), input_values [1,N], hidden_states [25,T50,C] (transformers 4.51.3 semantics, see
    record_s2v.HiddenStates451), hidden_states_tf5 [25,T50,C]
  case_<name>.safetensors                 one WanS2V.generate call; keys:
    text.ids [2,512] int64 / text.mask [2,512] int64   T5 input ids / mask: prompt (row 0), negative (row 1)
    context [L,4096] / context_null [L',4096]          T5 output trimmed to the tokens (what the model gets;
                                                       context_null only with guide_scale > 1)
    audio.emb [1,25,C,n*F]                             WanS2V.encode_audio's bucketed features
    num_repeat_audio [1] int64                         the clip count the audio gives (generate uses min(it, arg))
    ref.pixels [1,3,1,H,W]                             the resized/cropped reference image in [-1,1]
    ref_latents [1,16,1,h,w]
    (the 73 motion pixel frames of clip 0 are zeros (mid-gray), not stored; clip0.motion_latents is their VAE)
    pose.frames_u8 [n,Hp,Wp,3] uint8, pose.indices [n]  (pose case) decord frames and the source frame indices
    pose.pixels [1,3,n,H,W]                            (pose case) the n decoded frames after Resize + CenterCrop
                                                       (torchvision tensor resize), /255*2-1; the pipeline then
                                                       pads with -1 frames to F*num_repeat (not stored)
    pose.cond.{r} [1,16,F/4,h,w]                       load_pose_cond's latents (without a pose video: one entry,
                                                       the VAE of -1 frames; the pipeline multiplies it by 0)
    clip{r}.noise [16,T,h,w]                           the randn draw of clip r (CPU generator, seed + r, float32)
    clip{r}.motion_latents [1,16,19,h,w]               motion latents given to the model for clip r
    clip{r}.cond_states [1,16,T,h,w] / clip{r}.audio_input [1,25,C,F] / clip{r}.drop_motion_frames [1]
    clip{r}.timesteps [S] int64 / clip{r}.sigmas [S+1]
    clip{r}.step{i}.x [16,T,h,w]                       latents entering step i; clip{r}.step{i}.t [1] int64
    clip{r}.step{i}.cond / .uncond [16,T,h,w]          model outputs (uncond only with guide_scale > 1)
    clip{r}.step{i}.noise_pred [16,T,h,w]              u + g (c - u) (= cond without guidance), given to step()
    clip{r}.step{i}.after [16,T,h,w]                   scheduler.step result
    clip{r}.decode_in [1,16,Td,h,w]                    cat(ref or motion latents, latents) given to VAE.decode
    clip{r}.frame_range [2] int64                      [start, end): the decoded frames generate() kept of this
                                                       clip are video[:, start:end] (k = F, or F-3 for the first
                                                       clip); asserted bit-identical to the decode output's tail
    video [3,N,H,W]                                    generate()'s return value (the kept frames, concatenated)
  meta.json                               cases (arguments, prompts, sizes), tiny configs, versions, patches

Patches (nothing of the checkout is edited; everything is done from outside, before or around the calls)
  1. Package __init__ files of wan, wan.modules, wan.modules.s2v, wan.utils, wan.distributed, wan.configs are
     not run (record_s2v._stub_pkg): they import every task. The needed modules are imported by name.
  2. wan.modules.t5's class body evaluates torch.cuda.current_device() (a default argument). It is replaced by
     `lambda: 0` only while that module is imported; WanS2V passes device=cpu to T5EncoderModel, so the default
     is never used.
  3. flash_attention -> per-sample scaled_dot_product_attention (record_s2v.flash_attention_sdpa), in float32
     instead of flash-attn's bf16; exact attention either way. In every module that imported it.
  4. Tiny sizes: wan.modules.t5.umt5_xxl builds the T5 with TINY_T5 (the real factory, its config updated), and
     wan.modules.vae2_1._video_vae builds the VAE with TINY_VAE (the real factory: it takes **kwargs and
     cfg.update()s them). The architecture is otherwise the code's own; the loads are strict.
  5. speech2video.py sees a `torch` stand-in (its module attribute `torch` replaced by a forwarding module) where:
     torch.device("cuda:N") -> cpu (so the VAE, the DiT, the T5, the Generator and every tensor are on the CPU),
     torch.amp.autocast -> a null context (the config's param_dtype is float32 here, and autocast('cuda') does
     nothing to CPU tensors anyway), torch.cuda.empty_cache/synchronize -> no-ops, torch.randn -> the real
     torch.randn whose result is recorded. Arithmetic: the per-clip noise comes from a CPU torch.Generator seeded
     with seed + r in float32, not from the CUDA Philox generator in bf16 (it is recorded: feed it to the port).
  6. config: wan_s2v_14B's EasyDict with param_dtype = t5_dtype = float32 (bf16 in the original): everything runs
     in float32. The rest (motion_frames 73, drop_first_motion, sample_fps 16, text_len 512, the S2V negative
     prompt) is as published.
  7. transformers 5.17 instead of Wan2.2's pinned <= 4.51.3: its Wav2Vec2ForCTC returns hidden_states[24] without
     the final encoder LayerNorm. The AudioEncoder's model is wrapped with record_s2v.HiddenStates451, which puts
     the LayerNorm'ed last state back (what 4.51.3 returns). Both versions are stored in audio.safetensors.
  8. Recording only (no arithmetic change): forward wrappers on the DiT, on the VAE's encode/decode and the
     scheduler's step, WanS2V.encode_audio / read_last_n_frames / load_pose_cond wrapped to keep their results.
  librosa.load is the real one (librosa 0.11; the WAV is already 16 kHz mono, so no resampling happens).
  The model's and the VAE's own `torch.cuda.amp.autocast(dtype=float32)` blocks disable themselves (no CUDA):
  they only force float32, which everything is here anyway.
  The pose frames are resized by torchvision 0.26's tensor Resize (bilinear, antialias=True by default there;
  Wan2.2 does not pin torchvision): pose.pixels records the result.
  generate() runs with offload_model=False (True would call torch.cuda.synchronize; it only moves weights).
"""

import argparse
import contextlib
import copy
import importlib
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tools/reference"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import record_s2v as R  # noqa: E402  (sets torch threads to 1)

torch.set_num_threads(1)

FIXTURE = REPO / "tests/data/reference/t2v-a14b-tiny/model"
TINY_CFG = dict(R.TINY_CFG, text_len=512)      # the published text_len: the negative prompt is long
TINY_T5 = dict(vocab_size=160, dim=4096, dim_attn=16, dim_ffn=8, num_heads=4, encoder_layers=1, decoder_layers=1)
TINY_VAE = dict(dim=3, dim_mult=[1, 1, 1, 1], num_res_blocks=1)   # = the fixture's base_dim 3, dim_mult, blocks
INFER_FRAMES = 12          # multiple of 4: (12 + 3 + 73) // 4 - 19 = 3 latent frames per clip
AUDIO_SECONDS = 1.5        # 24000 samples -> T50 74 -> L30 44 -> int(44 / 22.5) + 1 = 2 clips of 12 frames
POSE_FRAMES, POSE_FPS, POSE_HW = 30, 25, (80, 96)

CASES = {
    # (a) two clips, no pose, CFG 4.5 with the config's (Chinese) negative prompt
    "a_cfg_2clips": dict(image="ref_80x96.png", max_area=64 * 64, pose=False, guide_scale=4.5, n_prompt="",
                         num_repeat=2, steps=3, shift=3.0, seed=42,
                         prompt="a woman talks to the camera"),
    # (b) the same with a pose video and an explicit negative prompt
    "b_pose_2clips": dict(image="ref_80x96.png", max_area=64 * 64, pose=True, guide_scale=4.5,
                          n_prompt="blurry, static", num_repeat=2, steps=3, shift=3.0, seed=42,
                          prompt="a woman talks to the camera"),
    # (c) guidance 1 (no uncond branch), one clip, a wide 64 x 128 output
    "c_noguide_1clip": dict(image="ref_90x200.png", max_area=64 * 128, pose=False, guide_scale=1.0, n_prompt="",
                            num_repeat=1, steps=3, shift=3.0, seed=7, prompt="a man sings"),
    # (d) generate.py --start_from_ref (init_first_frame): the reference image in the last 6 of the 73 motion
    # frames (which, the pixel buffer being shared by detach(), the second clip's motion frames keep: 12 < 73),
    # the first clip's motion tokens not dropped, no frame dropped from its decode
    "d_start_ref_2clips": dict(image="ref_80x96.png", max_area=64 * 64, pose=False, guide_scale=4.5, n_prompt="",
                               num_repeat=2, steps=3, shift=3.0, seed=42, prompt="a woman talks to the camera",
                               start_from_ref=True),
}

PATCHES = []


# ------------------------------------------------------------------------------------------------------ import
def import_wan(src: Path):
    for name, fallback in (("einops", R._install_einops_fallback), ("easydict", R._install_easydict_fallback)):
        try:
            importlib.import_module(name)
        except ImportError:
            fallback()
    import diffusers  # noqa: F401
    import librosa  # noqa: F401  (the real one)
    import transformers  # noqa: F401
    sys.path.insert(0, str(src))
    for pkg in ("wan", "wan.modules", "wan.modules.s2v", "wan.utils", "wan.distributed", "wan.configs"):
        R._stub_pkg(pkg, src / pkg.replace(".", "/"))
    PATCHES.extend(R.STUBS)
    cur = torch.cuda.current_device
    torch.cuda.current_device = lambda: 0
    try:
        t5 = importlib.import_module("wan.modules.t5")
    finally:
        torch.cuda.current_device = cur
    PATCHES.append("torch.cuda.current_device -> 0 only while wan.modules.t5 is imported (default argument)")
    names = ("wan.modules.attention", "wan.modules.model", "wan.modules.s2v.model_s2v", "wan.modules.s2v.motioner",
             "wan.modules.vae2_1", "wan.modules.s2v.audio_encoder", "wan.utils.fm_solvers_unipc",
             "wan.speech2video", "wan.configs.wan_s2v_14B")
    mods = {n: importlib.import_module(n) for n in names}
    mods["wan.modules.t5"] = t5
    for n, m in list(sys.modules.items()):
        if n.startswith("wan.") and getattr(m, "flash_attention", None) is not None:
            m.flash_attention = R.flash_attention_sdpa
    PATCHES.append("flash_attention -> per-sample scaled_dot_product_attention (float32) in every wan.* module "
                   "that imported it")

    orig_t5 = t5.umt5_xxl

    def tiny_umt5_xxl(**kw):
        return orig_t5(**{**TINY_T5, **kw})
    t5.umt5_xxl = tiny_umt5_xxl
    PATCHES.append(f"wan.modules.t5.umt5_xxl: config updated with {TINY_T5}")
    vae = mods["wan.modules.vae2_1"]
    orig_vae = vae._video_vae

    def tiny_video_vae(pretrained_path=None, z_dim=None, device="cpu", **kw):
        return orig_vae(pretrained_path=pretrained_path, z_dim=z_dim, device=device, **{**TINY_VAE, **kw})
    vae._video_vae = tiny_video_vae
    PATCHES.append(f"wan.modules.vae2_1._video_vae: cfg updated with {TINY_VAE}")
    return mods


class TorchForSpeech2Video(types.ModuleType):
    """What wan/speech2video.py sees as `torch`: the real module except for the CUDA-only entry points."""

    def __init__(self, rec_hook):
        super().__init__("torch_for_speech2video")
        self.amp = types.SimpleNamespace(autocast=lambda *a, **k: contextlib.nullcontext())
        self.cuda = types.SimpleNamespace(empty_cache=lambda: None, synchronize=lambda: None,
                                          current_device=lambda: 0)
        self._rec_hook = rec_hook

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def device(*a, **k):
        d = torch.device(*a, **k)
        return torch.device("cpu") if d.type == "cuda" else d

    def randn(self, *a, **k):
        x = torch.randn(*a, **k)
        self._rec_hook(x)
        return x


# ----------------------------------------------------------------------------------------------------- inputs
def write_checkpoint(mods, ckpt: Path, seed: int):
    import foreign_layouts as FL
    ckpt.mkdir(parents=True, exist_ok=True)
    R.make_wav2vec(ckpt / "wav2vec2-large-xlsr-53-english", seed)
    W = mods["wan.modules.s2v.model_s2v"].WanModel_S2V
    model = W(**TINY_CFG).eval()
    R.randomize_(model, torch.Generator().manual_seed(seed + 2))
    # stored in bf16 as the published shards are; from_pretrained(torch_dtype=float32) widens them exactly
    model.to(torch.bfloat16).save_pretrained(str(ckpt), safe_serialization=True)
    # T5: Wan's own T5Encoder built by the (patched) factory, random values rounded to bf16 (the file's dtype)
    t5 = mods["wan.modules.t5"]
    enc = t5.umt5_xxl(encoder_only=True, return_tokenizer=False, dtype=torch.float32, device="cpu")
    R.randomize_(enc, torch.Generator().manual_seed(seed + 5))
    sd = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in enc.state_dict().items()}
    torch.save(sd, str(ckpt / "models_t5_umt5-xxl-enc-bf16.pth"))
    tok = ckpt / "google" / "umt5-xxl"
    if tok.exists():
        shutil.rmtree(tok)
    shutil.copytree(FIXTURE / "tokenizer", tok)
    vae = FL.to_original_vae(FL.load_diffusers_component(FIXTURE / "vae"), 16)
    torch.save({k: v.contiguous() for k, v in vae.items()}, str(ckpt / FL.original_vae_name(16)))


def smooth_image(h, w, seed):
    g = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w] / np.array([h, w])[:, None, None]
    img = np.stack([0.5 + 0.5 * np.sin(2 * np.pi * (f1 * x + f2 * y) + p)
                    for f1, f2, p in g.uniform(0.3, 2.0, (3, 3))], -1)
    img += 0.05 * g.standard_normal(img.shape)
    return (np.clip(img, 0, 1) * 255).round().astype(np.uint8)


def write_inputs(inp: Path, seed: int):
    from PIL import Image
    inp.mkdir(parents=True, exist_ok=True)
    R.make_audio(inp / "audio.wav", seed, seconds=AUDIO_SECONDS)
    Image.fromarray(smooth_image(80, 96, seed + 10)).save(inp / "ref_80x96.png")
    Image.fromarray(smooth_image(90, 200, seed + 11)).save(inp / "ref_90x200.png")
    h, w = POSE_HW
    frames = np.zeros((POSE_FRAMES, h, w, 3), np.uint8)
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(POSE_FRAMES):      # a few moving blobs on black, like a rendered pose map
        for j, col in enumerate(((255, 40, 40), (40, 255, 40), (60, 60, 255))):
            cy = h * (0.3 + 0.2 * j) + 6 * np.sin(0.3 * i + j)
            cx = w * (0.3 + 0.2 * j) + 8 * np.cos(0.2 * i + 2 * j)
            frames[i][(yy - cy) ** 2 + (xx - cx) ** 2 < 40] = col
    path = inp / f"pose_{h}x{w}_{POSE_FPS}fps.mp4"
    cmd = ["ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}",
           "-r", str(POSE_FPS), "-i", "-", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-threads", "1",
           "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1", str(path)]
    subprocess.run(cmd, input=frames.tobytes(), check=True)
    return path


# -------------------------------------------------------------------------------------------------- the run
class CaseRecorder:
    def __init__(self):
        self.t = {}
        self.clip = -1
        self.step = 0
        self.calls = 0
        self.in_pose = False
        self.pose_pixels = []
        self.kept = []

    def put(self, name, x):
        assert name not in self.t, name
        x = x.detach().cpu()
        if x.dtype == torch.uint8:
            self.t[name] = x.contiguous().clone()
            return
        if x.dtype.is_floating_point:
            x = x.to(torch.float32)
        elif x.dtype != torch.bool:
            x = x.to(torch.int64)
        self.t[name] = x.contiguous().clone()


def build_pipeline(mods, ckpt: Path):
    P = mods["wan.speech2video"]
    cfg = copy.deepcopy(mods["wan.configs.wan_s2v_14B"].s2v_14B)
    cfg.param_dtype = torch.float32
    cfg.t5_dtype = torch.float32
    state = {"rec": None}

    def on_randn(x):
        rec = state["rec"]
        rec.clip += 1
        rec.step = 0
        rec.put(f"clip{rec.clip}.noise", x)
    P.torch = TorchForSpeech2Video(on_randn)
    PATCHES.append("wan.speech2video.torch -> forwarding stand-in: device('cuda:N') -> cpu, amp.autocast -> "
                   "nullcontext, cuda.empty_cache/synchronize -> no-op, randn recorded")
    PATCHES.append("config: param_dtype = t5_dtype = float32 (bf16 published)")
    s2v = P.WanS2V(config=cfg, checkpoint_dir=str(ckpt), device_id=0, rank=0)
    assert s2v.device.type == "cpu" and s2v.vae.device.type == "cpu"
    # the loads are the code's own: check they give what was written
    from safetensors.torch import load_file
    sd = load_file(str(ckpt / "diffusion_pytorch_model.safetensors"))
    msd = s2v.noise_model.state_dict()
    assert sd.keys() == msd.keys() and all(sd[k].dtype == torch.bfloat16 and torch.equal(sd[k].float(), msd[k])
                                           for k in sd), "DiT load"
    assert next(s2v.text_encoder.model.parameters()).dtype == torch.float32

    # patch 7: transformers 4.51.3 hidden_states
    wrapper = R.HiddenStates451(s2v.audio_encoder.model)
    s2v.audio_encoder.model = wrapper
    PATCHES.append("AudioEncoder.model -> record_s2v.HiddenStates451 (transformers 4.51.3 hidden_states[24])")
    proc = s2v.audio_encoder.processor
    audio_cap = {}

    def proc_spy(*a, **k):
        out = proc(*a, **k)
        audio_cap["wave"] = torch.from_numpy(np.asarray(a[0]))
        audio_cap["input_values"] = out.input_values
        return out
    s2v.audio_encoder.processor = proc_spy

    # recording wrappers
    enc_audio = s2v.encode_audio

    def encode_audio(audio_path, infer_frames):
        emb, n = enc_audio(audio_path, infer_frames)
        state["rec"].put("audio.emb", emb)
        state["rec"].put("num_repeat_audio", torch.tensor([n]))
        audio_cap["hidden_states"] = torch.cat(wrapper.fixed)
        audio_cap["hidden_states_tf5"] = torch.cat(wrapper.raw)
        return emb, n
    s2v.encode_audio = encode_audio

    read_n = s2v.read_last_n_frames

    def read_last_n_frames(video_path, n_frames, target_fps=16, reverse=False):
        arr = read_n(video_path, n_frames, target_fps=target_fps, reverse=reverse)
        import decord
        vr = decord.VideoReader(video_path)
        interval = max(1, round(vr.get_avg_fps() / target_fps))
        idx = [i * interval for i in range(n_frames) if i * interval < len(vr)]
        assert reverse and len(idx) == arr.shape[0]
        state["rec"].put("pose.frames_u8", torch.from_numpy(np.ascontiguousarray(arr)))
        state["rec"].put("pose.indices", torch.tensor(idx))
        return arr
    s2v.read_last_n_frames = read_last_n_frames

    load_pose = s2v.load_pose_cond

    def load_pose_cond(pose_video, num_repeat, infer_frames, size):
        rec = state["rec"]
        rec.in_pose = True
        try:
            cond = load_pose(pose_video, num_repeat, infer_frames, size)
        finally:
            rec.in_pose = False
        for r, c in enumerate(cond):
            rec.put(f"pose.cond.{r}", c)
        if pose_video is not None:
            px = torch.cat([p[:, :, 1:] for p in rec.pose_pixels], 2)     # without each chunk's repeated frame
            n = rec.t["pose.frames_u8"].shape[0]
            assert (px[:, :, n:] == -1).all()
            rec.put("pose.pixels", px[:, :, :n])                          # the -1 padding frames not stored
        return cond
    s2v.load_pose_cond = load_pose_cond

    vae_enc, vae_dec = s2v.vae.encode, s2v.vae.decode

    def encode(videos):
        rec = state["rec"]
        out = vae_enc(videos)
        if rec.in_pose:
            rec.pose_pixels.append(torch.stack(list(videos)))
        elif "ref.pixels" not in rec.t:
            rec.put("ref.pixels", torch.stack(list(videos)))
            rec.put("ref_latents", torch.stack(out))
        return out

    def decode(zs):
        rec = state["rec"]
        rec.put(f"clip{rec.clip}.decode_in", torch.stack(list(zs)))
        out = vae_dec(zs)
        k = INFER_FRAMES - (3 if rec.clip == 0 and state["drop_first"] else 0)
        rec.kept.append(out[0][:, -k:].clone())     # what generate keeps of this decode
        return out
    s2v.vae.encode, s2v.vae.decode = encode, decode

    model_fwd = s2v.noise_model.forward

    def forward(x, t, **kw):
        rec = state["rec"]
        out = model_fwd(x, t=t, **kw)
        r, i = rec.clip, rec.step
        uncond = f"clip{r}.step{i}.cond" in rec.t
        if not uncond:
            rec.put(f"clip{r}.step{i}.x", x[0])
            rec.put(f"clip{r}.step{i}.t", t)
            if i == 0:
                for k in ("motion_latents", "cond_states", "audio_input"):
                    rec.put(f"clip{r}.{k}", kw[k])
                rec.put(f"clip{r}.drop_motion_frames", torch.tensor([int(kw["drop_motion_frames"])]))
                assert torch.equal(kw["ref_latents"], rec.t["ref_latents"])
                if "context" not in rec.t:
                    rec.put("context", kw["context"][0])
            else:
                assert torch.equal(kw["context"][0], rec.t["context"])
        else:
            if "context_null" not in rec.t:
                rec.put("context_null", kw["context"][0])
            assert torch.equal(kw["audio_input"], 0.0 * rec.t[f"clip{r}.audio_input"])
        rec.put(f"clip{r}.step{i}.{'uncond' if uncond else 'cond'}", out[0])
        return out
    s2v.noise_model.forward = forward

    t5_fwd = s2v.text_encoder.model.forward

    def t5_forward(ids, mask=None):
        rec = state["rec"]
        n = sum(1 for k in rec.t if k.startswith("text.ids"))
        rec.put(f"text.ids.{n}", ids[0])
        rec.put(f"text.mask.{n}", mask[0])
        return t5_fwd(ids, mask)
    s2v.text_encoder.model.forward = t5_forward

    S = mods["wan.utils.fm_solvers_unipc"].FlowUniPCMultistepScheduler
    orig_step = S.step

    def step(self, model_output, timestep, sample, *a, **k):
        rec = state["rec"]
        r, i = rec.clip, rec.step
        if i == 0:
            rec.put(f"clip{r}.timesteps", self.timesteps)
            rec.put(f"clip{r}.sigmas", self.sigmas)
        rec.put(f"clip{r}.step{i}.noise_pred", model_output[0])
        out = orig_step(self, model_output, timestep, sample, *a, **k)
        rec.put(f"clip{r}.step{i}.after", out[0][0])
        rec.step += 1
        return out
    S.step = step
    return s2v, state, audio_cap


def run_case(s2v, state, audio_cap, name, c, inp: Path, pose_path: Path, out: Path, meta):
    from safetensors.torch import save_file
    rec = CaseRecorder()
    state["rec"] = rec
    audio_cap.clear()
    start_from_ref = c.get("start_from_ref", False)
    state["drop_first"] = s2v.drop_first_motion and not start_from_ref  # what generate drops of clip 0
    video = s2v.generate(
        input_prompt=c["prompt"], ref_image_path=str(inp / c["image"]), audio_path=str(inp / "audio.wav"),
        enable_tts=False, tts_prompt_audio=None, tts_prompt_text=None, tts_text=None,
        num_repeat=c["num_repeat"], pose_video=str(pose_path) if c["pose"] else None, max_area=c["max_area"],
        infer_frames=INFER_FRAMES, shift=c["shift"], sample_solver="unipc", sampling_steps=c["steps"],
        guide_scale=c["guide_scale"], n_prompt=c["n_prompt"], seed=c["seed"], offload_model=False,
        init_first_frame=start_from_ref)
    rec.put("video", video)
    # kept frames per clip: consecutive slices of the returned video (generate concatenates image.cpu())
    start, ranges = 0, []
    for r in range(rec.clip + 1):
        k = INFER_FRAMES - (3 if r == 0 and state["drop_first"] else 0)
        rec.put(f"clip{r}.frame_range", torch.tensor([start, start + k]))
        assert torch.equal(rec.kept[r], video[:, start:start + k])
        ranges.append([start, start + k])
        start += k
    assert start == video.shape[1]
    ids = [rec.t.pop(f"text.ids.{j}") for j in range(2)] if "text.ids.1" in rec.t else [rec.t.pop("text.ids.0")]
    masks = [rec.t.pop(f"text.mask.{j}") for j in range(len(ids))]
    rec.put("text.ids", torch.stack(ids))
    rec.put("text.mask", torch.stack(masks))
    save_file(rec.t, str(out / f"case_{name}.safetensors"))
    H, W = video.shape[-2:]
    meta["cases"][name] = dict(c, infer_frames=INFER_FRAMES, size=[int(H), int(W)], clips=rec.clip + 1,
                               frame_ranges=ranges, n_prompt_used=c["n_prompt"] or s2v.sample_neg_prompt,
                               keys={k: [str(v.dtype).replace("torch.", ""), list(v.shape)]
                                     for k, v in sorted(rec.t.items())})
    return {k: v.clone() for k, v in audio_cap.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wan-src", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=Path("/tmp/s2vfull"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    src, out = args.wan_src.resolve(), args.out
    out.mkdir(parents=True, exist_ok=True)
    head = R.git_head(src)
    print(f"Wan2.2 source: {src} (HEAD {head or 'unknown'}; written against {R.PINNED})")
    mods = import_wan(src)
    write_checkpoint(mods, out / "ckpt", args.seed)
    pose_path = write_inputs(out / "inputs", args.seed)
    s2v, state, audio_cap = build_pipeline(mods, out / "ckpt")
    import decord
    import diffusers
    import librosa
    import torchvision
    import transformers
    meta = {"wan_src": str(src), "wan_head": head, "pinned": R.PINNED, "seed": args.seed,
            "torch": torch.__version__, "torchvision": torchvision.__version__, "decord": decord.__version__,
            "librosa": librosa.__version__, "transformers": transformers.__version__,
            "diffusers": diffusers.__version__, "tiny_config": TINY_CFG, "tiny_t5": TINY_T5, "tiny_vae": TINY_VAE,
            "wav2vec2_config": R.W2V_CFG, "audio_seconds": AUDIO_SECONDS,
            "pose_video": {"frames": POSE_FRAMES, "fps": POSE_FPS, "height_width": list(POSE_HW)},
            "cases": {}}
    audio = None
    for name, c in CASES.items():
        a = run_case(s2v, state, audio_cap, name, c, out / "inputs", pose_path, out, meta)
        if audio is None:
            audio = a
        else:
            assert a.keys() == audio.keys() and all(torch.equal(a[k], audio[k]) for k in a), "audio differs"
        print(f"case {name}: video {meta['cases'][name]['size']}, {meta['cases'][name]['clips']} clips")
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in audio.items()}, str(out / "audio.safetensors"))
    meta["patches"] = PATCHES
    (out / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    total = 0
    for f in sorted(p for p in out.rglob("*") if p.is_file()):
        total += f.stat().st_size
    print(f"wrote {out} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
