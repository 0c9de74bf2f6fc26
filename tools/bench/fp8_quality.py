#!/usr/bin/env python3
"""Helper of fp8_quality.sh (standard library only: no numpy / torch needed).

  fp8_quality.py relerr A.safetensors B.safetensors KEY...     rel. error ||a-b||/||b|| of named tensors
  fp8_quality.py calls A.dump B.dump                            max / mean rel. error over every callNN.out
  fp8_quality.py frames_psnr A.safetensors B.safetensors        per-frame PSNR of the 'frames' tensors (min/mean)
  fp8_quality.py compare_parse FILE                             omni-compare's video table -> PSNR min/mean, SSIM min/mean
  fp8_quality.py share CKPT FAMILY                              float8 share of the transformers' weights
  fp8_quality.py memory NAME=REPORT.json ...                    memory / traffic table (+ plan vs measured)
"""
import array
import glob
import json
import math
import os
import re
import struct
import sys


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h, 8 + n


def load(path, keys=None):
    h, base = header(path)
    out = {}
    with open(path, "rb") as f:
        for k, v in h.items():
            if keys is not None and k not in keys:
                continue
            s, e = v["data_offsets"]
            f.seek(base + s)
            raw = f.read(e - s)
            dt = v["dtype"]
            if dt == "F32":
                a = array.array("f")
                a.frombytes(raw)
            elif dt == "BF16":
                buf = bytearray(2 * len(raw))
                buf[2::4] = raw[0::2]
                buf[3::4] = raw[1::2]
                a = array.array("f")
                a.frombytes(bytes(buf))
            elif dt == "F64":
                a = array.array("d")
                a.frombytes(raw)
            else:
                continue
            if sys.byteorder != "little":
                a.byteswap()
            out[k] = a
    return out


def rel(a, b):
    if len(a) != len(b):
        return float("nan")
    num = 0.0
    den = 0.0
    for x, y in zip(a, b):
        d = x - y
        num += d * d
        den += y * y
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return math.sqrt(num / den)


def has_nonfinite(a):
    return any(not math.isfinite(x) for x in a)


def cmd_relerr(a, b, *keys):
    ta, tb = load(a, set(keys)), load(b, set(keys))
    for k in keys:
        if k not in ta or k not in tb:
            print("%s missing" % k)
            continue
        flag = " NONFINITE" if has_nonfinite(ta[k]) else ""
        print("%s %.4e%s" % (k, rel(ta[k], tb[k]), flag))


def cmd_calls(a, b):
    ha, _ = header(a)
    keys = sorted(k for k in ha if re.fullmatch(r"call\d+\.out", k))
    ta, tb = load(a, set(keys)), load(b, set(keys))
    errs = []
    bad = 0
    for k in keys:
        if k not in tb:
            continue
        if has_nonfinite(ta[k]):
            bad += 1
        errs.append(rel(ta[k], tb[k]))
    if not errs:
        print("nan nan 0 0")
        return
    # max mean ncalls nonfinite_calls
    print("%.4e %.4e %d %d" % (max(errs), sum(errs) / len(errs), len(errs), bad))


def psnr(a, b):
    mse = sum((x - y) ** 2 for x, y in zip(a, b)) / len(a)
    return float("inf") if mse == 0 else 10 * math.log10(1.0 / mse)


def cmd_frames_psnr(a, b):
    ha, _ = header(a)
    shape = ha["frames"]["shape"]  # [1, F, H, W, 3] or [F, H, W, 3]
    nf = shape[-4]
    ta, tb = load(a, {"frames"}), load(b, {"frames"})
    fa, fb = ta["frames"], tb["frames"]
    per = len(fa) // nf
    ps = [psnr(fa[i * per:(i + 1) * per], fb[i * per:(i + 1) * per]) for i in range(nf)]
    print("%.2f %.2f" % (min(ps), sum(ps) / len(ps)))


def cmd_compare_parse(path):
    ps, ss = [], []
    for line in open(path):
        m = re.match(r"^(\d+)\s+(\S+)\s+(\S+)\s+", line)
        if m:
            ps.append(float(m.group(2)))
            ss.append(float(m.group(3)))
    if not ps:
        print("n/a n/a")
        return
    print("%.2f/%.2f %.4f/%.4f" % (min(ps), sum(ps) / len(ps), min(ss), sum(ss) / len(ss)))


