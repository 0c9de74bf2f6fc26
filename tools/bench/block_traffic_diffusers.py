#!/usr/bin/env python3
"""Operators and bytes of one diffusers WanTransformerBlock forward (the diffusers half of block_traffic).

Counts the forward of diffusers.models.transformers.transformer_wan.WanTransformerBlock under a
TorchDispatchMode, which sees the outermost ops below the autograd / composite-implicit level (linear,
layer_norm, matmul, reshape, Tensor.to, ... are decomposed before it; ops called inside another op's kernel
are not seen). Of those ops it counts every one EXCEPT
  - matrix products (mm, addmm, bmm, baddbmm, matmul, linear, _addmm_activation, _scaled_mm, ...),
  - attention (scaled_dot_product_* and the _flash / _efficient / _cudnn attention kernels),
  - convolutions,
  - views: ops whose outputs alias an input and move nothing (read from the schema: a return with alias
    information that is not a write, e.g. view, _unsafe_view, transpose, permute, select, slice, expand,
    unsqueeze, squeeze, as_strided, alias, detach, split, unbind, t).
Bytes of a counted op: the nbytes (numel x itemsize) of every tensor input and every tensor output (tensors in
lists included). tools/bench/block_traffic.cpp applies the same rule to our C++ block at the ATen level.

The block is built as in a WanTransformer3DModel loaded in bfloat16: every weight bfloat16 except
scale_shift_table and norm2 (FP32LayerNorm) kept in float32 (_keep_in_fp32_modules). Inputs: hidden_states
[1, S, D] and encoder_hidden_states [1, L, D] bfloat16; temb (timestep_proj) bfloat16 [1, 6, D] (scalar
timesteps, A14B) or [1, S, 6, D] (per-token, TI2V-5B), as the model's condition embedder hands it over
(time_proj is a bfloat16 Linear); rotary_emb from diffusers' WanRotaryPosEmbed for a token grid of S tokens.

  block_traffic_diffusers.py [--tokens 4096] [--text 512] [--dims 5120,3072] [--device cpu|meta]
                             [--list] [--json FILE]

Widths: 5120 (A14B: 40 heads, ffn 13824), 3072 (TI2V-5B: 24 heads, ffn 14336); any other width D gets D/128
heads and ffn 2.7 D rounded up to 128. --per-token-dims lists the widths run with per-token modulation
(default 3072). The forward runs under torch.no_grad() (as diffusers' pipelines), not inference_mode: inference
tensors skip the autograd keys, where composite ops decompose, and the mode would then see layer_norm, type_as,
rms_norm, dropout whole.
--device meta runs the same dispatch on meta tensors (no arithmetic), with F.scaled_dot_product_attention
routed to the CPU's flash kernel as on the CPU (meta would pick the math fallback); --check-meta runs both
devices and requires the same table (it agrees at small sizes).
Prints, per width, "diffusers WIDTH: ops N bytes B" and, with --list, the per-op table.
"""

import argparse
import collections
import contextlib
import json
import math
import sys
import time

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed, WanTransformerBlock

# Op base names (the overload packet's name, without "aten::") that are matrix products, attention or
# convolutions. Views are found from the schema instead (see is_view).
EXCLUDED = {
    # matrix products
    "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_addmm_activation", "_scaled_mm", "addbmm", "addmv",
    "mv", "dot", "vdot", "einsum", "tensordot", "_int_mm", "_weight_int4pack_mm", "_weight_int8pack_mm",
    "_mixed_dtypes_linear", "_scaled_grouped_mm", "_grouped_mm", "mkldnn_linear", "_mkldnn_linear",
    "fbgemm_linear_fp16_weight",
    # attention
    "scaled_dot_product_attention", "_scaled_dot_product_attention_math",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable", "_flash_attention_forward",
    "_efficient_attention_forward", "_cudnn_attention_forward",
    # convolutions
    "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "cudnn_convolution", "mkldnn_convolution", "_slow_conv2d_forward",
    "slow_conv3d_forward", "_nnpack_spatial_convolution", "miopen_convolution",
}


def is_excluded(name):
    return name in EXCLUDED or "convolution" in name or name.startswith("_scaled_dot_product")


def is_view(func):
    """True when the op's outputs alias an input without writing it (views move no bytes)."""
    if func._schema.name in ("aten::_unsafe_view", "aten::_reshape_alias"):  # views without alias info
        return True
    rets = func._schema.returns
    if not rets:
        return False
    return all(r.alias_info is not None and not r.alias_info.is_write for r in rets)


def tensor_bytes(tree):
    leaves, _ = tree_flatten(tree)
    return sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))


