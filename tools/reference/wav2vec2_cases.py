#!/usr/bin/env python3
"""Writes the wav2vec2 audio encoder cases that tests/models/wav2vec2_model_test.cpp reads, into OUT_DIR.

What Wan2.2-S2V's AudioEncoder does with its 16 kHz samples (wan/modules/s2v/audio_encoder.py):
  input_values = Wav2Vec2Processor(audio, sampling_rate=16000, return_tensors="pt").input_values
  feat = torch.cat(Wav2Vec2ForCTC(input_values, output_hidden_states=True).hidden_states)
with transformers 4.51.3 (Wan2.2's pin), whose last hidden state is the last layer's output after
encoder.layer_norm. transformers 5.17 (this environment) returns that output without the norm among its
hidden_states, and with it as last_hidden_state: the expected states are hidden_states[:-1] + (last_hidden_state,).

OUT_DIR/
  xlsr/             Wav2Vec2ForCTC at wav2vec2-large-xlsr-53's widths (1024 wide, 16 heads, 4096 FF, conv 512 x 7,
                    positional kernel 128 in 16 groups, layer-norm feature extractor, stable layer norm) with 2
                    layers instead of 24 and random weights; its positional kernel stored as weight_g / weight_v,
                    the names of the published folder (transformers 4); preprocessor_config.json beside it
  small_new_names/  Wav2Vec2Model (no CTC head, no "wav2vec2." prefix) 256 wide, 3 layers, as transformers 5 saves
                    it (parametrizations.weight.original0 / original1)
  speech.f32        1.7 s of a speech-like signal at 16 kHz, float32
  expected.safetensors  input_values [1, N]; <folder>.hidden_states [L + 1, 1, T, D] float32
  cases.json        {"folders": [...], "samples": N, "frames": T}

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/wav2vec2_cases.py OUT_DIR
"""

import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2ForCTC, Wav2Vec2Model

CONV = dict(conv_kernel=(10, 3, 3, 3, 3, 2, 2), conv_stride=(5, 2, 2, 2, 2, 2, 2), conv_bias=True,
            feat_extract_norm="layer", do_stable_layer_norm=True, hidden_act="gelu", feat_extract_activation="gelu",
            layer_norm_eps=1e-5)


def speech(n):
    """A voiced tone gliding in pitch with formant-like harmonics and a little noise, with pauses."""
    rng = np.random.default_rng(5)
    t = np.arange(n) / 16000.0
    phase = 2 * np.pi * (120 * t + 40 * t * t)
    voiced = sum(a * np.sin(k * phase) for k, a in [(1, 0.3), (2, 0.15), (3, 0.08), (5, 0.04)])
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2
    return (voiced * envelope + rng.normal(0, 0.01, n)).astype(np.float32)


def states(model, input_values):
    base = model.wav2vec2 if isinstance(model, Wav2Vec2ForCTC) else model
    with torch.no_grad():
        out = base(input_values, output_hidden_states=True)
    # transformers 4.51.3's hidden_states: the last one after encoder.layer_norm (last_hidden_state).
    return torch.stack(list(out.hidden_states[:-1]) + [out.last_hidden_state]).contiguous()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    torch.manual_seed(0)
    samples = speech(27200)
    samples.tofile(os.path.join(out, "speech.f32"))
    extractor = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000, padding_value=0.0, do_normalize=True,
                                         return_attention_mask=True)
    input_values = extractor(samples, sampling_rate=16000, return_tensors="pt").input_values
    expected = {"input_values": input_values.float().contiguous()}

    xlsr = Wav2Vec2Config(hidden_size=1024, num_hidden_layers=2, num_attention_heads=16, intermediate_size=4096,
                          conv_dim=(512,) * 7, num_conv_pos_embeddings=128, num_conv_pos_embedding_groups=16,
                          vocab_size=33, **CONV)
    model = Wav2Vec2ForCTC(xlsr).eval()
    folder = os.path.join(out, "xlsr")
    model.save_pretrained(folder)
    extractor.save_pretrained(folder)
    # The published folder's names for the weight-normed kernel (what transformers 4 saved; 5 maps them on load).
    weights = load_file(os.path.join(folder, "model.safetensors"))
    stem = "wav2vec2.encoder.pos_conv_embed.conv."
    weights[stem + "weight_g"] = weights.pop(stem + "parametrizations.weight.original0")
    weights[stem + "weight_v"] = weights.pop(stem + "parametrizations.weight.original1")
    save_file(weights, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    reloaded = Wav2Vec2ForCTC.from_pretrained(folder).eval()  # transformers reads the old names as published
    expected["xlsr.hidden_states"] = states(reloaded, input_values)
    assert torch.equal(expected["xlsr.hidden_states"], states(model, input_values)), "weight_g/v read differently"

    small = Wav2Vec2Config(hidden_size=256, num_hidden_layers=3, num_attention_heads=4, intermediate_size=512,
                           conv_dim=(128,) * 7, num_conv_pos_embeddings=64, num_conv_pos_embedding_groups=8, **CONV)
    model = Wav2Vec2Model(small).eval()
    model.save_pretrained(os.path.join(out, "small_new_names"))
    expected["small_new_names.hidden_states"] = states(model, input_values)

    save_file(expected, os.path.join(out, "expected.safetensors"))
    frames = int(expected["xlsr.hidden_states"].shape[2])
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"folders": ["xlsr", "small_new_names"], "samples": len(samples), "frames": frames}, f, indent=1)
    print(f"wav2vec2_cases: {len(samples)} samples -> {frames} frames into {out}")


if __name__ == "__main__":
    main()
