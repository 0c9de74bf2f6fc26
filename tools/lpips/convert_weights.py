#!/usr/bin/env python3
"""Writes the weights of omni-compare's LPIPS (apps/omni-compare/lpips.h): one float32 safetensors file with the
tensors of lpips.LPIPS(net='alex', version='0.1') (PyPI lpips 0.1.4) under the package's own state_dict names,
less the `lins.N.*` entries (the same modules as `linN.*`, listed twice by the package).

  convert_weights.py -o lpips_alex.safetensors [--alexnet alexnet-owt-7be5be79.pth] [--lins alex.pth] [--overwrite]
  convert_weights.py -o random.safetensors --random-backbone 0   # tests: no download, a random AlexNet

The AlexNet backbone (net.sliceK.I.*, torchvision's features.I.*) comes from
  --alexnet FILE          a torchvision AlexNet state dict (torch.save'd .pth, keys features.0.weight ...), such
                          as ~/.cache/torch/hub/checkpoints/alexnet-owt-7be5be79.pth;
  (neither)               torchvision.models.alexnet(weights='IMAGENET1K_V1'), which downloads it when not cached;
  --random-backbone SEED  torchvision.models.alexnet(weights=None) after torch.manual_seed(SEED).
The linear layers (linN.model.1.weight) from the installed package's weights/v0.1/alex.pth, or --lins FILE.

Runs in the reference environment (tools/reference/setup.sh: torch, lpips, safetensors; torchvision's AlexNet
from tools/reference/lpips_shim when torchvision is not installed, which then needs --alexnet or
--random-backbone), or in any with torch, torchvision, lpips and safetensors.
"""
import argparse
import importlib.metadata
import importlib.util
import os
import sys

import torch

# Without torchvision (the reference environment cannot hold it: tools/reference/lpips_shim/torchvision says
# why), its AlexNet from a stand-in that is torchvision 0.26's layer for layer; the real one wins when present.
if importlib.util.find_spec("torchvision") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference", "lpips_shim"))

# The AlexNet `features` indices of each slice, as lpips/pretrained_networks.py's alexnet splits them.
SLICES = {1: range(0, 2), 2: range(2, 5), 3: range(5, 8), 4: range(8, 10), 5: range(10, 12)}
NUM_LINS = 5


def package_lins_path():
    import lpips

    return os.path.join(os.path.dirname(os.path.abspath(lpips.__file__)), "weights", "v0.1", "alex.pth")


def new_model():
    """lpips.LPIPS for alex v0.1 with a random trunk (nothing downloaded) and the package's linear layers."""
    import warnings

    import lpips

    with warnings.catch_warnings():
        # lpips 0.1.4 calls torchvision.models.alexnet(pretrained=False), deprecated since torchvision 0.13 (the
        # same as weights=None); its warnings would only clutter the output.
        warnings.filterwarnings("ignore", message=".*deprecated since 0.13", category=UserWarning)
        return lpips.LPIPS(net="alex", version="0.1", pnet_rand=True, pretrained=True, verbose=False).eval()


def load_backbone(model, features, source):
    """Copies torchvision AlexNet weights ({"features.I.weight": ..., ...}; other keys such as classifier.* are
    ignored) into model.net's slices. Every conv of the slices must be found, and every features.* key used.
    `source` names where the weights came from, for the messages."""
    used = set()
    for k, idxs in SLICES.items():
        part = getattr(model.net, f"slice{k}")
        for i in idxs:
            module = getattr(part, str(i))
            for pname, p in module.named_parameters(recurse=False):
                key = f"features.{i}.{pname}"
                if key not in features:
                    sys.exit(f"error: {source}: no '{key}' (for net.slice{k}.{i}.{pname}); expected torchvision's AlexNet")
                v = features[key]
                if tuple(v.shape) != tuple(p.shape):
                    sys.exit(f"error: {source}: '{key}' is {tuple(v.shape)}, expected {tuple(p.shape)}")
                with torch.no_grad():
                    p.copy_(v.to(torch.float32))
                used.add(key)
    unused = sorted(k for k in features if k.startswith("features.") and k not in used)
    if unused:
        sys.exit(f"error: {source}: weights not used (not torchvision's AlexNet?): {', '.join(unused)}")


