#!/usr/bin/env python3
"""Prove foreign_layouts.py's output right, independently of it and of our C++ code.

    check_foreign_layouts.py SRC_PIPELINE_DIR CONVERTED_DIR

CONVERTED_DIR is one output of foreign_layouts.py (original or comfy layout; detected from
its files). One line per check: "PASS|FAIL|SKIP|N/A  <what>  <detail>"; exit 1 on any FAIL.

Checks (this file imports nothing from foreign_layouts.py):
- transformer files (each ComfyUI file; each original expert, whose shards are merged and
  re-saved as one temporary safetensors file) are read back with diffusers' own
  WanTransformer3DModel.from_single_file(config=SRC, subfolder=transformer|transformer_2,
  torch_dtype=float32) offline; the result must equal the source weights exactly (cast to
  the file's dtype first for fp16/bf16). diffusers ignores `scale_weight` and would load raw
  fp8 values, so fp8_scaled files are dequantised HERE (fp8.float() * scale_weight, or
  weight_scale for the comfy_quant style) into a temporary file first; the dequantised
  weights must also lie within fp8 e4m3 rounding of the source (|err| <= scale * 2^-4 * 448
  bound: amax * 2^-4), and the set of quantised tensors must be exactly the block Linears.
- VAE: AutoencoderKLWan.from_single_file likewise, where diffusers' converter applies (it
  only knows the Wan2.1 layout and hard-codes the decoder indices of num_res_blocks=2, so
  for other VAEs the line says N/A with the reason); the Wan-source check below covers it.
- text encoder (ComfyUI file): strict load_state_dict into transformers' UMT5EncoderModel
  built from SRC/text_encoder/config.json (encoder.embed_tokens.weight is tied to
  shared.weight and is filled from it), weights equal to the source's; spiece_model bytes
  equal tokenizer/spiece.model when present.
- CLIP files in Wan's names (the original layout's models_clip_*.pth) and open_clip's: their vision tower run
  by a plain-torch reading of Wan's VisionTransformer / open_clip's (torch's MultiheadAttention) equals
  transformers' CLIPVisionModel of the source (hidden_states[-2]) within 1e-5 of scale; with WAN22_SRC, Wan's
  own VisionTransformer (wan/modules/animate/clip.py) strict-loads visual.* and agrees too.
- with WAN22_SRC pointing at a Wan-Video/Wan2.2 checkout: the original-layout files
  load_state_dict(strict=True) into wan.modules.model.WanModel (built from config.json),
  wan.modules.t5.T5Encoder, wan.modules.vae2_1/vae2_2 WanVAE_; ComfyUI files (prefix
  stripped, dequantised) too. Then forward equivalence: Wan's T5Encoder vs transformers'
  UMT5EncoderModel on random ids; Wan's VAE encode/decode vs diffusers' AutoencoderKLWan.
  flash_attn / easydict etc. are stubbed only if missing. Without WAN22_SRC those lines
  print "SKIP ... WAN22_SRC not set".
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import types
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

RESULTS = []


def line(status, what, detail=""):
    RESULTS.append(status)
    print(f"{status:4s}  {what}  {detail}".rstrip(), flush=True)


def load_dir(d):
    d = Path(d)
    sd = {}
    for f in sorted(d.glob("*.safetensors")):
        sd.update(load_file(str(f)))
    return sd


def compare(got: dict, want: dict, exact=True, atol=0.0):
    ks, kw = set(got), set(want)
    if ks != kw:
        return False, f"key sets differ: missing {sorted(kw - ks)[:5]} extra {sorted(ks - kw)[:5]}"
    worst, wk = 0.0, None
    for k in kw:
        a, b = got[k], want[k]
        if a.shape != b.shape:
            return False, f"{k}: shape {tuple(a.shape)} != {tuple(b.shape)}"
        if exact:
            if not torch.equal(a.float(), b.float()):
                return False, f"{k}: values differ (max {(a.float() - b.float()).abs().max().item():.3g})"
        else:
            e = (a.float() - b.float()).abs().max().item() if a.numel() else 0.0
            if e > worst:
                worst, wk = e, k
    if not exact and worst > atol:
        return False, f"max abs err {worst:.3g} at {wk} > {atol:.3g}"
    return True, f"{len(kw)} tensors" + ("" if exact else f", max abs err {worst:.3g}")


# ---------------------------------------------------------------- fp8 dequantisation

def dequantize(sd: dict):
    """Return (dequantised sd without scale/marker keys, {weight key: scale}, style)."""
    out, scales, style = {}, {}, None
    for k, v in sd.items():
        if k.endswith(("scale_weight", "scale_input", ".weight_scale", ".input_scale", ".comfy_quant")) \
                or k.split(".")[-1] == "scaled_fp8":
            continue
        if v.dtype == torch.float8_e4m3fn:
            mod = k[: -len(".weight")]
            if mod + ".scale_weight" in sd:
                s, style = sd[mod + ".scale_weight"], "scale_weight"
            elif mod + ".weight_scale" in sd:
                s, style = sd[mod + ".weight_scale"], "comfy_quant"
                cq = sd.get(mod + ".comfy_quant")
                if cq is None or json.loads(bytes(cq.tolist())).get("format") != "float8_e4m3fn":
                    raise ValueError(f"{k}: comfy_quant missing or not float8_e4m3fn")
            else:
                raise ValueError(f"{k}: fp8 tensor without a scale")
            if s.dim() != 0 or s.dtype != torch.float32:
                raise ValueError(f"{k}: scale not a 0-dim float32")
            out[k] = v.float() * s
            scales[k] = s.item()
        else:
            out[k] = v
    return out, scales, style


def fp8_bound_ok(deq: dict, src: dict, scales: dict, prefix=""):
    worst = 0.0
    for k, s in scales.items():
        w = src[k[len(prefix):]].float()
        err = (deq[k] - w).abs()
        # e4m3: 3 mantissa bits -> relative half-ulp 2^-4; subnormal step 2^-9 * scale
        bound = w.abs() * 2.0 ** -4 + s * 2.0 ** -9 + 1e-12
        if bool((err > bound).any()):
            return False, f"{k}: dequantised value outside fp8 rounding of source"
        worst = max(worst, (err / (w.abs().max() + 1e-30)).max().item())
    return True, f"{len(scales)} fp8 tensors within e4m3 rounding (max err/amax {worst:.3g})"


# ---------------------------------------------------------------- Wan source import

WAN = None


def wan_modules():
    global WAN
    if WAN is not None:
        return WAN or None
    root = os.environ.get("WAN22_SRC")
    if not root or not Path(root, "wan", "modules", "model.py").exists():
        WAN = False
        return None
    import importlib
    for name in ("flash_attn", "flash_attn_interface", "easydict", "ftfy", "regex"):
        try:
            importlib.import_module(name)
        except Exception:
            if name in ("flash_attn", "flash_attn_interface"):
                continue  # attention.py handles ModuleNotFoundError itself
            stub = types.ModuleType(name)
            if name == "easydict":
                stub.EasyDict = dict
            sys.modules[name] = stub
    # package stubs so wan/__init__.py (configs, pipelines, distributed) is not executed
    for pkg, sub in (("wan", "wan"), ("wan.modules", "wan/modules")):
        m = types.ModuleType(pkg)
        m.__path__ = [str(Path(root, sub))]
        sys.modules[pkg] = m
    # t5.py evaluates torch.cuda.current_device() as a default argument at import time;
    # on a machine without CUDA, answer 0 during the import only.
    real_cd = torch.cuda.current_device
    if not torch.cuda.is_available():
        torch.cuda.current_device = lambda: 0
    try:
        WAN = types.SimpleNamespace(
            model=importlib.import_module("wan.modules.model"),
            t5=importlib.import_module("wan.modules.t5"),
            vae21=importlib.import_module("wan.modules.vae2_1"),
            vae22=importlib.import_module("wan.modules.vae2_2"),
        )
    finally:
        torch.cuda.current_device = real_cd
    return WAN


def strict_load(module, sd, what):
    try:
        module.load_state_dict({k: v.float() for k, v in sd.items()}, strict=True)
        line("PASS", what, f"strict load_state_dict, {len(sd)} tensors")
        return True
    except Exception as e:  # noqa: BLE001
        line("FAIL", what, str(e).replace("\n", " ")[:400])
        return False


def wan_model_from_config(cfg: dict):
    W = wan_modules()
    kw = {k: v for k, v in cfg.items() if not k.startswith("_")}
    for k in ("patch_size", "window_size"):
        if k in kw:
            kw[k] = tuple(kw[k])
    return W.model.WanModel(**kw)


def wan_t5(tcfg):
    W = wan_modules()
    return W.t5.T5Encoder(vocab=tcfg["vocab_size"], dim=tcfg["d_model"],
                          dim_attn=tcfg["num_heads"] * tcfg["d_kv"], dim_ffn=tcfg["d_ff"],
                          num_heads=tcfg["num_heads"], num_layers=tcfg["num_layers"],
                          num_buckets=tcfg["relative_attention_num_buckets"],
                          shared_pos=False, dropout=0.0).eval()


def wan_vae(vcfg):
    W = wan_modules()
    common = dict(dim=vcfg["base_dim"], z_dim=vcfg["z_dim"], dim_mult=list(vcfg["dim_mult"]),
                  num_res_blocks=vcfg["num_res_blocks"], attn_scales=list(vcfg["attn_scales"]),
                  temperal_downsample=list(vcfg["temperal_downsample"]), dropout=0.0)
    if vcfg["z_dim"] == 48 or vcfg.get("is_residual"):
        return W.vae22.WanVAE_(dec_dim=vcfg.get("decoder_base_dim") or vcfg["base_dim"], **common).eval()
    return W.vae21.WanVAE_(**common).eval()


# ---------------------------------------------------------------- component checks

# ---------------------------------------------------------------- Wan2.2-Animate: diffusers' own converter

def diffusers_converter():
    """diffusers' scripts/convert_wan_to_diffusers.py, vendored unmodified (tools/reference/vendor/README.md)."""
    import importlib.util
    path = Path(__file__).resolve().parent / "vendor" / "convert_wan_to_diffusers.py"
    spec = importlib.util.spec_from_file_location("convert_wan_to_diffusers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def animate_final_conv_idx(sd_wan: dict) -> int:
    """The index of the motion encoder's last convolution in Wan's convs list: 1 + its ResBlocks (8 in
    Wan2.2-Animate-14B, the converter's default final_conv_idx)."""
    blocks = {int(m.group(1)) for k in sd_wan
              for m in [re.match(r"^motion_encoder\.enc\.net_app\.convs\.(\d+)\.conv1\.", k)] if m}
    return max(blocks) + 1


def convert_animate(sd_wan: dict, diffusers_config: dict):
    """Wan-named Animate weights through diffusers' convert_transformer("Wan2.2-Animate-14B"), run as it is:
    load_sharded_safetensors of a folder, ANIMATE_TRANSFORMER_KEYS_RENAME_DICT, the special-key handlers,
    WanAnimateTransformer3DModel.from_config + load_state_dict(strict=True). Only its inputs are supplied here:
    snapshot_download answers the folder written here, and get_transformer_config gives the model's config (the
    tiny one) and, for a motion encoder with fewer ResBlocks than 7, the motion handler's own final_conv_idx."""
    import functools
    C = diffusers_converter()
    special = dict(C.ANIMATE_TRANSFORMER_SPECIAL_KEYS_REMAP)
    special["motion_encoder"] = functools.partial(C.convert_animate_motion_encoder_weights,
                                                  final_conv_idx=animate_final_conv_idx(sd_wan))
    with tempfile.TemporaryDirectory() as td:
        save_file({k: v.contiguous() for k, v in sd_wan.items()}, str(Path(td) / "diffusion_pytorch_model.safetensors"))
        C.snapshot_download = lambda model_id, repo_type=None: td
        C.get_transformer_config = lambda model_type: (
            {"model_id": "local", "diffusers_config": diffusers_config}, C.ANIMATE_TRANSFORMER_KEYS_RENAME_DICT, special)
        model = C.convert_transformer("Wan2.2-Animate-14B")
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def animate_scales_by_diffusers_name(scales: dict, sd_wan: dict) -> dict:
    """{diffusers name: the float8 scale its values came from}: the scales, as [rows, 1] tensors under the Wan names
    of the weights they scale, through the converter's own renames and handlers (a split linear1_kv's halves keep
    the fused tensor's scale)."""
    C = diffusers_converter()
    import functools
    handlers = dict(C.ANIMATE_TRANSFORMER_SPECIAL_KEYS_REMAP)
    handlers["motion_encoder"] = functools.partial(C.convert_animate_motion_encoder_weights,
                                                   final_conv_idx=animate_final_conv_idx(sd_wan))
    d = converter_renames(C, {k: torch.full((sd_wan[k].shape[0], 1), s) for k, s in scales.items()}, handlers)
    return {k: v[0, 0].item() for k, v in d.items()}


def converter_renames(C, d: dict, handlers: dict) -> dict:
    """convert_transformer's renaming and handler loops (scripts/convert_wan_to_diffusers.py), as written there, on
    `d` in place, without the model load: for tensors that cannot be written to a file (meta, scale markers)."""
    for key in list(d.keys()):
        new_key = key[:]
        for replace_key, rename_key in C.ANIMATE_TRANSFORMER_KEYS_RENAME_DICT.items():
            new_key = new_key.replace(replace_key, rename_key)
        C.update_state_dict_(d, key, new_key)
    for key in list(d.keys()):
        for special_key, handler_fn_inplace in handlers.items():
            if special_key not in key:
                continue
            handler_fn_inplace(key, d)
    return d


ANIMATE_FP8_RE = re.compile(
    r"^(?:blocks\.\d+\.(self_attn\.[qkvo]|cross_attn\.(?:[qkvo]|k_img|v_img)|ffn\.[02])"
    r"|face_adapter\.fuser_blocks\.\d+\.(?:linear1_kv|linear1_q|linear2))\.weight$")


def check_animate_transformer(src: Path, sub: str, sd: dict, what: str, prefix: str, cfg_json=None):
    """A Wan2.2-Animate transformer file in Wan's names (original shards merged, or a ComfyUI file): converted back by
    diffusers' own converter (convert_animate), it must give the source's tensors exactly (cast to the file's
    dtype; a float8 file's block and face-adapter Linears are dequantized here first, and their values must lie
    within e4m3 rounding of the source)."""
    ref = load_file(str(src / sub / "diffusion_pytorch_model.safetensors"))
    src_cfg = json.loads((src / sub / "config.json").read_text())
    config = {k: v for k, v in src_cfg.items() if not k.startswith("_")}
    bare = {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}
    if len(bare) != len(sd):
        line("FAIL", what, f"{len(sd) - len(bare)} tensors without the prefix {prefix!r}")
    fp8 = any(v.dtype == torch.float8_e4m3fn for v in bare.values())
    scales = {}
    if fp8:
        marker = bare.get("scaled_fp8")
        deq, scales, style = dequantize(bare)
        if style == "scale_weight":
            ok = marker is not None and marker.dtype == torch.float8_e4m3fn
            line("PASS" if ok else "FAIL", f"{what}: scaled_fp8 marker", f"key {prefix}scaled_fp8")
        expect_q = {k for k in bare if ANIMATE_FP8_RE.match(k)}
        line("PASS" if set(scales) == expect_q else "FAIL", f"{what}: fp8 tensor set",
             f"{len(scales)} quantised = the block and face-adapter Linear weights" if set(scales) == expect_q
             else f"diff {sorted(set(scales) ^ expect_q)[:6]}")
        bare = deq
    dts = {v.dtype for k, v in bare.items() if v.is_floating_point() and k not in scales}
    if len(dts) != 1:
        line("FAIL", what, f"mixed dtypes {dts}")
        return
    (dt,) = dts
    try:
        got = convert_animate(bare, config)
    except Exception as e:  # noqa: BLE001
        line("FAIL", f"{what}: diffusers' convert_wan_to_diffusers (Animate)", str(e).replace("\n", " ")[:400])
        return
    want = {k: v.to(dt).float() for k, v in ref.items()}
    if fp8:
        by_name = animate_scales_by_diffusers_name(scales, bare)
        worst, bad = 0.0, []
        for k, s in by_name.items():
            w, g = ref[k].float(), got[k].float()
            if bool(((g - w).abs() > w.abs() * 2.0 ** -4 + s * 2.0 ** -9 + 1e-12).any()):
                bad.append(k)
            worst = max(worst, ((g - w).abs().max() / (w.abs().max() + 1e-30)).item())
            want[k] = g  # the dequantized values; their closeness to the source is checked here
        line("FAIL" if bad else "PASS", f"{what}: fp8 rounding",
             f"outside e4m3 rounding: {bad[:4]}" if bad else f"{len(by_name)} tensors (max err/amax {worst:.3g})")
    ok, det = compare({k: v.float() for k, v in got.items()}, want)
    line("PASS" if ok else "FAIL",
         f"{what}: diffusers' scripts/convert_wan_to_diffusers.py (Animate) == source "
         f"({'fp8_scaled, rest ' if fp8 else ''}{dt})", det)
    if cfg_json is not None:
        check_animate_wan_config(src, sub, cfg_json, what)


# WanAnimateModel.__init__'s arguments (wan/modules/animate/model_animate.py), which its config.json holds.
ANIMATE_CONFIG_KEYS = {"patch_size", "text_len", "in_dim", "dim", "ffn_dim", "freq_dim", "text_dim", "out_dim",
                       "num_heads", "num_layers", "window_size", "qk_norm", "cross_attn_norm", "eps",
                       "motion_encoder_dim", "use_context_parallel", "use_img_emb"}


def check_animate_wan_config(src, sub, cfg, what):
    c = json.loads((src / sub / "config.json").read_text())
    exp = {"_class_name": "WanAnimateModel", "dim": c["num_attention_heads"] * c["attention_head_dim"],
           "eps": c["eps"], "ffn_dim": c["ffn_dim"], "freq_dim": c["freq_dim"], "in_dim": c["in_channels"],
           "num_heads": c["num_attention_heads"], "num_layers": c["num_layers"], "out_dim": c["out_channels"],
           "text_dim": c["text_dim"], "text_len": 512, "motion_encoder_dim": c["motion_encoder_dim"],
           "patch_size": list(c["patch_size"])}
    bad = [k for k, v in exp.items() if cfg.get(k) != v]
    keys = {k for k in cfg if not k.startswith("_")}
    ok = not bad and keys == ANIMATE_CONFIG_KEYS
    line("PASS" if ok else "FAIL", f"{what}: config.json (WanAnimateModel)",
         "WanAnimateModel's __init__ arguments" if ok else f"bad {bad}, keys {sorted(keys ^ ANIMATE_CONFIG_KEYS)}")


def check_transformer(src: Path, sub: str, sd: dict, what: str, prefix: str, cfg_json=None):
    import diffusers
    ref = load_file(str(src / sub / "diffusion_pytorch_model.safetensors"))
    # WanVACETransformer3DModel for a VACE source (diffusers' converter maps its vace_blocks), else WanTransformer3DModel.
    src_cfg = json.loads((src / sub / "config.json").read_text())
    if src_cfg["_class_name"] == "WanAnimateTransformer3DModel":
        # diffusers' single-file reader knows only Wan2.2-Animate-14B's 7 motion-encoder ResBlocks and keeps the
        # Blur buffers; its converter script is the reference.
        return check_animate_transformer(src, sub, sd, what, prefix, cfg_json)
    vace = src_cfg["_class_name"] == "WanVACETransformer3DModel"
    model_cls = getattr(diffusers, src_cfg["_class_name"])
    fp8 = any(v.dtype == torch.float8_e4m3fn for v in sd.values())
    if fp8:
        marker = sd.get(prefix + "scaled_fp8")
        deq, scales, style = dequantize(sd)
        if style == "scale_weight":
            ok = marker is not None and marker.dtype == torch.float8_e4m3fn
            line("PASS" if ok else "FAIL", f"{what}: scaled_fp8 marker",
                 f"key {prefix}scaled_fp8 dtype {None if marker is None else marker.dtype} "
                 f"shape {None if marker is None else tuple(marker.shape)}")
        qset = {k[len(prefix):] for k in scales}
        expect_q = {k for k in sd_orig_names(sd, prefix)
                    if re.match(r"^(?:vace_)?blocks\.\d+\.(self_attn\.[qkvo]|cross_attn\.(?:[qkvo]|k_img|v_img)"
                                r"|ffn\.[02]|before_proj|after_proj)\.weight$", k)}
        line("PASS" if qset == expect_q else "FAIL", f"{what}: fp8 tensor set",
             f"{len(qset)} quantised = all block Linear weights" if qset == expect_q
             else f"diff {sorted(qset ^ expect_q)[:6]}")
        ok, det = fp8_bound_ok(deq, {prefix + k: v for k, v in orig_from_file_names(sd, prefix, ref).items()}, scales)
        line("PASS" if ok else "FAIL", f"{what}: fp8 rounding", det)
        load_sd = deq
    else:
        load_sd = sd
    with tempfile.TemporaryDirectory() as td:
        f = Path(td) / "single.safetensors"
        save_file({k: v.contiguous() for k, v in load_sd.items()}, str(f))
        try:
            m = model_cls.from_single_file(str(f), config=str(src), subfolder=sub,
                                                       torch_dtype=torch.float32, local_files_only=True)
        except Exception as e:  # noqa: BLE001
            line("FAIL", f"{what}: diffusers from_single_file", str(e).replace("\n", " ")[:300])
            return
    got = m.state_dict()
    file_dtypes = {k: v.dtype for k, v in load_sd.items()}
    dts = {d for d in file_dtypes.values() if d.is_floating_point}
    if fp8:
        # non-fp8 tensors: source cast to their file dtype; fp8 tensors: the values
        # dequantised here from the file (their closeness to the source is checked above)
        rest_dt = next(iter({file_dtypes[k] for k in file_dtypes if k not in scales and file_dtypes[k].is_floating_point}))
        want = {k: v.to(rest_dt).float() for k, v in ref.items()}
        for fk in scales:
            dk = orig_to_diffusers(fk[len(prefix):])
            if dk not in want:
                raise KeyError(f"fp8 tensor {fk} has no source tensor {dk}")
            want[dk] = deq[fk]
        detail_dt = f"fp8_scaled (rest {rest_dt})"
    else:
        dt = next(iter(dts))
        want = {k: v.to(dt).float() for k, v in ref.items()}
        detail_dt = str(dt)
    ok, det = compare({k: v.float() for k, v in got.items()}, want)
    line("PASS" if ok else "FAIL", f"{what}: diffusers from_single_file == source ({detail_dt})", det)
    if cfg_json is not None:
        check_wan_config(src, sub, cfg_json, what)
    if vace:
        # Wan2.2's repository has no VACE model (VaceWanModel is Wan2.1's); diffusers' load above is the check.
        return
    W = wan_modules()
    if W is None:
        line("SKIP", f"{what}: Wan WanModel strict load", "WAN22_SRC not set")
        return
    cfg = cfg_json or wan_config_from_diffusers(src, sub)
    strict_load(wan_model_from_config(cfg), {k[len(prefix):]: v for k, v in load_sd.items()
                                             if k[len(prefix):] != "scaled_fp8"},
                f"{what}: Wan WanModel")


def sd_orig_names(sd, prefix):
    return [k[len(prefix):] for k in sd if k.startswith(prefix)]


# The checker's own copy of diffusers' public rename table (convert_wan_transformer_to_
# diffusers), used ONLY to place the independently dequantised fp8 values next to the
# source tensors; the loading itself is done by diffusers.
_D_TABLE = [
    ("time_embedding.0", "condition_embedder.time_embedder.linear_1"),
    ("time_embedding.2", "condition_embedder.time_embedder.linear_2"),
    ("text_embedding.0", "condition_embedder.text_embedder.linear_1"),
    ("text_embedding.2", "condition_embedder.text_embedder.linear_2"),
    ("time_projection.1", "condition_embedder.time_proj"),
    ("cross_attn", "attn2"), ("self_attn", "attn1"), (".o.", ".to_out.0."),
    (".q.", ".to_q."), (".k.", ".to_k."), (".v.", ".to_v."),
    ("head.modulation", "scale_shift_table"), ("head.head", "proj_out"),
    ("modulation", "scale_shift_table"), ("ffn.0", "ffn.net.0.proj"), ("ffn.2", "ffn.net.2"),
    ("norm2", "norm__placeholder"), ("norm3", "norm2"), ("norm__placeholder", "norm3"),
    ("before_proj", "proj_in"), ("after_proj", "proj_out"),  # VACE blocks
]


def orig_to_diffusers(o):
    for a, b in _D_TABLE:
        o = o.replace(a, b)
    return o


def orig_from_file_names(sd, prefix, ref):
    """Source tensors keyed by the file's (original) names."""
    out = {}
    for k in sd:
        if k.startswith(prefix) and orig_to_diffusers(k[len(prefix):]) in ref:
            out[k[len(prefix):]] = ref[orig_to_diffusers(k[len(prefix):])]
    return out


def wan_config_from_diffusers(src, sub):
    c = json.loads((src / sub / "config.json").read_text())
    return {"dim": c["num_attention_heads"] * c["attention_head_dim"], "eps": c["eps"],
            "ffn_dim": c["ffn_dim"], "freq_dim": c["freq_dim"], "in_dim": c["in_channels"],
            "num_heads": c["num_attention_heads"], "num_layers": c["num_layers"],
            "out_dim": c["out_channels"], "text_dim": c["text_dim"], "text_len": 512,
            "patch_size": list(c["patch_size"]),
            "model_type": "t2v" if c["in_channels"] == c["out_channels"] else "i2v"}


PUBLISHED_KEYS = {"_class_name", "_diffusers_version", "dim", "eps", "ffn_dim", "freq_dim",
                  "in_dim", "model_type", "num_heads", "num_layers", "out_dim", "text_len"}


def check_wan_config(src, sub, cfg, what):
    c = json.loads((src / sub / "config.json").read_text())
    vace = c["_class_name"] == "WanVACETransformer3DModel"
    exp = {"_class_name": "VaceWanModel" if vace else "WanModel", "dim": c["num_attention_heads"] * c["attention_head_dim"],
           "eps": c["eps"], "ffn_dim": c["ffn_dim"], "freq_dim": c["freq_dim"],
           "in_dim": c["in_channels"], "num_heads": c["num_attention_heads"],
           "num_layers": c["num_layers"], "out_dim": c["out_channels"], "text_len": 512}
    bad = [k for k, v in exp.items() if cfg.get(k) != v]
    missing = PUBLISHED_KEYS - set(cfg)
    extra = set(cfg) - PUBLISHED_KEYS
    if cfg.get("text_dim", 4096) != c["text_dim"]:
        bad.append("text_dim")
    if vace and (cfg.get("vace_layers") != c["vace_layers"] or cfg.get("vace_in_dim") != c["vace_in_channels"]):
        bad.append("vace_layers / vace_in_dim")
    ok = not bad and not missing and cfg.get("model_type") in (("vace",) if vace else ("t2v", "i2v", "ti2v"))
    line("PASS" if ok else "FAIL", f"{what}: config.json",
         f"model_type={cfg.get('model_type')} extra keys {sorted(extra)}" if ok else f"bad {bad} missing {missing}")


def check_vae(src: Path, sd: dict, what: str):
    from diffusers import AutoencoderKLWan
    vcfg = json.loads((src / "vae" / "config.json").read_text())
    ref = load_file(str(src / "vae" / "diffusion_pytorch_model.safetensors"))
    dts = {v.dtype for v in sd.values()}
    dt = next(iter(dts))
    # diffusers' table hard-codes the real Wan2.1 VAE's structure: 2 residual blocks, dim_mult 1,2,4,4 (the
    # decoder's channel-changing shortcut at upsample 4).
    if (vcfg["z_dim"] == 16 and not vcfg.get("is_residual") and vcfg["num_res_blocks"] == 2
            and list(vcfg["dim_mult"]) == [1, 2, 4, 4]):
        with tempfile.TemporaryDirectory() as td:
            f = Path(td) / "vae.safetensors"
            save_file({k: v.contiguous() for k, v in sd.items()}, str(f))
            try:
                m = AutoencoderKLWan.from_single_file(str(f), config=str(src), subfolder="vae",
                                                      torch_dtype=torch.float32, local_files_only=True)
                ok, det = compare({k: v.float() for k, v in m.state_dict().items()},
                                  {k: v.to(dt).float() for k, v in ref.items()})
            except Exception as e:  # noqa: BLE001
                ok, det = False, str(e).replace("\n", " ")[:300]
        line("PASS" if ok else "FAIL", f"{what}: diffusers from_single_file == source ({dt})", det)
    else:
        line("N/A", f"{what}: diffusers from_single_file",
             "diffusers' Wan VAE converter knows only the 2.1 layout with num_res_blocks=2, dim_mult 1,2,4,4 "
             f"(this VAE: z_dim {vcfg['z_dim']}, num_res_blocks {vcfg['num_res_blocks']}, "
             f"dim_mult {vcfg['dim_mult']})")
    W = wan_modules()
    if W is None:
        line("SKIP", f"{what}: Wan WanVAE_ strict load + forward", "WAN22_SRC not set")
        return
    wv = wan_vae(vcfg)
    if not strict_load(wv, sd, f"{what}: Wan WanVAE_"):
        return
    # independent semantic proof: Wan's VAE (this file) vs diffusers' VAE (source weights)
    dv = AutoencoderKLWan.from_pretrained(str(src), subfolder="vae", torch_dtype=torch.float32).eval()
    if dt != torch.float32:
        dv.load_state_dict({k: v.to(dt).float() for k, v in ref.items()})
    g = torch.Generator().manual_seed(0)
    sp = vcfg.get("scale_factor_spatial", 8)
    T, H, Wd = 5, 2 * sp, 2 * sp
    x = torch.rand(1, 3, T, H, Wd, generator=g) * 2 - 1
    z = torch.randn(1, vcfg["z_dim"], 2, 2, 2, generator=g)
    with torch.no_grad():
        mu_d = dv.encode(x).latent_dist.mean
        y_d = dv.decode(z).sample
        scale = [torch.zeros(vcfg["z_dim"]), torch.ones(vcfg["z_dim"])]
        if vcfg["z_dim"] == 48 or vcfg.get("is_residual"):
            mu_w = wv.encode(x, scale)
            y_w = wv.decode(z, scale)
        else:
            mu_w = wv.encode(x, scale)
            y_w = wv.decode(z, scale)
    y_w = y_w.clamp(-1, 1) if y_d.abs().max() <= 1 else y_w
    e1 = (mu_d - mu_w).abs().max().item()
    e2 = (y_d - y_w.reshape(y_d.shape)).abs().max().item()
    ok = mu_d.shape == mu_w.shape and e1 < 1e-4 and e2 < 1e-4
    line("PASS" if ok else "FAIL", f"{what}: Wan VAE forward == diffusers VAE forward",
         f"encode mean max err {e1:.2g} {tuple(mu_w.shape)} (mean abs {mu_d.abs().mean().item():.3g}), "
         f"decode max err {e2:.2g} {tuple(y_w.shape)} (mean abs {y_d.abs().mean().item():.3g})")


def hf_t5(src):
    from transformers import UMT5Config, UMT5EncoderModel
    cfg = UMT5Config.from_pretrained(str(src / "text_encoder"))
    return UMT5EncoderModel(cfg).eval()


def check_t5_comfy(src: Path, path: Path, what: str):
    sd = load_file(str(path))
    sp = sd.pop("spiece_model", None)
    if sp is not None:
        ok = bytes(sp.tolist()) == (src / "tokenizer" / "spiece.model").read_bytes()
        line("PASS" if ok else "FAIL", f"{what}: spiece_model bytes == tokenizer/spiece.model",
             f"{sp.numel()} bytes uint8" if ok else "")
    ref = load_file(str(src / "text_encoder" / "model.safetensors"))
    fp8 = any(v.dtype == torch.float8_e4m3fn for v in sd.values())
    if fp8:
        deq, scales, style = dequantize(sd)
        if style == "scale_weight":
            mk = sd.get("scaled_fp8")
            line("PASS" if mk is not None and mk.dtype == torch.float8_e4m3fn else "FAIL",
                 f"{what}: scaled_fp8 marker", f"top-level key, {None if mk is None else mk.dtype}")
        exp = {k for k in ref if re.match(r"^encoder\.block\.\d+\.layer\.(0\.SelfAttention\.[qkvo]|1\.DenseReluDense\.(wi_0|wi_1|wo))\.weight$", k)}
        line("PASS" if set(scales) == exp else "FAIL", f"{what}: fp8 tensor set", f"{len(scales)} quantised")
        ok, det = fp8_bound_ok(deq, ref, scales)
        line("PASS" if ok else "FAIL", f"{what}: fp8 rounding", det)
        rest_dt = next(iter({v.dtype for k, v in deq.items() if k not in scales}))
        want = {k: (deq[k] if k in scales else v.to(rest_dt).float()) for k, v in ref.items()}
        sd, dtd = deq, f"fp8_scaled (rest {rest_dt})"
    else:
        dt = next(iter({v.dtype for v in sd.values()}))
        want = {k: v.to(dt).float() for k, v in ref.items()}
        dtd = str(dt)
    m = hf_t5(src)
    full = {k: v.float() for k, v in sd.items()}
    if "encoder.embed_tokens.weight" not in full and "shared.weight" in full:
        full["encoder.embed_tokens.weight"] = full["shared.weight"]
    try:
        m.load_state_dict(full, strict=True)
    except Exception as e:  # noqa: BLE001
        line("FAIL", f"{what}: UMT5EncoderModel strict load", str(e).replace("\n", " ")[:400])
        return
    got = {k: v for k, v in m.state_dict().items() if k != "encoder.embed_tokens.weight"}
    ok, det = compare(got, {k: v for k, v in want.items() if k != "encoder.embed_tokens.weight"})
    line("PASS" if ok else "FAIL", f"{what}: UMT5EncoderModel strict load == source ({dtd})", det)
    W = wan_modules()
    if W is None:
        line("SKIP", f"{what}: Wan T5Encoder", "WAN22_SRC not set")
        return
    # ComfyUI T5 file into Wan's module via a checker-local HF->Wan table: not needed for
    # the proof (Comfy uses HF names); the .pth check covers the Wan names.


def check_t5_pth(src: Path, path: Path, what: str):
    sd = torch.load(str(path), map_location="cpu", weights_only=True)
    W = wan_modules()
    if W is None:
        line("SKIP", f"{what}: Wan T5Encoder strict load + forward", "WAN22_SRC not set")
        return
    tcfg = json.loads((src / "text_encoder" / "config.json").read_text())
    wt = wan_t5(tcfg)
    if not strict_load(wt, sd, f"{what}: Wan T5Encoder"):
        return
    dt = next(iter({v.dtype for v in sd.values()}))
    from transformers import UMT5EncoderModel
    hm = UMT5EncoderModel.from_pretrained(str(src / "text_encoder"), torch_dtype=torch.float32).eval()
    if dt != torch.float32:
        hm.load_state_dict({k: v.to(dt).float() for k, v in hm.state_dict().items()})
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(2, tcfg["vocab_size"], (2, 12), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    with torch.no_grad():
        a = hm(input_ids=ids, attention_mask=mask).last_hidden_state
        b = wt(ids, mask)
    err = max((a[0] - b[0]).abs().max().item(), (a[1, :7] - b[1, :7]).abs().max().item())
    line("PASS" if err < 1e-4 else "FAIL", f"{what}: Wan T5Encoder forward == UMT5EncoderModel",
         f"max err {err:.2g} ({dt})")


# ---------------------------------------------------------------- layouts

def expert_map(src: Path):
    idx = json.loads((src / "model_index.json").read_text())
    if idx.get("transformer_2") and idx["transformer_2"][0]:
        return [("transformer", "high_noise"), ("transformer_2", "low_noise")]
    return [("transformer", None)]


def check_original(src: Path, out: Path):
    for sub, tag in expert_map(src):
        d = out / (f"{tag}_model" if tag else "")
        what = f"original {d.relative_to(out.parent)}"
        ixf = d / "diffusion_pytorch_model.safetensors.index.json"
        if not ixf.exists():
            line("FAIL", what, "no diffusion_pytorch_model.safetensors.index.json")
            continue
        ix = json.loads(ixf.read_text())
        files = sorted(set(ix["weight_map"].values()))
        merged, bad = {}, []
        for f in files:
            part = load_file(str(d / f))
            for k in part:
                if ix["weight_map"].get(k) != f:
                    bad.append(k)
            merged.update(part)
        pat = all(re.fullmatch(rf"diffusion_pytorch_model-\d{{5}}-of-{len(files):05d}\.safetensors", f) for f in files)
        tot = sum(v.numel() * v.element_size() for v in merged.values())
        ok = not bad and set(merged) == set(ix["weight_map"]) and pat and len(files) >= 2 \
            and ix.get("metadata", {}).get("total_size") == tot
        line("PASS" if ok else "FAIL", f"{what}: shards + index", f"{len(files)} shards, {len(merged)} tensors, total_size {tot}")
        cfg = json.loads((d / "config.json").read_text())
        check_transformer(src, sub, merged, what, "", cfg_json=cfg)
    t5 = out / "models_t5_umt5-xxl-enc-bf16.pth"
    check_t5_pth(src, t5, f"original {t5.name}") if t5.exists() else line("FAIL", "original T5 .pth", "missing")
    z = json.loads((src / "vae" / "config.json").read_text())["z_dim"]
    vp = out / ("Wan2.2_VAE.pth" if z == 48 else "Wan2.1_VAE.pth")
    if vp.exists():
        check_vae(src, torch.load(str(vp), map_location="cpu", weights_only=True), f"original {vp.name}")
    else:
        line("FAIL", f"original {vp.name}", "missing")
    if (src / "image_encoder").is_dir():
        check_clip_file(src, out / WAN_CLIP_PTH, "wan", "original")
    tok = out / "google" / "umt5-xxl"
    same = tok.is_dir() and all((tok / f.name).read_bytes() == f.read_bytes() for f in (src / "tokenizer").iterdir())
    line("PASS" if same else "FAIL", "original google/umt5-xxl == tokenizer/")


def check_comfy(src: Path, out: Path):
    files = sorted(out.glob("*.safetensors"))
    z = json.loads((src / "vae" / "config.json").read_text())["z_dim"]
    experts = expert_map(src)
    tfiles = [f for f in files if f.name.startswith(("wan2.2_", "wan2.1_")) and "vae" not in f.name]
    if len(tfiles) != len(experts):
        line("FAIL", "comfy transformer files", f"found {[f.name for f in tfiles]}")
    for sub, tag in experts:
        cand = [f for f in tfiles if (tag is None or f"_{tag}_" in f.name)]
        if len(cand) != 1:
            line("FAIL", f"comfy {sub}", f"candidates {[f.name for f in cand]}")
            continue
        f = cand[0]
        sd = load_file(str(f))
        prefix = "model.diffusion_model." if any(k.startswith("model.diffusion_model.") for k in sd) else ""
        if prefix and not all(k.startswith(prefix) for k in sd):
            line("FAIL", f"comfy {f.name}", "mixed prefixes")
        check_transformer(src, sub, sd, f"comfy {f.name} [{prefix or 'no prefix'}]", prefix)
    t5 = [f for f in files if f.name.startswith("umt5_xxl_")]
    if len(t5) != 1:
        line("FAIL", "comfy umt5_xxl file", f"found {[f.name for f in t5]}")
    else:
        check_t5_comfy(src, t5[0], f"comfy {t5[0].name}")
    vname = "wan2.2_vae.safetensors" if z == 48 else "wan_2.1_vae.safetensors"
    if (out / vname).exists():
        check_vae(src, load_file(str(out / vname)), f"comfy {vname}")
    else:
        line("FAIL", f"comfy {vname}", "missing")
    if (src / "image_encoder").is_dir():
        check_clip_vision(src, out / "clip_vision_h.safetensors")


def check_clip_vision(src: Path, path: Path):
    """ComfyUI's clip_vision_h: the source encoder's tensors under transformers 4's names (vision_model.*), rounded
    to the file's dtype, read back by transformers' CLIPVisionModel from them."""
    from transformers import CLIPVisionModel
    what = f"comfy {path.name}"
    if not path.exists():
        line("FAIL", what, "missing")
        return
    sd = load_file(str(path))
    ref = CLIPVisionModel.from_pretrained(str(src / "image_encoder"), torch_dtype=torch.float32)
    want = {("vision_model." + k if not k.startswith("vision_model.") else k): v for k, v in ref.state_dict().items()
            if not k.endswith("position_ids")}
    missing = sorted(set(want) - set(sd))
    extra = sorted(set(sd) - set(want))
    if missing or extra:
        line("FAIL", what, f"names differ: missing {missing[:3]}, extra {extra[:3]}")
        return
    worst = max((want[k].to(v.dtype).float() - v.float()).abs().max().item() for k, v in sd.items())
    line("PASS" if worst == 0 else "FAIL", f"{what}: transformers' CLIPVisionModel names and values",
         f"{len(sd)} tensors, max difference after rounding {worst:g}")


WAN_CLIP_PTH = "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth"
OPEN_CLIP_BIN = "open_clip_pytorch_model.bin"


def _ln(x, sd, name, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], sd[name + ".weight"].float(), sd[name + ".bias"].float(),
                                          eps)


def _lin(x, sd, name):
    return torch.nn.functional.linear(x, sd[name + ".weight"].float(), sd[name + ".bias"].float())


def clip_tower_forward(sd, names, pixels, heads, eps, layers):
    """The vision tower of a CLIP file in Wan's names (wan/modules/clip.py VisionTransformer.forward, read from its
    source: cls token and positions added before pre_norm, pre-norm AttentionBlocks whose to_qkv output is viewed
    [b, s, 3, n, d], exact GELU) or open_clip's (open_clip's VisionTransformer: the same computation with
    torch.nn.MultiheadAttention, used here as the module itself), after `layers` blocks."""
    F = torch.nn.functional
    wan = names == "wan"
    x = F.conv2d(pixels, sd["visual.patch_embedding.weight" if wan else "visual.conv1.weight"].float(),
                 stride=sd["visual.patch_embedding.weight" if wan else "visual.conv1.weight"].shape[-1])
    x = x.flatten(2).permute(0, 2, 1)  # [b, patches, D]
    b, _, dim = x.shape
    cls = sd["visual.cls_embedding" if wan else "visual.class_embedding"].float().reshape(1, 1, dim)
    pos = sd["visual.pos_embedding" if wan else "visual.positional_embedding"].float().reshape(1, -1, dim)
    x = torch.cat([cls.expand(b, -1, -1), x], 1) + pos
    x = _ln(x, sd, "visual.pre_norm" if wan else "visual.ln_pre", eps)
    for i in range(layers):
        p = f"visual.transformer.{i}." if wan else f"visual.transformer.resblocks.{i}."
        h = _ln(x, sd, p + ("norm1" if wan else "ln_1"), eps)
        if wan:
            s = h.shape[1]
            q, k, v = _lin(h, sd, p + "attn.to_qkv").view(b, s, 3, heads, dim // heads).unbind(2)
            a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
            a = _lin(a.transpose(1, 2).reshape(b, s, dim), sd, p + "attn.proj")
        else:
            mha = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
            mha.load_state_dict({"in_proj_weight": sd[p + "attn.in_proj_weight"].float(),
                                 "in_proj_bias": sd[p + "attn.in_proj_bias"].float(),
                                 "out_proj.weight": sd[p + "attn.out_proj.weight"].float(),
                                 "out_proj.bias": sd[p + "attn.out_proj.bias"].float()})
            a = mha(h, h, h, need_weights=False)[0]
        x = x + a
        h = _ln(x, sd, p + ("norm2" if wan else "ln_2"), eps)
        h = _lin(F.gelu(_lin(h, sd, p + ("mlp.0" if wan else "mlp.c_fc"))), sd, p + ("mlp.2" if wan else "mlp.c_proj"))
        x = x + h
    return x


def wan_clip_module():
    """wan.modules.animate.clip of WAN22_SRC (Wan2.2 keeps Wan2.1's clip.py there), its flash_attention replaced by
    SDPA (flash-attn needs CUDA) and torchvision stubbed when missing (only its transforms, unused here)."""
    if wan_modules() is None:
        return None
    import importlib
    root = os.environ["WAN22_SRC"]
    try:
        importlib.import_module("torchvision")
    except Exception:
        tv = types.ModuleType("torchvision")
        tv.transforms = types.ModuleType("torchvision.transforms")
        sys.modules["torchvision"], sys.modules["torchvision.transforms"] = tv, tv.transforms
    m = types.ModuleType("wan.modules.animate")
    m.__path__ = [str(Path(root, "wan", "modules", "animate"))]
    sys.modules["wan.modules.animate"] = m
    clip = importlib.import_module("wan.modules.animate.clip")

    def sdpa(q, k, v, **_):  # [b, s, n, d] as flash_attention takes them
        o = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return o.transpose(1, 2)
    clip.flash_attention = sdpa
    return clip


def check_clip_file(src: Path, path: Path, names: str, where: str):
    """A CLIP file in Wan's or open_clip's names: its vision tower computes what transformers' CLIPVisionModel of the
    source computes (hidden_states[-2], the state Wan's image models use), through clip_tower_forward, and with
    WAN22_SRC through Wan's own VisionTransformer (strict load of visual.* less the head). The text tower is not
    checked: it is a stand-in the loader must skip."""
    from transformers import CLIPVisionModel
    what = f"{where} {path.name}"
    if not path.exists():
        line("FAIL", what, "missing")
        return
    sd = torch.load(str(path), map_location="cpu", weights_only=True)
    ref = CLIPVisionModel.from_pretrained(str(src / "image_encoder"), torch_dtype=torch.float32).eval()
    c = ref.config
    # The file's values, rounded to its dtype, in the reference: the comparison is then about names and layout.
    dtype = sd["visual.pre_norm.weight" if names == "wan" else "visual.ln_pre.weight"].dtype
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(p.to(dtype).float())
        pixels = torch.randn(2, c.num_channels, c.image_size, c.image_size, generator=torch.Generator().manual_seed(5))
        want = ref(pixel_values=pixels, output_hidden_states=True).hidden_states[-2]
        got = clip_tower_forward(sd, names, pixels, c.num_attention_heads, c.layer_norm_eps, c.num_hidden_layers - 1)
    err = ((got - want).abs().max() / want.abs().max()).item()
    line("PASS" if err < 1e-5 else "FAIL", f"{what}: {names} vision tower == transformers' hidden_states[-2]",
         f"{len(sd)} tensors, max difference {err:.2e} of scale")
    clip = wan_clip_module() if names == "wan" else None
    if clip is None:
        if names == "wan":
            line("SKIP", f"{what}: Wan's VisionTransformer", "WAN22_SRC not set")
        return
    vt = clip.VisionTransformer(image_size=c.image_size, patch_size=c.patch_size, dim=c.hidden_size,
                                mlp_ratio=c.intermediate_size / c.hidden_size, out_dim=sd["visual.head"].shape[1],
                                num_heads=c.num_attention_heads, num_layers=c.num_hidden_layers, pool_type="token",
                                pre_norm=True, post_norm=False, activation="gelu", norm_eps=c.layer_norm_eps).eval()
    visual = {k[len("visual."):]: v for k, v in sd.items() if k.startswith("visual.")}
    if strict_load(vt, visual, f"{what}: Wan's VisionTransformer"):
        with torch.no_grad():
            got = vt(pixels, use_31_block=True)
        err = ((got - want).abs().max() / want.abs().max()).item()
        line("PASS" if err < 1e-5 else "FAIL", f"{what}: Wan's VisionTransformer(use_31_block) == transformers'",
             f"max difference {err:.2e} of scale")


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    src, out = Path(argv[1]), Path(argv[2])
    torch.manual_seed(0)
    if wan_modules() is None:
        print("note: WAN22_SRC not set (or not a Wan2.2 checkout): Wan-source lines are skipped")
    if (out / "models_t5_umt5-xxl-enc-bf16.pth").exists():
        check_original(src, out)
    elif (out / WAN_CLIP_PTH).exists() or (out / OPEN_CLIP_BIN).exists():
        for names, f in (("wan", WAN_CLIP_PTH), ("open_clip", OPEN_CLIP_BIN)):
            if (out / f).exists():
                check_clip_file(src, out / f, names, "clip")
    else:
        check_comfy(src, out)
    n_fail = RESULTS.count("FAIL")
    print(f"{'OK' if not n_fail else 'FAILED'}: {RESULTS.count('PASS')} pass, {n_fail} fail, "
          f"{RESULTS.count('SKIP')} skip, {RESULTS.count('N/A')} n/a")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