def transformer_tensors(ckpt):
    """name -> (numel, ndim) over transformer and transformer_2 (diffusers layout, sharded or not)."""
    out = {}
    for sub in ("transformer", "transformer_2"):
        d = os.path.join(ckpt, sub)
        if not os.path.isdir(d):
            continue
        cfg = json.load(open(os.path.join(d, "config.json")))
        for f in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
            h, _ = header(f)
            for k, v in h.items():
                n = 1
                for s in v["shape"]:
                    n *= s
                out[sub + "/" + k] = (n, len(v["shape"]), cfg["num_layers"])
    return out


def fp8_numel(ckpt, family):
    t = transformer_tensors(ckpt)
    tot = sum(n for n, _, _ in t.values())
    f8 = 0
    rows = 0
    for k, (n, nd, L) in t.items():
        m = re.match(r"[^/]+/blocks\.(\d+)\.(attn1|attn2|ffn)\..*weight$", k)
        if not m or nd != 2:
            continue
        i, fam = int(m.group(1)), m.group(2)
        if i == 0 or i == L - 1:
            continue
        if family == "ffn" and fam != "ffn":
            continue
        if family == "attention" and fam == "ffn":
            continue
        f8 += n
    return tot, f8


def cmd_share(ckpt, family):
    tot, f8 = fp8_numel(ckpt, family)
    # --dtype bfloat16: 2 bytes an element; float8: 1 byte (+ float32 scales, ignored here)
    ratio = (2 * tot - f8) / (2 * tot)
    print("%d %d %.4f %.4f" % (tot, f8, f8 / tot, ratio))


def cmd_memory(ckpt, *pairs):
    reps = {}
    for p in pairs:
        name, path = p.split("=", 1)
        try:
            reps[name] = json.load(open(path))
        except Exception as e:  # noqa
            reps[name] = None
            print("(%s: no report: %s)" % (name, e))
    base = reps.get("bf16")
    fields = ["param_bytes_resident", "gathered_bytes_per_step", "gathered_bytes_peak", "planned_resident_bytes"]
    tot, _ = fp8_numel(ckpt, "ffn")
    print()
    print("| mode | rank | " + " | ".join(f + " (MiB)" for f in fields) + " | " +
          " | ".join("ratio " + f.split("_bytes")[0] + f.split("bytes")[1] for f in fields) + " |")
    print("|" + "---|" * (2 + 2 * len(fields)))
    for name, r in reps.items():
        if r is None:
            continue
        for k in r["ranks"]:
            b = None
            if base is not None:
                b = [x for x in base["ranks"] if x["rank"] == k["rank"]]
                b = b[0] if b else None
            vals = " | ".join("%.2f" % (k.get(f, float("nan")) / 2**20) for f in fields)
            rats = " | ".join(("%.3f" % (k[f] / b[f]) if b and b.get(f) else "-") for f in fields)
            print("| %s | %d | %s | %s |" % (name, k["rank"], vals, rats))
    print()
    print("Expected FP8/bf16 ratio of the transformers' weight bytes (each FP8 Linear 2 -> 1 byte; scales ignored):")
    for fam in ("ffn", "attention", "all"):
        t, f8 = fp8_numel(ckpt, fam)
        print("  %-9s float8 share of transformer elements %.3f -> expected transformer-bytes ratio %.3f" %
              (fam, f8 / t, (2 * t - f8) / (2 * t)))
    print()
    print("Memory plan vs measured peak (CPU: peak_rss_bytes - baseline_rss_bytes; GPU: peak_device_bytes); target within 15%:")
    print()
    print("| mode | rank | planned_peak (MiB) | phase | measured (MiB) | planned/measured | within 15% |")
    print("|---|---|---|---|---|---|---|")
    for name, r in reps.items():
        if r is None:
            continue
        for k in r["ranks"]:
            if r.get("device", "cpu") == "cpu" or not k.get("peak_device_bytes"):
                meas = k["peak_rss_bytes"] - k["baseline_rss_bytes"]
            else:
                meas = k["peak_device_bytes"]
            ratio = k["planned_peak_bytes"] / meas if meas > 0 else float("nan")
            print("| %s | %d | %.1f | %s | %.1f | %.3f | %s |" % (
                name, k["rank"], k["planned_peak_bytes"] / 2**20, k.get("planned_peak_phase", "?"),
                meas / 2**20, ratio, "yes" if 0.85 <= ratio <= 1.15 else "NO"))


if __name__ == "__main__":
    cmds = {"relerr": cmd_relerr, "calls": cmd_calls, "frames_psnr": cmd_frames_psnr,
            "compare_parse": cmd_compare_parse, "share": cmd_share, "memory": cmd_memory}
    cmds[sys.argv[1]](*sys.argv[2:])
