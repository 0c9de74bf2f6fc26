#!/usr/bin/env python3
"""Records what Wan2.2's own S2V code (Wan-Video/Wan2.2, wan/modules/s2v/*) computes, on a tiny random model.

Why this exists
  diffusers has no speech-to-video pipeline, so Wan2.2-S2V-14B parity is against the original repository's code,
  run from a checkout of it (the project keeps none of Wan2.2's code). docs/s2v-reference.md describes what that
  code does; this script makes tensors to compare a C++ implementation with.

Run (CPU, float32, one thread)
  python tools/reference/s2v/record_s2v.py --wan-src /path/to/Wan2.2 --out /tmp/s2vrec

  --wan-src   a checkout of Wan-Video/Wan2.2 (written against 42bf4cfaa384bc21833865abc2f9e6c0e67233dc; the
              script prints the checkout's HEAD when it is a git work tree and stores it in meta.json)
  --out       output folder (created); nothing is written anywhere else
  --seed      seed of every random tensor (default 0)

  Python: tools/reference/.venv (torch 2.11, diffusers 0.40, transformers 5.17, scipy, safetensors) plus `einops`
  and `easydict`, which the reference environment lacks. Either put them in a throwaway venv that sees the
  reference environment:
      python3 -m venv /tmp/s2vvenv && /tmp/s2vvenv/bin/pip install einops easydict
      tools/reference/.venv/bin/python -c 'import site; print(site.getsitepackages()[0])' \
          > /tmp/s2vvenv/lib/python3.11/site-packages/refvenv.pth
      /tmp/s2vvenv/bin/python tools/reference/s2v/record_s2v.py --wan-src ... --out ...
  or run it with tools/reference/.venv/bin/python directly: then a minimal `einops.rearrange` (enough for the
  patterns the S2V model uses) and an EasyDict stand-in are put in place; meta.json says which was used.

What it writes (under --out)
  ckpt/                       a tiny Wan2.2-S2V folder in the original layout:
    config.json + diffusion_pytorch_model.safetensors    WanModel_S2V (save_pretrained; reloaded with
                                                          WanModel_S2V.from_pretrained for the runs below)
    wav2vec2-large-xlsr-53-english/                       tiny random Wav2Vec2ForCTC shaped like xlsr-53 (24
                                                          layers -> 25 hidden states, stable layer norm, layer-norm
                                                          conv feature extractor with conv bias) + its
                                                          preprocessor_config.json and CTC tokenizer files
  audio.wav                   the synthetic input: 2.0 s, 16 kHz, mono, float32 WAV (sines + seeded noise)
  audio.safetensors           the audio path (section 5 of docs/s2v-reference.md), keys:
    wave                        [N] float32 samples as librosa.load returns them
    input_values                [1, N] after Wav2Vec2Processor (zero mean, unit variance)
    hidden_states               [25, T50, C] torch.cat(res.hidden_states) as transformers 4.51.3 returns them
                                 (Wan2.2 pins transformers<=4.51.3: the 25th is the final layer-normed output)
    hidden_states_tf5           [25, T50, C] the same from transformers 5.x (the 25th lacks the final LayerNorm)
    feat                        [25, L30, C] after linear_interpolation (50 -> 30 fps) = extract_audio_feat()
    bucket.f{F}                 [1, 25, C, F*n] get_audio_embed_bucket_fps(feat, fps=16, batch_frames=F, m=0),
                                 permuted as WanS2V.encode_audio does; F = 12 (the tiny clips) and 80 (default)
    bucket_index.f{F}           [F*n] int64: the 30 fps feature index each video frame takes (>= L30: zeros)
    num_repeat.f{F}             [1] int64: the clip count n
  forward_<case>.safetensors  one WanModel_S2V.forward per case; inputs under in.*, output under out, and the
                              intermediates recorded with forward hooks (the model's own code is not edited):
      in.x [16,F,h,w], in.t [1] int64, in.context [L,4096], in.ref_latents [1,16,1,h,w],
      in.motion_latents [1,16,19,h,w], in.cond_states [1,16,F,h,w], in.audio_input [1,25,C,4F]
      audio.global [1,T',1,D] / audio.local [1,T',5,D]   casual_audio_encoder output (before dropping the first 19)
      audio.merged_emb [1,F,5,D] / audio.emb_global [1,F,1,D]   what the injections use
      embed.x_patch [1,D,F,h/2,w/2], embed.cond [1,D,F,h/2,w/2], embed.ref_patch [1,D,1,h/2,w/2]
      embed.motion_tokens [1,M,D] (frame packer output; M=0 when dropped), embed.mask_ids [1,S] int64,
      embed.tokens [1,S,D] (block 0 input, after trainable_cond_mask), embed.context [1,text_len,D],
      embed.e [1,D] (time_embedding; the head uses it), embed.e0 [1,6,2,D] (time_projection: [:,:,0] for
      the video tokens, [:,:,1] zero timestep for ref+motion tokens), embed.seg_idx [1] int64
      rope.freqs [S, d/2, 2] (cos, sin) per token (same for every head), rope.pos [S,3] int64 (f,h,w) rotation
      positions re-derived from the doc's rule (the script asserts they reproduce rope.freqs exactly)
      block.{i}.out [1,S,D] block output before the audio injection, block.{i}.after_audio [1,S,D] after it;
      inject.{i}.adain [F,hw,D], inject.{i}.attn [F,hw,D] (blocks in audio_inject_layers)
      head.out [1, F*(h/2)*(w/2), 64] (video tokens only), out [16,F,h,w] (the model's return value)
    cases: clip1 (motion tokens kept, random pose cond, audio clip 1), clip0 (first clip: drop_motion_frames,
    cond zeros as with no pose video, audio clip 0), clip1_uncond (clip1 with the negative context and audio*0:
    the classifier-free-guidance branch)
  scheduler.safetensors       Wan's FlowUniPCMultistepScheduler(shift=1).set_timesteps(N, shift=3) sigmas and
                              int64 timesteps for N = 40 and 4, and 4 UniPC steps on seeded tensors
                              (unipc4.sample0, unipc4.model_out.{k}, unipc4.after.{k})
  size.safetensors            WanS2V.get_size_less_than_area on a table of image sizes and areas
  meta.json                   config, shapes, seeds, commit, versions, stubs used, and doc_rule_check: the max
                              relative difference of each recorded tensor from check_doc_rules(), which recomputes
                              the audio bucketing and every forward case with plain torch by the rules written
                              in docs/s2v-reference.md (no Wan2.2 code); the run fails above 1e-5

Stand-ins (nothing of Wan2.2 is edited; all are put into sys.modules / module attributes before use)
  - `wan`, `wan.modules`, `wan.modules.s2v`, `wan.utils`: empty packages pointing at the checkout's folders, so the
    package __init__ files (which import every task, T5, both VAEs, animate, cv2, decord, ...) do not run.
  - flash attention: wan.modules.attention.flash_attention needs CUDA and the flash_attn package. It is replaced
    in every module that imported it (attention, model, s2v.model_s2v, s2v.motioner) by a per-sample
    torch.nn.functional.scaled_dot_product_attention over q[:q_len] and k/v[:k_len]: the same varlen attention
    (softmax(q k^T * scale) v, scale = softmax_scale or 1/sqrt(head_dim), q_scale applied to q), in float32
    instead of the bf16 the original casts to. In S2V every k_len equals the key count, so no masking happens.
  - librosa: `librosa.load(path, sr)` reads the WAV with scipy and returns float32 mono samples; it refuses a
    file whose rate differs from sr (the real one would resample with soxr).
  - WanS2V.get_size_less_than_area is compiled from wan/speech2video.py's source (ast) and called alone, because
    importing speech2video.py pulls in T5 (whose class body calls torch.cuda.current_device()), decord, torchvision.
  - einops / easydict: see above.
"""

