#!/usr/bin/env python3
"""SSIM reference for omni-compare (apps/omni-compare/ssim.cpp): numpy only, written from the definition.

Wang, Bovik, Sheikh, Simoncelli, "Image quality assessment: from error visibility to structural similarity",
IEEE TIP 2004, as scikit-image's structural_similarity computes it with gaussian_weights=True, sigma=1.5,
use_sample_covariance=False, channel_axis=-1 (this script does not import scikit-image):
  - per channel, in float64: local means, variances and covariance with a Gaussian window (sigma 1.5, truncate 3.5:
    radius int(3.5 * 1.5 + 0.5) = 5, 11 taps, weights exp(-x^2 / (2 sigma^2)) normalised to sum 1), applied
    separably (rows, then columns) with scipy.ndimage's 'reflect' boundary (d c b a | a b c d | d c b a, which is
    numpy.pad's 'symmetric'); variances as E[x^2] - E[x]^2 (population, no N / (N - 1));
  - the map ((2 mu_x mu_y + C1)(2 s_xy + C2)) / ((mu_x^2 + mu_y^2 + C1)(s_x^2 + s_y^2 + C2)), C1 = (0.01 L)^2,
    C2 = (0.03 L)^2, L the data range;
  - its mean over the map cropped by the radius (5) on every side; the mean over channels.
Frames smaller than 11 x 11 have no SSIM (scikit-image refuses them): null.

  ssim_reference.py A.safetensors B.safetensors [--key-a frames] [--key-b frames] [--data-range 1]

reads frames [F, H, W, C] (or [1, F, H, W, C]) of any dtype from both files and prints JSON:
{"frames": [per-frame SSIM], "mean": mean over frames, "min": min over frames}.
"""

import argparse
import json
import sys

import numpy as np

SIGMA = 1.5
TRUNCATE = 3.5
RADIUS = int(TRUNCATE * SIGMA + 0.5)  # 5, as scipy.ndimage computes it
K1, K2 = 0.01, 0.03


def gaussian_window():
    x = np.arange(-RADIUS, RADIUS + 1, dtype=np.float64)
    w = np.exp(-0.5 / (SIGMA * SIGMA) * x * x)
    return w / w.sum()


def filter2d(img):
    """Separable Gaussian of a 2-D float64 array, same size, scipy 'reflect' (numpy 'symmetric') boundary."""
    w = gaussian_window()
    out = img
    for axis in (0, 1):
        pad = [(0, 0), (0, 0)]
        pad[axis] = (RADIUS, RADIUS)
        p = np.pad(out, pad, mode="symmetric")
        n = out.shape[axis]
        acc = np.zeros_like(out)
        for k in range(2 * RADIUS + 1):
            acc += w[k] * np.take(p, np.arange(k, k + n), axis=axis)
        out = acc
    return out


def ssim_channel(x, y, data_range):
    ux, uy = filter2d(x), filter2d(y)
    uxx, uyy, uxy = filter2d(x * x), filter2d(y * y), filter2d(x * y)
    vx, vy, vxy = uxx - ux * ux, uyy - uy * uy, uxy - ux * uy
    c1, c2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return s[RADIUS:-RADIUS, RADIUS:-RADIUS].mean(dtype=np.float64)


def ssim_frame(a, b, data_range):
    """Mean SSIM of two [H, W, C] frames; None when smaller than the 11 x 11 window."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape and a.ndim == 3, (a.shape, b.shape)
    if min(a.shape[0], a.shape[1]) < 2 * RADIUS + 1:
        return None
    return float(np.mean([ssim_channel(a[..., c], b[..., c], data_range) for c in range(a.shape[2])]))


def frames(path, key):
    from safetensors.numpy import load_file  # here, so that the SSIM functions import with numpy alone

    t = load_file(path)[key]
    if t.ndim == 5 and t.shape[0] == 1:
        t = t[0]
    assert t.ndim == 4, f"{path}: '{key}' should be [F, H, W, C], got {t.shape}"
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--key-a", default="frames")
    ap.add_argument("--key-b", default="frames")
    ap.add_argument("--data-range", type=float, default=1.0)
    args = ap.parse_args()
    fa, fb = frames(args.a, args.key_a), frames(args.b, args.key_b)
    assert fa.shape == fb.shape, (fa.shape, fb.shape)
    per = [ssim_frame(fa[f], fb[f], args.data_range) for f in range(fa.shape[0])]
    ok = [v for v in per if v is not None]
    out = {"frames": per, "mean": float(np.mean(ok)) if ok else None, "min": float(min(ok)) if ok else None}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
