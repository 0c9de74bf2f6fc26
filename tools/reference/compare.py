#!/usr/bin/env python3
"""Compares two reference files key by key: compare.py A.safetensors B.safetensors [--tolerance X].

Prints, for every key, the shapes and the max abs and max relative difference (relative to max |A| of that
key, so that near-zero elements do not blow it up), then the worst key. Exits 1 when a key differs by more
than --tolerance (max abs) or, with --rel-tolerance, by more than that relative difference (the decoded video,
frames and vae_decode.out and unit.vae.decode_out, by --decoded-rel-tolerance: the random-weight VAE decoders
amplify their input's difference ~100 fold), when a key is in only one file, or when shapes or dtypes disagree.
With --cases A.json B.json it also compares the two case descriptions: every entry that both have must be
equal, except produced_by (the library versions); entries that only one has are listed. An Animate case's keys
computed from an earlier segment's decoded frames (the later segments' calls, steps and noise-free inputs, and
the last VAE encode) are held to --decoded-rel-tolerance too: they inherit the decoder's amplification.
"""

import argparse
import json
import sys

import torch
from safetensors.torch import load_file


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tolerance", type=float, default=1e-5, help="largest max abs difference accepted")
    p.add_argument("--rel-tolerance", type=float, help="largest max abs difference / max |A| accepted")
    p.add_argument("--decoded-rel-tolerance", type=float, help="--rel-tolerance for the decoded video's keys")
    p.add_argument("--quiet", action="store_true", help="print only failing keys and the summary")
    p.add_argument("--cases", nargs=2, metavar=("A_JSON", "B_JSON"), help="also compare these case.json files")
    args = p.parse_args(argv)

    case_failed = compare_cases(*args.cases) if args.cases else False
    after_decode = keys_after_decode(args.cases[0]) if args.cases else set()
    return 1 if compare_tensors(args, after_decode) or case_failed else 0


def keys_after_decode(case_path):
    """The keys (or key prefixes ending in '.') of an Animate case that depend on a decoded segment."""
    with open(case_path) as f:
        case = json.load(f)
    if case.get("pipeline") != "WanAnimatePipeline":
        return set()
    keys = {"vae_encode.in", "vae_encode.mean", "vae_decode.in"}
    keys |= {c["key"] + "." for c in case.get("transformer_calls", []) if c.get("segment", 0) > 0}
    keys |= {f"step{s['index']:02d}.latents" for s in case.get("step_log", []) if s.get("segment", 0) > 0}
    keys |= {f"seg{k:02d}." for k in range(1, case.get("segments", 1))}
    return keys


def compare_cases(a_path, b_path):
    """True when an entry that both case descriptions have differs (produced_by aside)."""
    with open(a_path) as f:
        a = json.load(f)
    with open(b_path) as f:
        b = json.load(f)
    differ = sorted(k for k in a.keys() & b.keys() if k != "produced_by" and a[k] != b[k])
    for key in differ:
        print(f"case.json {key}: A {json.dumps(a[key])[:100]} vs B {json.dumps(b[key])[:100]}")
    for key in sorted(a.keys() ^ b.keys()):
        print(f"case.json {key}: only in {'A' if key in a else 'B'}")
    print(f"case.json: {len(a.keys() & b.keys())} common entries, {len(differ)} differ")
    return bool(differ)


def compare_tensors(args, after_decode=frozenset()):
    """True when a tensor differs beyond the tolerance or is missing from one file."""

    a, b = load_file(args.a), load_file(args.b)
    failed = []
    worst_key, worst = None, -1.0
    for key in sorted(a.keys() | b.keys()):
        if key not in a or key not in b:
            print(f"{key:40s} only in {'A' if key in a else 'B'}")
            failed.append(key)
            continue
        x, y = a[key], b[key]
        if x.shape != y.shape or x.dtype != y.dtype:
            print(f"{key:40s} A {x.dtype} {tuple(x.shape)} vs B {y.dtype} {tuple(y.shape)}")
            failed.append(key)
            continue
        x, y = x.double(), y.double()
        diff = (x - y).abs().max().item() if x.numel() else 0.0
        scale = x.abs().max().item() if x.numel() else 0.0
        rel = diff / scale if scale > 0 else diff
        if args.rel_tolerance is not None:
            decoded = key in ("frames", "vae_decode.out", "unit.vae.decode_out") or key in after_decode or any(
                p.endswith(".") and key.startswith(p) for p in after_decode)
            limit = args.decoded_rel_tolerance if decoded and args.decoded_rel_tolerance is not None else args.rel_tolerance
            bad = not rel <= limit  # NaN counts as a failure
        else:
            bad = not diff <= args.tolerance
        if bad:
            failed.append(key)
        if bad or not args.quiet:
            print(f"{key:40s} {str(tuple(x.shape)):22s} max abs {diff:.3e}  rel {rel:.3e}{'  FAIL' if bad else ''}")
        if diff > worst:
            worst_key, worst = key, diff
    worst_text = f"worst {worst_key}: max abs {worst:.3e}" if worst > 0 else "all identical"
    print(f"{len(a.keys() & b.keys())} common keys, {worst_text}; "
          f"{len(failed)} beyond tolerance "
          f"{args.tolerance if args.rel_tolerance is None else f'rel {args.rel_tolerance:g}'} or unmatched")
    return bool(failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