import argparse
import importlib
import importlib.machinery
import json
import math
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import torch

torch.set_num_threads(1)

PINNED = "42bf4cfaa384bc21833865abc2f9e6c0e67233dc"

# Tiny transformer: WanModel_S2V.__init__ arguments (config.json). text_dim stays 4096 (ignored by
# register_to_config, so from_pretrained would use the default); patch (1,2,2), qk_norm, cross_attn_norm too.
TINY_CFG = dict(
    cond_dim=16, audio_dim=32, num_audio_token=4, enable_adain=True, adain_mode="attn_norm",
    audio_inject_layers=[0, 2], zero_init=True, zero_timestep=True, enable_motioner=False,
    add_last_motion=True, enable_tsm=False, trainable_token_pos_emb=False, enable_framepack=True,
    framepack_drop_mode="padd", model_type="s2v", text_len=16, in_dim=16, dim=64, ffn_dim=128,
    freq_dim=256, out_dim=16, num_heads=2, num_layers=3, eps=1e-6,
)
# Tiny wav2vec2: xlsr-53's structure (conv stack strides -> 50 frames/s, 24 layers -> 25 hidden states,
# stable layer norm, layer-norm conv feature extractor with conv bias), small widths.
W2V_CFG = dict(
    hidden_size=32, num_hidden_layers=24, num_attention_heads=2, intermediate_size=64,
    conv_dim=[32] * 7, conv_kernel=[10, 3, 3, 3, 3, 2, 2], conv_stride=[5, 2, 2, 2, 2, 2, 2], conv_bias=True,
    feat_extract_norm="layer", feat_extract_activation="gelu", do_stable_layer_norm=True, hidden_act="gelu",
    num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, layer_norm_eps=1e-5, vocab_size=33,
    pad_token_id=0, bos_token_id=1, eos_token_id=2, apply_spec_augment=True, mask_time_prob=0.05,
    layerdrop=0.05, hidden_dropout=0.05, activation_dropout=0.05, attention_dropout=0.1,
    feat_proj_dropout=0.05, final_dropout=0.0, architectures=["Wav2Vec2ForCTC"],
)
# A CTC vocabulary of the English xlsr-53 fine-tune's shape (33 entries); the tokenizer is never used on the
# audio path, Wav2Vec2Processor.from_pretrained only needs it to exist.
VOCAB = ["<pad>", "<s>", "</s>", "<unk>", "|", "'", "-"] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]

MOTION_FRAMES = [73, 19]   # WanS2V passes [config.transformer.motion_frames, (73 + 3) // 4]
LAT_F, LAT_H, LAT_W = 3, 8, 16   # noisy latent frames / height / width of the tiny forward (h, w multiples of 8)
INFER_FRAMES = 4 * LAT_F         # (infer_frames + 3 + 73) // 4 - 19 = LAT_F
SR = 16000

STUBS = []


# ---------------------------------------------------------------------------------------------------------- setup
def _stub_pkg(name, path):
    m = types.ModuleType(name)
    m.__path__ = [str(path)]
    sys.modules[name] = m
    STUBS.append(f"{name}: empty package on {path} (its __init__.py not run)")


def _install_einops_fallback():
    """Only rearrange over named axes and parenthesised groups (what wan/modules/s2v uses on this path)."""
    def parse(side):
        groups, cur, depth = [], None, 0
        for tok in side.replace("(", " ( ").replace(")", " ) ").split():
            if tok == "(":
                cur, depth = [], 1
            elif tok == ")":
                groups.append(cur)
                cur, depth = None, 0
            elif depth:
                cur.append(tok)
            else:
                groups.append([tok])
        return groups

    def rearrange(x, pattern, **sizes):
        lhs, rhs = (parse(s) for s in pattern.split("->"))
        assert len(lhs) == x.dim(), pattern
        sizes = dict(sizes)
        for g, n in zip(lhs, x.shape):
            unknown = [a for a in g if a not in sizes]
            known = math.prod(sizes[a] for a in g if a in sizes)
            assert len(unknown) <= 1, pattern
            if unknown:
                sizes[unknown[0]] = n // known
            assert math.prod(sizes[a] for a in g) == n, (pattern, x.shape)
        flat_l = [a for g in lhs for a in g]
        flat_r = [a for g in rhs for a in g]
        x = x.reshape([sizes[a] for a in flat_l]).permute([flat_l.index(a) for a in flat_r])
        return x.reshape([math.prod(sizes[a] for a in g) for g in rhs])

    def repeat(*a, **k):
        raise NotImplementedError("einops.repeat is not in the fallback (not used on the S2V framepack path)")

    m = types.ModuleType("einops")
    m.rearrange, m.repeat = rearrange, repeat
    sys.modules["einops"] = m
    STUBS.append("einops: minimal rearrange (named axes + groups), repeat raises")


