#include "models/wan_image_embedding.h"

#include "core/error.h"

namespace omni::models {

namespace {
// diffusers' FP32LayerNorm default.
constexpr double kLayerNormEps = 1e-5;
}  // namespace

WanImageEmbedding::WanImageEmbedding(int64_t image_dim, int64_t dim, int64_t pos_embed_seq_len)
    : pos_embed_seq_len_(pos_embed_seq_len),
      norm1_weight_(param("norm1.weight", {image_dim}, ParamDtype::kFloat32)),
      norm1_bias_(param("norm1.bias", {image_dim}, ParamDtype::kFloat32)),
      ff_proj_(child("ff.net.0.proj", std::make_unique<wan::Linear>(image_dim, image_dim))),
      ff_out_(child("ff.net.2", std::make_unique<wan::Linear>(image_dim, dim))),
      norm2_weight_(param("norm2.weight", {dim}, ParamDtype::kFloat32)),
      norm2_bias_(param("norm2.bias", {dim}, ParamDtype::kFloat32)) {
  if (pos_embed_seq_len > 0) pos_embed_ = &param("pos_embed", {1, pos_embed_seq_len, image_dim});
}

at::Tensor WanImageEmbedding::forward(const at::Tensor& image, at::ScalarType dtype) const {
  OMNI_CHECK(image.dim() == 3 && image.size(2) == norm1_weight_.size(0), "image embeddings must be [B, N, ",
             norm1_weight_.size(0), "], got ", image.sizes());
  auto x = image.to(dtype);  // [B, N, image_dim]
  if (pos_embed_ != nullptr) {
    // The first and last images' tokens as one sequence: [B, N, E] -> [B / 2, 2 N, E], plus the table.
    OMNI_CHECK(x.size(0) % 2 == 0 && 2 * x.size(1) == pos_embed_seq_len_, "the image position table holds ",
               pos_embed_seq_len_, " tokens: two images of ", pos_embed_seq_len_ / 2, " each; got ", x.size(0),
               " images of ", x.size(1));
    x = x.reshape({-1, 2 * x.size(1), x.size(2)}) + *pos_embed_;  // [B / 2, 2 N, E]
  }
  // FP32LayerNorm: float32 statistics and affine, cast back to the input's dtype.
  auto h = wan::layer_norm_fp32(x, norm1_weight_, norm1_bias_, kLayerNormEps).to(dtype);  // [B', N', E]
  h = ff_out_->forward(at::gelu(ff_proj_->forward(h)));                                   // [B', N', D]
  return wan::layer_norm_fp32(h, norm2_weight_, norm2_bias_, kLayerNormEps).to(dtype);
}

}  // namespace omni::models