def load_lins(model, path):
    """The linear layers from a file like the package's weights/v0.1/alex.pth ({"linN.model.1.weight": ...}).
    The package itself loads that file with strict=False, which would ignore a wrong one silently."""
    sd = torch.load(path, map_location="cpu", weights_only=True)
    want = {f"lin{n}.model.1.weight": getattr(model, f"lin{n}").model[1].weight for n in range(NUM_LINS)}
    missing, extra = sorted(set(want) - set(sd)), sorted(set(sd) - set(want))
    if missing or extra:
        sys.exit(f"error: {path}: linear layer names differ from lpips' v0.1 alex.pth: missing {missing}, "
                 f"unexpected {extra}")
    for name, p in want.items():
        if tuple(sd[name].shape) != tuple(p.shape):
            sys.exit(f"error: {path}: '{name}' is {tuple(sd[name].shape)}, expected {tuple(p.shape)}")
        with torch.no_grad():
            p.copy_(sd[name].to(torch.float32))


def state_dict(model):
    """The file's tensors: the package's state_dict names less the `lins.N.*` duplicates, contiguous float32."""
    return {k: v.detach().to(torch.float32).contiguous().clone()
            for k, v in model.state_dict().items() if not k.startswith("lins.")}


def save(model, out, sources, overwrite=False):
    """Writes model's weights to `out` (atomically), with metadata naming the sources and versions."""
    from safetensors.torch import save_file

    if os.path.exists(out) and not overwrite:
        sys.exit(f"error: {out} exists (--overwrite to replace it)")
    meta = {"format": "lpips alex v0.1 (omni-compare apps/omni-compare/lpips.h)",
            "lpips": importlib.metadata.version("lpips"), "torch": torch.__version__}
    try:
        meta["torchvision"] = importlib.metadata.version("torchvision")
    except importlib.metadata.PackageNotFoundError:
        pass
    meta.update(sources)
    tmp = out + ".tmp"
    save_file(state_dict(model), tmp, metadata=meta)
    os.replace(tmp, out)


def build(alexnet=None, lins=None, random_backbone=None):
    """An LPIPS model and the metadata naming where its weights came from."""
    import torchvision

    if random_backbone is not None:
        torch.manual_seed(random_backbone)
        features = torchvision.models.alexnet(weights=None).state_dict()
        backbone = f"random: torchvision.models.alexnet(weights=None) after torch.manual_seed({random_backbone})"
    elif alexnet is not None:
        features = torch.load(alexnet, map_location="cpu", weights_only=True)
        backbone = os.path.abspath(alexnet)
    else:
        backbone = "torchvision.models.alexnet(weights='IMAGENET1K_V1')"
        try:
            features = torchvision.models.alexnet(weights="IMAGENET1K_V1").state_dict()
        except (OSError, RuntimeError) as e:  # offline (urllib's URLError), or the torchvision stand-in
            sys.exit(f"error: {backbone} could not get the weights ({e}); download alexnet-owt-7be5be79.pth "
                     "where there is a network and pass it with --alexnet")
    model = new_model()
    load_backbone(model, features, backbone)
    lins = lins or package_lins_path()
    load_lins(model, lins)
    return model, {"backbone": backbone, "lins": os.path.abspath(lins)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True, help="the .safetensors file to write")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--alexnet", help="torchvision AlexNet state dict (.pth)")
    src.add_argument("--random-backbone", type=int, metavar="SEED", help="random AlexNet (tests)")
    ap.add_argument("--lins", help="linear layers (default: the installed lpips package's weights/v0.1/alex.pth)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    args = ap.parse_args()
    if os.path.exists(args.out) and not args.overwrite:
        sys.exit(f"error: {args.out} exists (--overwrite to replace it)")
    model, sources = build(args.alexnet, args.lins, args.random_backbone)
    save(model, args.out, sources, overwrite=args.overwrite)
    print(f"wrote {args.out}: {len(state_dict(model))} tensors; backbone {sources['backbone']}, lins {sources['lins']}")


if __name__ == "__main__":
    main()
