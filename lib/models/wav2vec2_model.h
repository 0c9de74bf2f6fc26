// transformers' Wav2Vec2Model (also inside Wav2Vec2ForCTC), the audio encoder of Wan2.2-S2V: its
// wav2vec2-large-xlsr-53-english folder, run as Wan2.2's AudioEncoder runs it (output_hidden_states=True, every
// state kept: torch.cat(hidden_states) -> [L + 1, T, D]). Only the configuration that checkpoint has is built:
// feat_extract_norm "layer" and do_stable_layer_norm (normalization before each part of a layer).
//
// Module tree (paths are the checkpoint's tensor names; <p> is "wav2vec2." in a Wav2Vec2ForCTC checkpoint, ""
// in a Wav2Vec2Model one):
//   <p>feature_extractor.conv_layers.<i>.conv.{weight [C_i, C_i-1, K_i], bias}  } root unit: seven strided
//   <p>feature_extractor.conv_layers.<i>.layer_norm.{weight,bias} [C_i]          }   convolutions, 16 kHz -> 50 Hz
//   <p>feature_projection.layer_norm.{weight,bias} [C]                           }
//   <p>feature_projection.projection.{weight [D, C], bias}                       }
//   <p>encoder.pos_conv_embed.conv.bias [D], and its weight-normed kernel as     }
//     weight_g [1, 1, K] / weight_v [D, D / G, K] (transformers 4, the published }
//     folder), or parametrizations.weight.original0 / original1 (transformers 5)}
//   <p>encoder.layer_norm.{weight,bias} [D]                                      }
//   <p>encoder.layers.<i>.*                        Wav2Vec2EncoderLayer            unit i
// Claimed where the checkpoint has them, and never used: <p>masked_spec_embed [D] (training's SpecAugment),
// lm_head.{weight,bias} (the CTC head).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/module.h"
#include "models/wav2vec2_encoder_layer.h"

namespace omni::io {
class Checkpoint;
}

namespace omni::models {

struct Wav2Vec2Config {
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_hidden_layers = 0;
  std::vector<int64_t> conv_dim, conv_kernel, conv_stride;  // the feature extractor, one entry per convolution
  bool conv_bias = false;
  int64_t num_conv_pos_embeddings = 128;  // the positional convolution's kernel
  int64_t num_conv_pos_embedding_groups = 16;
  double layer_norm_eps = 1e-5;
  int64_t vocab_size = 0;  // lm_head's rows, when the checkpoint has the CTC head
  // The checkpoint's naming (header comment); set by resolve_names().
  std::string prefix = "wav2vec2.";
  bool legacy_weight_norm = true;  // weight_g / weight_v, else parametrizations.weight.original0 / original1
  bool has_lm_head = false;
  bool has_masked_spec_embed = true;

  // Frames the feature extractor makes of `samples` input samples (no padding: each convolution keeps
  // (n - kernel) / stride + 1).
  int64_t frames_for(int64_t samples) const;

  // The folder's config.json (a Wav2Vec2Config). A missing or non-positive size, a width the heads or groups do
  // not divide, conv lists of different lengths, or a configuration other than feat_extract_norm "layer" with
  // do_stable_layer_norm and GELU is an input error naming the file and the key.
  static Wav2Vec2Config from_json(const std::string& path);
  // The same of a config already read (`source`: its path, or what it was inferred from).
  static Wav2Vec2Config from_json(const nlohmann::json& j, const std::string& source);
  // Reads the naming from `ckpt` (prefix, weight-norm names, the CTC head). A checkpoint with neither prefix's
  // encoder.layer_norm.weight is an input error naming the file.
  void resolve_names(const io::Checkpoint& ckpt);
};

class Wav2Vec2Model : public Module {
 public:
  // `dtype`: compute dtype (float32, bfloat16 or float16).
  Wav2Vec2Model(const Wav2Vec2Config& config, at::ScalarType dtype);

  // Reads <dir>/config.json and the checkpoint there and loads every tensor.
  static std::unique_ptr<Wav2Vec2Model> load(const std::string& dir, at::ScalarType dtype,
                                             const at::Device& device = at::kCPU);

  // input_values [B, N] (Wav2Vec2FeatureExtractor's normalized samples, io/wav2vec2_feature_extractor.h) ->
  // every hidden state as transformers 4.51.3 returns them (Wan2.2's pin), stacked: [L + 1, B, T, D] in the compute
  // dtype. State 0 is the projected features plus the positional convolution, state i the output of layer i - 1,
  // and the last is the output of the last layer after encoder.layer_norm. (transformers 5 returns the last
  // layer's output without that norm among its hidden_states; last_hidden_state has it.) hooks->before/after
  // (UnitHooks::kRootUnit) bracket the forward, before/after(i) each layer (module.h).
  at::Tensor hidden_states(const at::Tensor& input_values, UnitHooks* hooks = nullptr) const;

  const Wav2Vec2Config& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  int num_blocks() const { return static_cast<int>(layers_.size()); }
  const Module& block(int i) const;
  // "<prefix>encoder.layers.<i>.": prefix of layer i's parameter names in the checkpoint.
  std::string block_prefix(int i) const;
  // The root unit's parameters (feature extractor, projection, positional convolution, norms, extras).
  std::vector<ParamRef> root_parameters() const;

 private:
  struct ConvLayer {
    at::Tensor* weight;
    at::Tensor* bias;  // undefined slot when conv_bias is false
    at::Tensor* norm_weight;
    at::Tensor* norm_bias;
  };
  Wav2Vec2Config config_;
  at::ScalarType dtype_;
  std::vector<ConvLayer> convs_;
  at::Tensor& projection_norm_weight_;
  at::Tensor& projection_norm_bias_;
  at::Tensor& projection_weight_;
  at::Tensor& projection_bias_;
  at::Tensor& pos_conv_g_;
  at::Tensor& pos_conv_v_;
  at::Tensor& pos_conv_bias_;
  at::Tensor& encoder_norm_weight_;
  at::Tensor& encoder_norm_bias_;
  std::vector<Wav2Vec2EncoderLayer*> layers_;
};

}  // namespace omni::models
