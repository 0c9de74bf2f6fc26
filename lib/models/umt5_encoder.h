// transformers' UMT5EncoderModel, as the Wan pipelines use it for prompts, and the pipeline's prompt
// encoding (diffusers' WanPipeline._get_t5_prompt_embeds).
//
// Module tree (paths are the checkpoint's tensor names):
//   shared.weight                    [vocab, d_model]  token embedding (no scaling)      } root unit
//   encoder.final_layer_norm.weight  [d_model]                                           }
//   encoder.block.<i>.*              Umt5Block                                             unit i
// The encoder's embed_tokens is tied to `shared` in transformers, and save_pretrained writes only
// shared.weight. A checkpoint that stores only encoder.embed_tokens.weight is read under that name instead;
// one that stores both registers both (the loader must claim every tensor) and the forward uses shared.weight,
// which is what transformers' tying keeps.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "models/module.h"
#include "models/umt5_block.h"

namespace omni::io {
class Checkpoint;
}

namespace omni::models {

struct Umt5Config {
  int64_t vocab_size = 0;
  int64_t d_model = 0;
  int64_t d_kv = 0;
  int64_t d_ff = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t relative_attention_num_buckets = 32;
  int64_t relative_attention_max_distance = 128;
  double layer_norm_epsilon = 1e-6;
  // Where the embedding is stored (see the header comment); set by resolve_embedding().
  std::string embedding_name = "shared.weight";
  bool embedding_also_untied_copy = false;  // the checkpoint has encoder.embed_tokens.weight as well

  int64_t inner_dim() const { return num_heads * d_kv; }

  // text_encoder/config.json. Only feed_forward_proj "gated-gelu" (gelu_new), UMT5's and Wan's, is supported;
  // anything else, or a missing or non-positive size, is an input error naming the file and the key.
  static Umt5Config from_json(const std::string& path);
  // The same from a parsed config; `source` names it in errors (a path, or what it was inferred from).
  static Umt5Config from_json(const nlohmann::json& j, const std::string& source);
  // Picks the embedding's tensor name from what `ckpt` holds.
  void resolve_embedding(const io::Checkpoint& ckpt);
};

class Umt5Encoder : public Module {
 public:
  // `dtype`: compute dtype (float32 or bfloat16; float16 follows transformers' float32 `wo`).
  Umt5Encoder(const Umt5Config& config, at::ScalarType dtype);

  // Reads text_encoder/config.json and the checkpoint in `text_encoder_dir` and loads every tensor.
  static std::unique_ptr<Umt5Encoder> load(const std::string& text_encoder_dir, at::ScalarType dtype,
                                           const at::Device& device = at::kCPU);

  // ids [B, L] int64, mask [B, L] (0/1, any integer or floating dtype) -> last_hidden_state [B, L, d_model]
  // in the compute dtype. hooks->before/after(UnitHooks::kRootUnit) bracket the whole forward and
  // before/after(i) each block, in order (module.h).
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& mask, UnitHooks* hooks = nullptr) const;

  const Umt5Config& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  Module& block(int i);
  const Module& block(int i) const;
  // "encoder.block.<i>.": prefix of block i's parameter names in the checkpoint.
  std::string block_prefix(int i) const;
  // The root unit's parameters (embedding, final norm), full names.
  std::vector<ParamRef> root_parameters() const;

 private:
  Umt5Config config_;
  at::ScalarType dtype_;
  at::Tensor* embedding_;
  at::Tensor* final_norm_;
  std::vector<Umt5Block*> blocks_;
};

}  // namespace omni::models
