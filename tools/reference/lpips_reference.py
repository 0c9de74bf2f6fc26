#!/usr/bin/env python3
"""LPIPS reference for omni-compare (apps/omni-compare/lpips.cpp): the PyPI lpips package's own numbers.

  lpips_reference.py OUT_DIR [--seed 0]

Builds lpips.LPIPS(net='alex', version='0.1', pnet_rand=True, pretrained=True) after torch.manual_seed(SEED): a
random AlexNet trunk (nothing to download) and the package's v0.1 linear layers. Writes into OUT_DIR
  weights.safetensors  its weights, by tools/lpips/convert_weights.py's save() (the file omni-compare reads);
  frames.safetensors   deterministic frame pairs, uint8 [N, H, W, 3] tensors a_K and b_K per size K;
and prints JSON {"weights", "frames", "groups": [{"key": K, "size": [H, W], "labels": [...], "distances": [...]}]}
with the package's distances, model(a, b, normalize=True) on [N, 3, H, W] float32 frames uint8 / 255.

Also checks that convert_weights.py's --random-backbone SEED path gives the same tensors (its mapping of
torchvision's features.I onto net.sliceK.I). Runs in the reference environment (tools/reference/setup.sh).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lpips"))
import convert_weights  # noqa: E402

# [H, W] of each group: square, odd and non-square, the smallest AlexNet's two pools accept (31), 16:9.
SIZES = [(64, 64), (67, 45), (31, 33), (256, 144)]


def gradient(h, w):
    y, x = np.mgrid[0:h, 0:w].astype(np.int64)
    return np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 7 % 256], axis=2).astype(np.uint8)


def box_blur(img, r=2):
    """(2r+1)^2 box blur, edges clamped, rounded back to uint8."""
    h, w = img.shape[:2]
    x = img.astype(np.float64)
    out = np.zeros_like(x)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            ys = np.clip(np.arange(h) + dy, 0, h - 1)
            xs = np.clip(np.arange(w) + dx, 0, w - 1)
            out += x[ys][:, xs]
    return np.round(out / (2 * r + 1) ** 2).astype(np.uint8)


def pairs(h, w, rng):
    """The frame pairs of one size: (label, a, b), uint8 [H, W, 3] each. Six of them, so that the C++ side's
    batches of four are crossed."""
    noise = lambda: rng.integers(0, 256, (h, w, 3), dtype=np.uint8)  # noqa: E731
    base, grad = noise(), gradient(h, w)
    perturbed = np.clip(base.astype(np.int64) + rng.integers(-12, 13, (h, w, 3)), 0, 255).astype(np.uint8)
    return [
        ("identical", base, base.copy()),
        ("noise-vs-noise", noise(), noise()),
        ("gradient-vs-blurred-shifted", grad, np.roll(box_blur(grad), (2, 3), axis=(0, 1))),
        ("noise-vs-perturbed", base, perturbed),
        ("inverted", 255 - base, base),
        ("constant-vs-gradient", np.full((h, w, 3), 128, np.uint8), grad),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from safetensors.torch import save_file

    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(args.seed)
    model = convert_weights.new_model()
    weights = os.path.join(args.out_dir, "weights.safetensors")
    convert_weights.save(model, weights, {"backbone": f"random: lpips.LPIPS(pnet_rand=True) after "
                                          f"torch.manual_seed({args.seed})",
                                          "lins": convert_weights.package_lins_path()}, overwrite=True)

    # The converter's path for the same random trunk must give the very same tensors.
    converted, _ = convert_weights.build(random_backbone=args.seed)
    ours, theirs = convert_weights.state_dict(model), convert_weights.state_dict(converted)
    assert ours.keys() == theirs.keys(), (sorted(ours), sorted(theirs))
    for k in ours:
        assert torch.equal(ours[k], theirs[k]), f"convert_weights --random-backbone differs at {k}"

    rng = np.random.default_rng(args.seed + 12345)
    tensors, groups = {}, []
    with torch.no_grad():
        for k, (h, w) in enumerate(SIZES):
            ps = pairs(h, w, rng)
            a = np.stack([p[1] for p in ps])
            b = np.stack([p[2] for p in ps])
            tensors[f"a_{k}"], tensors[f"b_{k}"] = torch.from_numpy(a), torch.from_numpy(b)
            # [N, H, W, 3] uint8 -> [N, 3, H, W] float32 in [0, 1]
            ta = torch.from_numpy(a).permute(0, 3, 1, 2).contiguous().to(torch.float32) / 255
            tb = torch.from_numpy(b).permute(0, 3, 1, 2).contiguous().to(torch.float32) / 255
            d = model(ta, tb, normalize=True)  # [N, 1, 1, 1]
            groups.append({"key": str(k), "size": [h, w], "labels": [p[0] for p in ps],
                           "distances": d.flatten().tolist()})
    frames = os.path.join(args.out_dir, "frames.safetensors")
    save_file(tensors, frames)
    json.dump({"weights": weights, "frames": frames, "groups": groups}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