class TrafficMode(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = collections.OrderedDict()  # name -> [count, bytes], in order of first call
        self.skipped = collections.Counter()  # excluded and view ops, by name

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        base = func._schema.name.split("::")[-1]
        if is_excluded(base) or is_view(func):
            self.skipped[base] += 1
            return out
        name = str(func.overloadpacket._qualified_op_name).replace("::", ".") + "." + func._overloadname
        b = tensor_bytes((args, kwargs)) + tensor_bytes(out)
        entry = self.ops.setdefault(name.replace("aten.", "", 1), [0, 0])
        entry[0] += 1
        entry[1] += b
        return out

    def total(self):
        return sum(c for c, _ in self.ops.values()), sum(b for _, b in self.ops.values())


class MetaSdpaAsCpu(TorchFunctionMode):
    """On meta tensors, runs F.scaled_dot_product_attention as the CPU does (its flash kernel, which the CPU
    picks for these shapes and dtypes) instead of the math fallback meta would pick (softmax, matmuls, ...)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        names = ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"]
        extra = dict(zip(names, args))
        extra.update(kwargs)
        if func is torch.nn.functional.scaled_dot_product_attention and extra["query"].device.type == "meta":
            q, k, v = extra["query"], extra["key"], extra["value"]
            assert extra.get("attn_mask") is None and not extra.get("enable_gqa", False)
            return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, extra.get("dropout_p", 0.0), extra.get("is_causal", False), scale=extra.get("scale"))[0]
        return func(*args, **kwargs)


WIDTHS = {5120: (40, 13824, False), 3072: (24, 14336, True)}  # dim: heads, ffn_dim, per-token modulation


def grid_for(tokens):
    """A frames x height x width grid with `tokens` cells, as cubic as possible (4096 -> 16 x 16 x 16)."""
    best = None
    for f in range(1, tokens + 1):
        if tokens % f:
            continue
        rest = tokens // f
        for h in range(1, rest + 1):
            if rest % h:
                continue
            w = rest // h
            score = max(f, h, w)
            if best is None or score < best[0]:
                best = (score, (f, h, w))
    return best[1]


def build_block(dim, heads, ffn_dim, device):
    with torch.device("meta" if device == "meta" else "cpu"):
        block = WanTransformerBlock(dim, ffn_dim, heads, qk_norm="rms_norm_across_heads", cross_attn_norm=True,
                                    eps=1e-6)
    block = block.to(torch.bfloat16)
    # _keep_in_fp32_modules of WanTransformer3DModel: scale_shift_table and the norms (only norm2 has weights).
    block.scale_shift_table.data = block.scale_shift_table.data.float()
    block.norm2.float()
    if device != "meta":
        g = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for name, p in block.named_parameters():
                if p.dim() >= 2 and name != "scale_shift_table":
                    p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
                elif name == "scale_shift_table":
                    p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(dim))
                elif name.endswith("bias"):
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
                else:
                    p.copy_(1 + torch.randn(p.shape, generator=g) * 0.02)
    block.eval()
    return block


def count(dim, tokens, text, device, per_token=None):
    heads, ffn_dim, pt = WIDTHS.get(dim, (dim // 128, (dim * 27 // 10 + 127) // 128 * 128, False))
    if per_token is not None:
        pt = per_token
    block = build_block(dim, heads, ffn_dim, device)
    f, h, w = grid_for(tokens)
    rope = WanRotaryPosEmbed(dim // heads, (1, 2, 2), 1024, 10000.0)
    cos, sin = rope(torch.empty(1, 16, f, 2 * h, 2 * w, device="meta"))  # only the shape is read
    dev = torch.device("meta" if device == "meta" else "cpu")
    g = torch.Generator().manual_seed(1)

    def rand(*shape):
        if device == "meta":
            return torch.empty(shape, dtype=torch.bfloat16, device="meta")
        return torch.randn(shape, generator=g).to(torch.bfloat16)

    x, ctx = rand(1, tokens, dim), rand(1, text, dim)
    temb = rand(1, tokens, 6, dim) if pt else rand(1, 6, dim)
    rotary = (cos.to(dev), sin.to(dev))
    mode = TrafficMode()
    t0 = time.perf_counter()
    meta_sdpa = MetaSdpaAsCpu() if device == "meta" else contextlib.nullcontext()
    with torch.no_grad(), meta_sdpa, mode:  # not inference_mode: its tensors skip autograd, where composites decompose
        out = block(x, ctx, temb, rotary)
    seconds = time.perf_counter() - t0
    assert out.shape == x.shape and out.dtype == torch.bfloat16
    if device != "meta":
        assert torch.isfinite(out.float()).all(), "non-finite output"
    n, b = mode.total()
    return {"dim": dim, "heads": heads, "ffn_dim": ffn_dim, "per_token": pt, "tokens": tokens, "text": text,
            "grid": [f, h, w], "device": device, "ops": n, "bytes": b, "seconds": seconds,
            "table": [[k, c, by] for k, (c, by) in mode.ops.items()], "skipped": dict(mode.skipped)}


def print_table(r, side="diffusers"):
    print(f"{side} {r['dim']}: per-op table (op, count, bytes, GB)")
    for name, c, b in sorted(r["table"], key=lambda e: -e[2]):
        print(f"  {name:<40} {c:>4} {b:>14} {b / 1e9:8.3f}")
    print(f"  {'total':<40} {r['ops']:>4} {r['bytes']:>14} {r['bytes'] / 1e9:8.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--text", type=int, default=512)
    ap.add_argument("--dims", default="5120,3072")
    ap.add_argument("--per-token-dims", default="3072", help="widths run with per-token modulation")
    ap.add_argument("--device", default="cpu", choices=["cpu", "meta"])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--check-meta", action="store_true",
                    help="also run on the other device and require the same ops and bytes")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    per_token = {int(d) for d in a.per_token_dims.split(",") if d}
    results = []
    for d in (int(s) for s in a.dims.split(",") if s):
        r = count(d, a.tokens, a.text, a.device, d in per_token)
        print(f"diffusers {d}: ops {r['ops']} bytes {r['bytes']} ({r['bytes'] / 1e9:.3f} GB, {r['seconds']:.1f} s "
              f"on {a.device})", flush=True)
        if a.check_meta:
            other = "meta" if a.device == "cpu" else "cpu"
            o = count(d, a.tokens, a.text, other, d in per_token)
            same = o["ops"] == r["ops"] and o["bytes"] == r["bytes"] and o["table"] == r["table"]
            print(f"diffusers {d}: {other} gives ops {o['ops']} bytes {o['bytes']}: "
                  f"{'the same' if same else 'DIFFERENT'}", flush=True)
            if not same:
                print_table(o)
                sys.exit(1)
        if a.list:
            print_table(r)
        results.append(r)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