def _install_easydict_fallback():
    class EasyDict(dict):
        def __getattr__(self, k):
            try:
                return self[k]
            except KeyError:
                raise AttributeError(k)

        def __setattr__(self, k, v):
            self[k] = v

    m = types.ModuleType("easydict")
    m.EasyDict = EasyDict
    sys.modules["easydict"] = m
    STUBS.append("easydict: dict with attribute access")


def _install_librosa_stub():
    from scipy.io import wavfile

    def load(path, sr=22050, mono=True, **kw):
        rate, data = wavfile.read(path)
        if rate != sr:
            raise ValueError(f"librosa stub: {path} is {rate} Hz, asked {sr} Hz (the stub does not resample)")
        data = np.asarray(data)
        if data.dtype == np.int16:
            data = data.astype(np.float32) / 32768.0
        elif data.dtype == np.int32:
            data = data.astype(np.float32) / 2147483648.0
        data = data.astype(np.float32)
        if data.ndim == 2:
            data = data.mean(axis=1) if mono else data.T
        return data, rate

    m = types.ModuleType("librosa")
    m.load = load
    m.__version__ = "stub"
    m.__spec__ = importlib.machinery.ModuleSpec("librosa", None)
    sys.modules["librosa"] = m
    STUBS.append("librosa: load() via scipy.io.wavfile, no resampling")


def flash_attention_sdpa(q, k, v, q_lens=None, k_lens=None, dropout_p=0., softmax_scale=None, q_scale=None,
                         causal=False, window_size=(-1, -1), deterministic=False, dtype=torch.bfloat16,
                         version=None):
    """wan.modules.attention.flash_attention's semantics (flash_attn_varlen_func over q[:q_len], k/v[:k_len])."""
    import torch.nn.functional as F
    assert tuple(window_size) == (-1, -1) and dropout_p == 0.0
    b, lq, lk, out_dtype = q.size(0), q.size(1), k.size(1), q.dtype
    if q_scale is not None:
        q = q * q_scale
    q = q.to(v.dtype)
    k = k.to(v.dtype)
    out = torch.zeros(b, lq, q.size(2), v.size(3), dtype=v.dtype)
    for i in range(b):
        ql = lq if q_lens is None else int(q_lens[i])
        kl = lk if k_lens is None else int(k_lens[i])
        o = F.scaled_dot_product_attention(q[i, :ql].transpose(0, 1), k[i, :kl].transpose(0, 1),
                                           v[i, :kl].transpose(0, 1), is_causal=causal, scale=softmax_scale)
        out[i, :ql] = o.transpose(0, 1)
    return out.type(out_dtype)


def import_wan(src: Path):
    try:
        import einops  # noqa: F401
    except ImportError:
        _install_einops_fallback()
    try:
        import easydict  # noqa: F401
    except ImportError:
        _install_easydict_fallback()
    import diffusers  # noqa: F401  (imported before the librosa stub: diffusers probes for librosa)
    import transformers  # noqa: F401
    _install_librosa_stub()
    sys.path.insert(0, str(src))
    _stub_pkg("wan", src / "wan")
    _stub_pkg("wan.modules", src / "wan/modules")
    _stub_pkg("wan.modules.s2v", src / "wan/modules/s2v")
    _stub_pkg("wan.utils", src / "wan/utils")
    mods = {n: importlib.import_module(n) for n in (
        "wan.modules.attention", "wan.modules.model", "wan.modules.s2v.model_s2v", "wan.modules.s2v.motioner",
        "wan.modules.s2v.audio_utils", "wan.modules.s2v.audio_encoder", "wan.modules.s2v.s2v_utils",
        "wan.utils.fm_solvers_unipc")}
    for n in ("wan.modules.attention", "wan.modules.model", "wan.modules.s2v.model_s2v",
              "wan.modules.s2v.motioner"):
        mods[n].flash_attention = flash_attention_sdpa
    STUBS.append("flash_attention -> per-sample scaled_dot_product_attention (float32) in attention, model, "
                 "s2v.model_s2v, s2v.motioner")
    return mods


# ------------------------------------------------------------------------------------------------------- helpers
class Recorder:
    def __init__(self):
        self.t = {}

    def put(self, name, x):
        assert name not in self.t, name
        x = x.detach().cpu()
        if x.is_complex():
            x = torch.view_as_real(x)
        if x.dtype.is_floating_point:
            x = x.to(torch.float32)
        elif x.dtype != torch.bool:
            x = x.to(torch.int64)
        self.t[name] = x.contiguous().clone()

    def save(self, path):
        from safetensors.torch import save_file
        save_file(self.t, str(path))
        return {k: list(v.shape) for k, v in self.t.items()}


