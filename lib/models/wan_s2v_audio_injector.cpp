#include "models/wan_s2v_audio_injector.h"

#include <string>

#include "core/error.h"

namespace omni::models {

namespace {
constexpr double kAdaNormEps = 1e-5;  // diffusers AdaLayerNorm's norm_eps default (the model's eps is not passed)
}  // namespace

WanS2VAudioInjector::WanS2VAudioInjector(int64_t index, int64_t dim, int64_t heads, double eps)
    : dim_(dim),
      attention_(child(
          "injector." + std::to_string(index),
          std::make_unique<WanAttention>(dim, heads, eps, AttentionKind::kCross, 0, wan::WeightNames::kWanOriginal))),
      adain_linear_(child("injector_adain_layers." + std::to_string(index) + ".linear",
                          std::make_unique<wan::Linear>(dim, 2 * dim))) {}

at::Tensor WanS2VAudioInjector::forward(const at::Tensor& video, const at::Tensor& audio,
                                        const at::Tensor& audio_global, at::Tensor* adain) const {
  OMNI_CHECK(video.dim() == 3 && video.size(2) == dim_ && audio.dim() == 3 && audio.size(0) == video.size(0) &&
                 audio.size(2) == dim_ && audio_global.dim() == 2 && audio_global.size(0) == video.size(0) &&
                 audio_global.size(1) == dim_,
             "S2V audio injection: video [T, hw, ", dim_, "], audio [T, n, ", dim_, "] and global [T, ", dim_,
             "], got ", video.sizes(), ", ", audio.sizes(), ", ", audio_global.sizes());
  const auto dtype = video.scalar_type();
  // AdaLayerNorm(chunk_dim=1): shift first, then scale, each [T, 1, D].
  const auto ss = adain_linear_->forward(at::silu(audio_global.to(dtype)));  // [T, 2D]
  const auto shift = ss.narrow(1, 0, dim_).unsqueeze(1), scale = ss.narrow(1, dim_, dim_).unsqueeze(1);
  const auto normed = at::layer_norm(video, {dim_}, {}, {}, kAdaNormEps) * (1 + scale) + shift;  // [T, hw, D]
  if (adain) *adain = normed;
  // Frame t's queries against frame t's audio tokens: the frames are the attention's batch.
  return attention_->forward(normed, audio.to(dtype), nullptr, nullptr);  // [T, hw, D]
}

}  // namespace omni::models
