// Wan2.2-S2V's CausalAudioEncoder (casual_audio_encoder, wan/modules/s2v/audio_utils.py, and its MotionEncoder_tc,
// auxi_blocks.py): the wav2vec2 hidden states of every latent frame's audio slots into audio tokens.
//
//   weights [1, L, 1, 1]                  the layers' weights (SiLU'd, normalized to sum 1)
//   encoder.conv1_local.conv              CausalConv1d A -> (D/4) n, k 3: n heads of D/4 channels
//   encoder.conv1_global.conv             CausalConv1d A -> D/4, k 3 (the AdaLN path)
//   encoder.conv2.conv, encoder.conv3.conv  CausalConv1d D/4 -> D/2 -> D, k 3, stride 2, shared by both paths
//   encoder.final_linear                  Linear D -> D (global path)
//   encoder.padding_tokens [1, 1, 1, D]   appended to every frame's n local tokens
// Every convolution pads its input causally by repeating the first frame twice; LayerNorms without affine
// (eps 1e-6) and SiLU follow each. Wan runs it under autocast(float32): the weights are float32 here.
// In the root HSDP unit.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

// The wav2vec2 hidden states WanModel_S2V weighs (casual_audio_encoder.weights [1, 25, 1, 1]): the input
// projection's and 24 layers' (wav2vec2-large). The class never passes another count.
constexpr int64_t kWanS2VAudioLayers = 25;

struct AudioTokens {
  at::Tensor local;   // [1, T', n + 1, D]: each audio frame's n tokens and the padding token
  at::Tensor global;  // [1, T', 1, D]: each audio frame's AdaLN input
};

class WanS2VAudioEncoder : public Module {
 public:
  // audio_dim A (wav2vec2's width), dim D (the transformer's), num_token n, layers L (kWanS2VAudioLayers).
  WanS2VAudioEncoder(int64_t audio_dim, int64_t dim, int64_t num_token, int64_t layers = kWanS2VAudioLayers);

  // features [1, L, A, Ta] (Ta audio frames, motion frames' copies included) -> tokens over T' = ceil(ceil(Ta/2)/2)
  // frames (the two stride-2 convolutions), float32.
  AudioTokens forward(const at::Tensor& features) const;

 private:
  struct CausalConv {
    at::Tensor* weight;  // [out, in, 3]
    at::Tensor* bias;    // [out]
    int64_t stride;
  };
  CausalConv conv(const std::string& name, int64_t in, int64_t out, int64_t stride);
  static at::Tensor causal(const CausalConv& c, const at::Tensor& x);
  // conv2 -> LN -> SiLU -> conv3 -> LN -> SiLU on x [N, D/4, T] (channels first): [N, T', D].
  at::Tensor downsample(const at::Tensor& x) const;

  int64_t dim_;
  int64_t num_token_;
  int64_t layers_;
  at::Tensor& weights_;  // [1, L, 1, 1]
  CausalConv conv1_local_;
  CausalConv conv1_global_;
  CausalConv conv2_;
  CausalConv conv3_;
  wan::Linear* final_linear_;
  at::Tensor& padding_tokens_;  // [1, 1, 1, D]
};

}  // namespace omni::models
