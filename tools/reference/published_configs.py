#!/usr/bin/env python3
"""Rewrites a diffusers Wan checkpoint folder's configs as the published Wan2.2 Diffusers repositories carry them.

    published_configs.py SRC DST [--clip-output true|false]

DST gets every weight and tokenizer file of SRC as a symbolic link and edited copies of the JSON files:
- every diffusers config: `_name_or_path` (the published repository) and an older `_diffusers_version`
  (0.35.0.dev0, the week the Wan2.2 repositories were converted);
- vae/config.json: `clip_output` (an AutoencoderKLWan argument of diffusers #12004, removed by #12041);
- text_encoder/config.json as transformers 4.51 writes it: `torch_dtype` where 5.x writes `dtype`,
  `transformers_version` 4.51.3, `_name_or_path`;
- tokenizer_config.json and special_tokens_map.json as transformers 4.x writes them for UMT5: 300
  `<extra_id_N>` additional special tokens and `extra_ids: 300`, `bos_token` `<s>`, AddedToken objects,
  `added_tokens_decoder`, `sp_model_kwargs`, `legacy`, a model_max_length past int64;
- in each file one key a newer diffusers or transformers may add (`added_by_a_newer_release`).
Prints the keys that omni-generate is expected to ignore, one `FILE KEY` line each.
"""
import argparse
import json
import os
import sys

REPO = {"WanPipeline": "Wan-AI/Wan2.2-T2V-A14B-Diffusers", "WanImageToVideoPipeline": "Wan-AI/Wan2.2-I2V-A14B-Diffusers"}
FUTURE = "added_by_a_newer_release"


def published_tokenizer_files(spiece_path):
    """transformers 4.x's tokenizer_config.json and special_tokens_map.json for UMT5 (300 <extra_id_N>, bos <s>,
    AddedToken objects, added_tokens_decoder, ...) on the vocabulary of `spiece_path` (pieces: pad, eos, unk)."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=spiece_path)
    pieces = sp.get_piece_size()

    def added(content):
        return {"content": content, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                "special": True}

    extras = [f"<extra_id_{i}>" for i in range(300)]
    decoder = {str(i): added(sp.id_to_piece(i)) for i in (sp.pad_id(), sp.eos_id(), sp.unk_id())}
    for i, tok in enumerate(extras):
        decoder[str(pieces + 300 - 1 - i)] = added(tok)
    decoder[str(pieces + 300)] = added("<s>")  # not a piece of these small vocabularies: transformers appends it
    tc = {
        "added_tokens_decoder": decoder,
        "additional_special_tokens": extras,
        "bos_token": "<s>",
        "clean_up_tokenization_spaces": True,
        "eos_token": "</s>",
        "extra_ids": 300,
        "extra_special_tokens": {},
        "legacy": True,
        "model_max_length": 1000000000000000019884624838656,
        "pad_token": "<pad>",
        "sp_model_kwargs": {},
        "spaces_between_special_tokens": False,
        "tokenizer_class": "T5Tokenizer",
        "unk_token": "<unk>",
    }
    stm = {"additional_special_tokens": extras, "bos_token": "<s>", "eos_token": added("</s>"),
           "pad_token": added("<pad>"), "unk_token": added("<unk>")}
    for v in stm.values():
        if isinstance(v, dict):
            v.pop("special")
    return tc, stm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--clip-output", choices=["true", "false"], default="false")
    args = ap.parse_args()
    src, dst = os.path.abspath(args.src), os.path.abspath(args.dst)
    for root, _, files in os.walk(src):
        out = os.path.join(dst, os.path.relpath(root, src))
        os.makedirs(out, exist_ok=True)
        for f in files:
            if not f.endswith(".json"):
                os.symlink(os.path.join(root, f), os.path.join(out, f))

    def load(rel):
        with open(os.path.join(src, rel)) as fh:
            return json.load(fh)

    def save(rel, obj):
        with open(os.path.join(dst, rel), "w") as fh:
            json.dump(obj, fh, indent=2)

    ignored = []
    index = load("model_index.json")
    repo = REPO[index["_class_name"]]
    if index.get("expand_timesteps"):
        repo = "Wan-AI/Wan2.2-TI2V-5B-Diffusers"
    for root, _, files in os.walk(src):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), src)
            if not f.endswith(".json") or rel.startswith("tokenizer/") or rel.startswith("text_encoder/"):
                continue
            obj = load(rel)
            if "_diffusers_version" in obj or rel == "model_index.json":
                obj["_diffusers_version"] = "0.35.0.dev0"
                obj["_name_or_path"] = repo + ("/" + os.path.dirname(rel) if os.path.dirname(rel) else "")
            if rel == "vae/config.json":
                obj["clip_output"] = args.clip_output == "true"
                ignored.append((rel, "clip_output"))
            if rel.endswith("config.json") or rel == "model_index.json":
                obj[FUTURE] = 1
                ignored.append((rel, FUTURE))
            save(rel, obj)

    # transformers 4.51's UMT5 config.json.
    te = load("text_encoder/config.json")
    te.pop("dtype", None)
    te["torch_dtype"] = "bfloat16"
    te["transformers_version"] = "4.51.3"
    te["_name_or_path"] = "google/umt5-xxl"
    te[FUTURE] = True
    ignored.append(("text_encoder/config.json", FUTURE))
    save("text_encoder/config.json", dict(sorted(te.items())))

    tc, stm = published_tokenizer_files(os.path.join(src, "tokenizer/spiece.model"))
    tc[FUTURE] = True
    ignored.append(("tokenizer/tokenizer_config.json", FUTURE))
    save("tokenizer/tokenizer_config.json", tc)
    save("tokenizer/special_tokens_map.json", stm)
    # tokenizer.json would be what transformers loads; omni-generate reads spiece.model (issue 20), and the
    # reference ids come from the config files above.
    if os.path.lexists(os.path.join(dst, "tokenizer/tokenizer.json")):
        os.unlink(os.path.join(dst, "tokenizer/tokenizer.json"))
    for rel, key in ignored:
        print(rel, key)


if __name__ == "__main__":
    sys.exit(main())