def randomize_(module, gen, positive_names=()):
    """Deterministic non-trivial values for every parameter (the class inits zero several of them)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("modulation"):
                val = torch.randn(p.shape, generator=gen) * p.shape[-1] ** -0.5
            elif name.endswith("casual_audio_encoder.weights") or any(s in name for s in positive_names):
                val = 0.5 + torch.rand(p.shape, generator=gen)
            elif p.dim() == 1 and ("norm" in name and name.endswith("weight")):
                val = 1.0 + 0.1 * torch.randn(p.shape, generator=gen)
            elif p.dim() == 1:
                val = 0.05 * torch.randn(p.shape, generator=gen)
            elif name.endswith("padding_tokens") or name.endswith("trainable_cond_mask.weight"):
                val = 0.5 * torch.randn(p.shape, generator=gen)
            else:
                fan_in = math.prod(p.shape[1:])
                val = torch.randn(p.shape, generator=gen) / math.sqrt(fan_in)
            p.copy_(val)


def git_head(src: Path):
    try:
        return subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------------- wav2vec2
def make_wav2vec(dirpath: Path, seed: int):
    from transformers import (Wav2Vec2Config, Wav2Vec2CTCTokenizer, Wav2Vec2FeatureExtractor, Wav2Vec2ForCTC,
                              Wav2Vec2Processor)
    dirpath.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = Wav2Vec2ForCTC(Wav2Vec2Config(**W2V_CFG)).eval()
    g = torch.Generator().manual_seed(seed + 1)
    # weight-norm magnitude of the positional conv (parametrizations...original0 / weight_g) must stay positive
    randomize_(model, g, positive_names=("original0", "weight_g"))
    model.save_pretrained(dirpath, safe_serialization=True)
    # The published folder was written by transformers 4.x: the positional conv's weight norm is stored as
    # weight_g / weight_v (transformers 5 writes parametrizations.weight.original0 / original1), and the feature
    # extractor has its own preprocessor_config.json. Store it that way; from_pretrained reads both.
    from safetensors.torch import load_file, save_file
    sd = load_file(str(dirpath / "model.safetensors"))
    ren = {"parametrizations.weight.original0": "weight_g", "parametrizations.weight.original1": "weight_v"}
    sd = {next((k.replace(a, b) for a, b in ren.items() if a in k), k): v for k, v in sd.items()}
    save_file(sd, str(dirpath / "model.safetensors"), metadata={"format": "pt"})
    (dirpath / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(VOCAB)}))
    tok = Wav2Vec2CTCTokenizer(str(dirpath / "vocab.json"), unk_token="<unk>", pad_token="<pad>",
                               word_delimiter_token="|")
    fe = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=SR, padding_value=0.0, do_normalize=True,
                                  return_attention_mask=True)
    tok.save_pretrained(dirpath)
    fe.save_pretrained(dirpath)      # preprocessor_config.json
    (dirpath / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(VOCAB)}))
    # what AudioEncoder loads must equal what was made
    back = Wav2Vec2ForCTC.from_pretrained(str(dirpath)).eval()
    a, b = model.state_dict(), back.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "wav2vec2 round trip"
    Wav2Vec2Processor.from_pretrained(str(dirpath))


def make_audio(path: Path, seed: int, seconds=2.0):
    from scipy.io import wavfile
    n = int(seconds * SR)
    t = np.arange(n, dtype=np.float64) / SR
    env = 0.5 + 0.5 * np.sin(2 * np.pi * 1.3 * t)
    x = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.2 * env * np.sin(2 * np.pi * 523.25 * t + 0.3) \
        + 0.1 * np.sin(2 * np.pi * 1750 * t * (1 + 0.05 * t))
    x += 0.02 * np.random.default_rng(seed).standard_normal(n)
    x = x.astype(np.float32)
    wavfile.write(str(path), SR, x)
    return x


class HiddenStates451:
    """Wraps Wav2Vec2ForCTC so that hidden_states come out as transformers 4.51.3 (Wan2.2's pin) gives them.

    transformers <= 4.x, do_stable_layer_norm: hidden_states = (input of layer 0, ..., input of layer 23,
    encoder.layer_norm(output of layer 23)). transformers 5.x records layer outputs with hooks and does not tie
    the last one, so its hidden_states[-1] is the output of layer 23 without that LayerNorm; the first 24 agree.
    """

    def __init__(self, model):
        self.model = model
        self.device = model.device
        self.raw = None

    def __call__(self, input_values, output_hidden_states=True):
        base = self.model.wav2vec2(input_values, output_hidden_states=True)
        hs = list(base.hidden_states)
        self.raw = tuple(hs)
        assert len(hs) == self.model.config.num_hidden_layers + 1
        ln_last = self.model.wav2vec2.encoder.layer_norm(hs[-1])
        if torch.equal(hs[-1], base.last_hidden_state):
            pass   # a transformers that already ties the last state (4.x behaviour)
        else:
            assert torch.allclose(ln_last, base.last_hidden_state, atol=1e-6)
        hs[-1] = base.last_hidden_state
        self.fixed = tuple(hs)
        return types.SimpleNamespace(hidden_states=tuple(hs), last_hidden_state=base.last_hidden_state)


def record_audio(mods, ckpt: Path, wav: Path, rec: Recorder, meta: dict):
    ae = mods["wan.modules.s2v.audio_encoder"]
    enc = ae.AudioEncoder(device="cpu", model_id=str(ckpt / "wav2vec2-large-xlsr-53-english"))
    wrapper = HiddenStates451(enc.model)
    enc.model = wrapper
    proc = enc.processor
    captured = {}

    class ProcSpy:
        def __call__(self, *a, **k):
            out = proc(*a, **k)
            captured["input_values"] = out.input_values
            return out

    enc.processor = ProcSpy()
    wave, sr = sys.modules["librosa"].load(str(wav), sr=SR)
    with torch.no_grad():
        feat = enc.extract_audio_feat(str(wav), return_all_layers=True)   # [25, L30, C]
    rec.put("wave", torch.from_numpy(wave))
    rec.put("input_values", captured["input_values"])
    rec.put("hidden_states", torch.cat(wrapper.fixed))
    rec.put("hidden_states_tf5", torch.cat(wrapper.raw).detach())
    rec.put("feat", feat)
    t50 = wrapper.raw[0].shape[1]
    meta["audio"] = {"samples": int(wave.shape[0]), "T50": int(t50), "L30": int(feat.shape[1]),
                     "C": int(feat.shape[2]), "layers": int(feat.shape[0])}
    buckets = {}
    for frames in (INFER_FRAMES, 80):
        bucket, n = enc.get_audio_embed_bucket_fps(feat, fps=16, batch_frames=frames, m=0)
        # as WanS2V.encode_audio: [bucket, 25, C] -> [1, 25, C, bucket]
        bucket = bucket.unsqueeze(0).permute(0, 2, 3, 1)
        scale = enc.video_rate / 16
        pad = math.ceil(n * frames / 16 * enc.video_rate) - feat.shape[1]
        idx = ae.get_sample_indices(original_fps=enc.video_rate, total_frames=feat.shape[1] + pad, target_fps=16,
                                    num_sample=n * frames, fixed_start=0)
        rec.put(f"bucket.f{frames}", bucket)
        rec.put(f"bucket_index.f{frames}", torch.from_numpy(np.asarray(idx, dtype=np.int64)))
        rec.put(f"num_repeat.f{frames}", torch.tensor([n]))
        meta["audio"][f"bucket.f{frames}"] = {"num_repeat": int(n), "padd_audio_num": int(pad),
                                              "min_batch_num_formula": f"int({feat.shape[1]}/({frames}*{scale}))+1"}
        buckets[frames] = (bucket, n)
    return buckets


# -------------------------------------------------------------------------------------------------- transformer
def rope_positions(F_, h, w, motion_kept):
    """(f, h, w) rotation positions of every token, by the rule of docs/s2v-reference.md section 4.

    Video tokens: (f, y, x) for f < F_, y < h/2, x < w/2. Reference: (30, y, x). Motion (frame packer, when kept):
    1x: (-1, y, x); 2x: (-3, lin(h/2, h/4)[y], lin(w/2, w/4)[x]); 4x: (-19 + 5*j, lin(h/2, h/8)[y], lin(w/2, w/8)[x])
    for j = 0..3 (i.e. -19, -14, -9, -4), with lin(n, m) = floor(linspace(0, n - 1, m)).
    """
    def lin(n, m):
        return np.linspace(0, n - 1, m).astype(int).tolist()
    hp, wp = h // 2, w // 2
    pos = [(f, y, x) for f in range(F_) for y in range(hp) for x in range(wp)]
    pos += [(30, y, x) for y in range(hp) for x in range(wp)]
    if motion_kept:
        pos += [(-1, y, x) for y in range(hp) for x in range(wp)]
        pos += [(-3, yy, xx) for yy in lin(hp, h // 4) for xx in lin(wp, w // 4)]
        fs = np.linspace(19, 4, 4).astype(int).tolist()   # 19, 14, 9, 4 -> negated
        pos += [(-f, yy, xx) for f in fs for yy in lin(hp, h // 8) for xx in lin(wp, w // 8)]
    return torch.tensor(pos, dtype=torch.int64)


def freqs_from_positions(pos, head_dim, rope_params):
    d = head_dim
    tables = [rope_params(1024, d - 4 * (d // 6)), rope_params(1024, 2 * (d // 6)), rope_params(1024, 2 * (d // 6))]
    parts = []
    for axis in range(3):
        p = pos[:, axis]
        f = tables[axis][p.abs()]
        f = torch.where((p < 0)[:, None], f.conj(), f)
        parts.append(f)
    return torch.cat(parts, dim=1)    # [S, d/2] complex128


def make_transformer(mods, ckpt: Path, seed: int):
    W = mods["wan.modules.s2v.model_s2v"].WanModel_S2V
    model = W(**TINY_CFG).eval()
    randomize_(model, torch.Generator().manual_seed(seed + 2))
    model.save_pretrained(str(ckpt), safe_serialization=True)
    loaded = W.from_pretrained(str(ckpt), torch_dtype=torch.float32).eval().requires_grad_(False)
    a, b = model.state_dict(), loaded.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "from_pretrained round trip"
    return loaded


def run_forward(mods, model, case, inputs, rec: Recorder):
    hooks, store = [], {}

    def clone(v):   # hooks see tensors that later code changes in place (after_transformer_block does)
        if torch.is_tensor(v):
            return v.detach().clone()
        if isinstance(v, (list, tuple)):
            return type(v)(clone(u) for u in v)
        return v

    def fwd(name, fn=lambda m, i, o: o):
        def h(m, i, o):
            store.setdefault(name, []).append(clone(fn(m, i, o)))
        return h

    hooks.append(model.patch_embedding.register_forward_hook(fwd("patch")))
    hooks.append(model.cond_encoder.register_forward_hook(fwd("cond")))
    hooks.append(model.casual_audio_encoder.register_forward_hook(fwd("audio")))
    hooks.append(model.frame_packer.register_forward_hook(fwd("framepack")))
    hooks.append(model.trainable_cond_mask.register_forward_hook(fwd("mask", lambda m, i, o: i[0])))
    hooks.append(model.text_embedding.register_forward_hook(fwd("context")))
    hooks.append(model.time_embedding.register_forward_hook(fwd("time_e")))
    hooks.append(model.time_projection.register_forward_hook(fwd("time_e0")))
    hooks.append(model.head.register_forward_hook(fwd("head")))

    def pre0(m, args, kwargs):
        store["block0_in"] = [args[0].detach().clone()]
        store["block_kwargs"] = [kwargs]
    hooks.append(model.blocks[0].register_forward_pre_hook(pre0, with_kwargs=True))
    for i, blk in enumerate(model.blocks):
        hooks.append(blk.register_forward_hook(fwd(f"block.{i}")))
    inj = model.audio_injector
    inv = {v: k for k, v in inj.injected_block_id.items()}
    for j in range(len(inj.injector)):
        hooks.append(inj.injector_adain_layers[j].register_forward_hook(fwd(f"inject.{inv[j]}.adain")))
        hooks.append(inj.injector[j].register_forward_hook(fwd(f"inject.{inv[j]}.attn")))

    orig_after = model.after_transformer_block

    def after(block_idx, hidden_states):
        out = orig_after(block_idx, hidden_states)
        store.setdefault(f"block.{block_idx}.after_audio", []).append(out.clone())
        return out
    model.after_transformer_block = after
    try:
        with torch.no_grad():
            out = model([inputs["x"]], t=inputs["t"], context=[inputs["context"]], seq_len=None,
                        ref_latents=inputs["ref_latents"], motion_latents=inputs["motion_latents"],
                        cond_states=inputs["cond_states"], audio_input=inputs["audio_input"],
                        motion_frames=MOTION_FRAMES, drop_motion_frames=inputs["drop_motion_frames"])
    finally:
        for h in hooks:
            h.remove()
        del model.after_transformer_block

    for k in ("x", "t", "context", "ref_latents", "motion_latents", "cond_states", "audio_input"):
        rec.put(f"in.{k}", inputs[k])
    glob, loc = store["audio"][0]
    rec.put("audio.global", glob)
    rec.put("audio.local", loc)
    rec.put("audio.merged_emb", model.merged_audio_emb)
    rec.put("audio.emb_global", model.audio_emb_global)
    assert len(store["patch"]) == 2     # noisy latents, then the reference
    rec.put("embed.x_patch", store["patch"][0])
    rec.put("embed.ref_patch", store["patch"][1])
    rec.put("embed.cond", store["cond"][0])
    mot = store["framepack"][0][0][0]
    if inputs["drop_motion_frames"]:
        mot = mot[:, :0]
    rec.put("embed.motion_tokens", mot)
    rec.put("embed.mask_ids", store["mask"][0])
    rec.put("embed.tokens", store["block0_in"][0])
    rec.put("embed.context", store["context"][0])
    rec.put("embed.e", store["time_e"][0][:-1])           # zero_timestep: row 0 = t, row 1 = 0
    kw = store["block_kwargs"][0]
    rec.put("embed.e0", kw["e"][0])
    rec.put("embed.seg_idx", torch.tensor([int(kw["e"][1])]))
    freqs = model.pre_compute_freqs[0, :, 0]                # [S, d/2] complex128, the same for every head
    rec.put("rope.freqs", freqs)
    pos = rope_positions(LAT_F, LAT_H, LAT_W, motion_kept=not inputs["drop_motion_frames"])
    mine = freqs_from_positions(pos, model.dim // model.num_heads, mods["wan.modules.model"].rope_params)
    assert mine.shape == freqs.shape and torch.equal(mine, freqs), "RoPE position rule of the doc"
    assert torch.equal(model.pre_compute_freqs, freqs[None, :, None].expand_as(model.pre_compute_freqs))
    rec.put("rope.pos", pos)
    for i in range(len(model.blocks)):
        rec.put(f"block.{i}.out", store[f"block.{i}"][0])
        rec.put(f"block.{i}.after_audio", store[f"block.{i}.after_audio"][0])
        if f"inject.{i}.adain" in store:
            rec.put(f"inject.{i}.adain", store[f"inject.{i}.adain"][0])
            rec.put(f"inject.{i}.attn", store[f"inject.{i}.attn"][0])
    rec.put("head.out", store["head"][0])
    rec.put("out", out[0])
    return {"tokens": int(store["block0_in"][0].shape[1]), "video_tokens": int(model.original_seq_len),
            "motion_tokens": int(mot.shape[1])}


def make_inputs(seed, audio_bucket):
    g = torch.Generator().manual_seed(seed + 3)
    C = TINY_CFG["in_dim"]
    base = {
        "x": torch.randn(C, LAT_F, LAT_H, LAT_W, generator=g),
        "t": torch.tensor([937], dtype=torch.int64),
        "context": torch.randn(7, 4096, generator=g),
        "ref_latents": torch.randn(1, C, 1, LAT_H, LAT_W, generator=g),
        "motion_latents": torch.randn(1, C, MOTION_FRAMES[1], LAT_H, LAT_W, generator=g),
        "cond_states": torch.randn(1, TINY_CFG["cond_dim"], LAT_F, LAT_H, LAT_W, generator=g),
    }
    context_null = torch.randn(5, 4096, generator=g)
    bucket, n = audio_bucket
    assert n >= 2, "the synthetic audio must give at least two clips"

    def clip(r):
        return bucket[..., r * INFER_FRAMES:(r + 1) * INFER_FRAMES].clone()
    cases = {
        "clip1": dict(base, audio_input=clip(1), drop_motion_frames=False),
        "clip0": dict(base, audio_input=clip(0), drop_motion_frames=True,
                      cond_states=torch.zeros_like(base["cond_states"])),
        "clip1_uncond": dict(base, audio_input=0.0 * clip(1), context=context_null, drop_motion_frames=False),
    }
    return cases


# ----------------------------------------------------------------------------------------------- scheduler, size
def record_scheduler(mods, seed, rec: Recorder):
    S = mods["wan.utils.fm_solvers_unipc"].FlowUniPCMultistepScheduler
    for steps in (40, 4):
        s = S(num_train_timesteps=1000, shift=1, use_dynamic_shifting=False)
        s.set_timesteps(steps, device="cpu", shift=3)
        rec.put(f"sigmas.n{steps}", s.sigmas)
        rec.put(f"timesteps.n{steps}", s.timesteps)
    s = S(num_train_timesteps=1000, shift=1, use_dynamic_shifting=False)
    s.set_timesteps(4, device="cpu", shift=3)
    g = torch.Generator().manual_seed(seed + 4)
    x = torch.randn(1, 16, 2, 4, 4, generator=g)
    rec.put("unipc4.sample0", x)
    for k, t in enumerate(s.timesteps):
        v = torch.randn(x.shape, generator=g)
        rec.put(f"unipc4.model_out.{k}", v)
        x = s.step(v, t, x, return_dict=False)[0]
        rec.put(f"unipc4.after.{k}", x)


SIZES = [(1024, 1024), (720, 1280), (1280, 720), (1080, 1920), (512, 512), (480, 832), (600, 800), (100, 100),
         (3000, 4000), (768, 512), (333, 777)]
AREAS = [1280 * 720, 832 * 480, 1024 * 704]


def record_sizes(src: Path, rec: Recorder, meta):
    """WanS2V.get_size_less_than_area, compiled from wan/speech2video.py's source alone (importing the module
    would pull in T5, whose class body calls torch.cuda.current_device(), the VAE, decord, torchvision...)."""
    import ast
    path = src / "wan/speech2video.py"
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "WanS2V")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "get_size_less_than_area")
    ns = {"math": math}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), ns)
    rows = []
    for area in AREAS:
        for h, w in SIZES:
            H, W = ns["get_size_less_than_area"](None, h, w, target_area=area)
            rows.append([h, w, area, H, W])
    rec.put("table", torch.tensor(rows, dtype=torch.int64))
    meta["size_table_columns"] = ["height", "width", "max_area", "HEIGHT", "WIDTH"]
    meta["size_table"] = rows



# ------------------------------------------------------------------------------------------ the doc's rules, again
def check_doc_rules(out: Path, meta: dict, tol=1e-5):
    """Recomputes the recordings from ckpt/ with plain torch, by the rules written in docs/s2v-reference.md,
    without any of Wan2.2's code: the audio bucketing from hidden_states, and every forward case from its
    inputs. Returns the max relative difference per checked tensor (max |a - b| / max |b|)."""
    import torch.nn.functional as F
    from safetensors.torch import load_file
    W = load_file(str(out / "ckpt/diffusion_pytorch_model.safetensors"))
    cfg = json.loads((out / "ckpt/config.json").read_text())
    D, NH, NL = cfg["dim"], cfg["num_heads"], cfg["num_layers"]
    HD = D // NH
    A = load_file(str(out / "audio.safetensors"))
    res = {}

    def rel(name, a, b):
        res[name] = float((a - b).abs().max() / b.abs().max().clamp_min(1e-12))

    x = A["wave"].double()
    rel("input_values", ((x - x.mean()) / torch.sqrt(x.var(unbiased=False) + 1e-7)).float(), A["input_values"][0])
    hs = A["hidden_states"]
    T50 = hs.shape[1]
    L30 = int(T50 / 50.0 * 30.0)
    src = torch.arange(L30, dtype=torch.float64) * (T50 - 1) / (L30 - 1)      # align_corners=True
    i0 = src.floor().long().clamp(max=T50 - 2)
    fr = (src - i0).float()[None, :, None]
    feat = hs[:, i0] * (1 - fr) + hs[:, i0 + 1] * fr
    rel("feat", feat, A["feat"])
    for nf in (INFER_FRAMES, 80):
        n = int(L30 / (nf * 30 / 16)) + 1
        total = math.ceil(n * nf / 16 * 30)
        idx = np.clip(np.round(np.arange(n * nf) / 16 * 30), 0, total - 1).astype(int)   # half to even
        assert (idx == A[f"bucket_index.f{nf}"].numpy()).all() and n == int(A[f"num_repeat.f{nf}"])
        b = torch.zeros(hs.shape[0], hs.shape[2], n * nf)
        for k, i in enumerate(idx):
            if i < L30:
                b[:, :, k] = feat[:, i]
        rel(f"bucket.f{nf}", b, A[f"bucket.f{nf}"][0])

    def lin(v, p):
        return F.linear(v, W[p + ".weight"], W.get(p + ".bias"))

    def ln(v, eps=1e-6, p=None):
        return F.layer_norm(v, v.shape[-1:], W[p + ".weight"] if p else None, W[p + ".bias"] if p else None, eps)

    def rms(v, p, eps=1e-6):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps) * W[p + ".weight"]

    def cconv(v, p, stride):     # CausalConv1d: replicate-pad 2 on the left, then the conv
        return F.conv1d(F.pad(v, (2, 0), mode="replicate"), W[p + ".conv.weight"], W[p + ".conv.bias"],
                        stride=stride)

    def table(n, d):
        ang = torch.outer(torch.arange(n, dtype=torch.float64),
                          1.0 / torch.pow(10000, torch.arange(0, d, 2, dtype=torch.float64) / d))
        return torch.polar(torch.ones_like(ang), ang)
    tabs = [table(1024, HD - 4 * (HD // 6)), table(1024, 2 * (HD // 6)), table(1024, 2 * (HD // 6))]

    def rot(v, fr_):      # [S, NH, HD] with per-token complex [S, HD/2]
        c = torch.view_as_complex(v.double().reshape(v.shape[0], NH, -1, 2))
        return torch.view_as_real(c * fr_[:, None]).flatten(2).float()

    def attn(q, k, v):
        return F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)) \
            .transpose(0, 1).reshape(q.shape[0], -1)

    def pe(z, p):
        return F.conv3d(z, W[p + ".weight"], W[p + ".bias"], stride=W[p + ".weight"].shape[2:]) \
            .flatten(2).transpose(1, 2)[0]

    for case, info in meta["cases"].items():
        I = load_file(str(out / info["file"]))
        drop = info["drop_motion_frames"]
        a = I["in.audio_input"]
        a = torch.cat([a[..., :1].repeat(1, 1, 1, MOTION_FRAMES[0]), a], -1)            # [1, 25, C, 73 + 4F]
        w = F.silu(W["casual_audio_encoder.weights"])
        a = ((a * w) / w.sum(1, keepdim=True)).sum(1)                                     # [1, C, T]
        E = "casual_audio_encoder.encoder."
        nt = cfg["num_audio_token"]
        h = cconv(a, E + "conv1_local", 1).reshape(nt, D // 4, -1)                        # channel = n*(D/4) + c
        h = F.silu(ln(h.transpose(1, 2))).transpose(1, 2)
        h = F.silu(ln(cconv(h, E + "conv2", 2).transpose(1, 2))).transpose(1, 2)
        h = F.silu(ln(cconv(h, E + "conv3", 2).transpose(1, 2)))                          # [4, T'', D]
        loc = torch.cat([h.transpose(0, 1)[None], W[E + "padding_tokens"].expand(1, h.shape[1], 1, D)], 2)
        g = F.silu(ln(cconv(a, E + "conv1_global", 1).transpose(1, 2))).transpose(1, 2)
        g = F.silu(ln(cconv(g, E + "conv2", 2).transpose(1, 2))).transpose(1, 2)
        g = lin(F.silu(ln(cconv(g, E + "conv3", 2).transpose(1, 2))), E + "final_linear")[:, :, None]
        rel(f"{case}.audio.local", loc, I["audio.local"])
        rel(f"{case}.audio.global", g, I["audio.global"])
        loc, g = loc[0, MOTION_FRAMES[1]:], g[0, MOTION_FRAMES[1]:, 0]                   # [F, 5, D], [F, D]
        x0 = I["in.x"]
        Fn, Hh, Ww = x0.shape[1:]
        hp, wp = Hh // 2, Ww // 2
        toks = [pe(x0[None], "patch_embedding") + pe(I["in.cond_states"], "cond_encoder"),
                pe(I["in.ref_latents"], "patch_embedding")]
        if not drop:
            m = I["in.motion_latents"][0][:, -19:]           # 19 = 16 + 2 + 1, oldest first (fewer: zero-padded)
            toks += [pe(m[None, :, 18:19], "frame_packer.proj"), pe(m[None, :, 16:18], "frame_packer.proj_2x"),
                     pe(m[None, :, :16], "frame_packer.proj_4x")]
        Lv = toks[0].shape[0]
        mask = torch.tensor([0] * Lv + [1] * toks[1].shape[0] + [2] * sum(t.shape[0] for t in toks[2:]))
        X = torch.cat(toks) + W["trainable_cond_mask.weight"][mask]
        rel(f"{case}.tokens", X, I["embed.tokens"][0])
        pos = rope_positions(Fn, Hh, Ww, motion_kept=not drop)
        frq = torch.cat([torch.where((pos[:, i] < 0)[:, None], tabs[i][pos[:, i].abs()].conj(),
                                     tabs[i][pos[:, i].abs()]) for i in range(3)], 1)
        tt = torch.cat([I["in.t"], torch.zeros(1, dtype=I["in.t"].dtype)]).double()     # [t, 0]
        half = cfg["freq_dim"] // 2
        sn = torch.outer(tt, torch.pow(10000, -torch.arange(half, dtype=torch.float64) / half))
        e = lin(F.silu(lin(torch.cat([torch.cos(sn), torch.sin(sn)], 1).float(), "time_embedding.0")),
                "time_embedding.2")                                                       # [2, D]
        e0 = lin(F.silu(e), "time_projection.1").reshape(2, 6, D)
        seg = (torch.arange(X.shape[0]) >= Lv).long()                                     # 0 video, 1 ref+motion
        ctx = I["in.context"]
        ctx = torch.cat([ctx, ctx.new_zeros(cfg["text_len"] - ctx.shape[0], ctx.shape[1])])
        ctx = lin(F.gelu(lin(ctx, "text_embedding.0"), approximate="tanh"), "text_embedding.2")
        inj = {b_: j for j, b_ in enumerate(cfg["audio_inject_layers"])}
        for bi in range(NL):
            B = f"blocks.{bi}."
            sh, sc, ga, sh2, sc2, ga2 = (W[B + "modulation"][0][None] + e0)[seg].unbind(1)
            y = ln(X) * (1 + sc) + sh
            q = rms(lin(y, B + "self_attn.q"), B + "self_attn.norm_q").view(-1, NH, HD)
            k = rms(lin(y, B + "self_attn.k"), B + "self_attn.norm_k").view(-1, NH, HD)
            X = X + lin(attn(rot(q, frq), rot(k, frq), lin(y, B + "self_attn.v").view(-1, NH, HD)),
                        B + "self_attn.o") * ga
            y = ln(X, p=B + "norm3")
            q = rms(lin(y, B + "cross_attn.q"), B + "cross_attn.norm_q").view(-1, NH, HD)
            k = rms(lin(ctx, B + "cross_attn.k"), B + "cross_attn.norm_k").view(-1, NH, HD)
            X = X + lin(attn(q, k, lin(ctx, B + "cross_attn.v").view(-1, NH, HD)), B + "cross_attn.o")
            y = ln(X) * (1 + sc2) + sh2
            X = X + lin(F.gelu(lin(y, B + "ffn.0"), approximate="tanh"), B + "ffn.2") * ga2
            rel(f"{case}.block.{bi}.out", X, I[f"block.{bi}.out"][0])
            if bi in inj:
                P = f"audio_injector.injector.{inj[bi]}."
                ss = lin(F.silu(g), f"audio_injector.injector_adain_layers.{inj[bi]}.linear")   # [F, 2D]
                hv = X[:Lv].reshape(Fn, hp * wp, D)
                ad = F.layer_norm(hv, (D,), eps=1e-5) * (1 + ss[:, None, D:]) + ss[:, None, :D]  # shift first
                res_ = [lin(attn(rms(lin(ad[f], P + "q"), P + "norm_q").view(-1, NH, HD),
                                 rms(lin(loc[f], P + "k"), P + "norm_k").view(-1, NH, HD),
                                 lin(loc[f], P + "v").view(-1, NH, HD)), P + "o") for f in range(Fn)]
                X = torch.cat([X[:Lv] + torch.cat(res_), X[Lv:]])
            rel(f"{case}.block.{bi}.after_audio", X, I[f"block.{bi}.after_audio"][0])
        hm = W["head.modulation"][0] + e[:1]                                               # [shift, scale]
        o = lin(ln(X[:Lv]) * (1 + hm[1]) + hm[0], "head.head")                             # [Lv, 1*2*2*16]
        o = o.view(Fn, hp, wp, 1, 2, 2, 16).permute(6, 0, 3, 1, 4, 2, 5).reshape(16, Fn, Hh, Ww)
        rel(f"{case}.out", o, I["out"])
    worst = max(res.values())
    assert worst <= tol, {k: v for k, v in res.items() if v > tol}
    return res

# -------------------------------------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wan-src", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-check", action="store_true",
                    help="skip the re-computation of the recordings by the doc's rules (plain torch)")
    args = ap.parse_args()
    src, out = args.wan_src.resolve(), args.out
    out.mkdir(parents=True, exist_ok=True)
    head = git_head(src)
    print(f"Wan2.2 source: {src} (HEAD {head or 'unknown'}; written against {PINNED})")
    mods = import_wan(src)
    import diffusers
    import transformers
    meta = {"wan_src": str(src), "wan_head": head, "pinned": PINNED, "seed": args.seed,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "diffusers": diffusers.__version__, "tiny_config": TINY_CFG, "wav2vec2_config": W2V_CFG,
            "motion_frames": MOTION_FRAMES, "latent_fhw": [LAT_F, LAT_H, LAT_W], "infer_frames": INFER_FRAMES}

    ckpt = out / "ckpt"
    make_wav2vec(ckpt / "wav2vec2-large-xlsr-53-english", args.seed)
    wav = out / "audio.wav"
    make_audio(wav, args.seed)
    rec = Recorder()
    buckets = record_audio(mods, ckpt, wav, rec, meta)
    meta["audio.safetensors"] = rec.save(out / "audio.safetensors")

    model = make_transformer(mods, ckpt, args.seed)
    meta["transformer_keys"] = {k: list(v.shape) for k, v in model.state_dict().items()}
    meta["cases"] = {}
    for case, inputs in make_inputs(args.seed, buckets[INFER_FRAMES]).items():
        rec = Recorder()
        info = run_forward(mods, model, case, inputs, rec)
        info["drop_motion_frames"] = inputs["drop_motion_frames"]
        info["file"] = f"forward_{case}.safetensors"
        info["keys"] = rec.save(out / info["file"])
        meta["cases"][case] = info
        print(f"forward {case}: {info['tokens']} tokens ({info['video_tokens']} video, "
              f"{info['motion_tokens']} motion), out {info['keys']['out']}")

    rec = Recorder()
    record_scheduler(mods, args.seed, rec)
    meta["scheduler.safetensors"] = rec.save(out / "scheduler.safetensors")
    rec = Recorder()
    record_sizes(src, rec, meta)
    meta["size.safetensors"] = rec.save(out / "size.safetensors")

    meta["stubs"] = STUBS
    if not args.no_check:
        meta["doc_rule_check"] = check_doc_rules(out, meta)
        print(f"doc rules reproduce the recordings: max relative difference "
              f"{max(meta['doc_rule_check'].values()):.2e}")
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
