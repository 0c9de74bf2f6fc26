#include "models/wan_transformer_layers.h"

#include "core/error.h"

namespace omni::models::wan {

Linear::Linear(int64_t in_features, int64_t out_features, ParamDtype rule)
    : in_(in_features),
      out_(out_features),
      weight_(param("weight", {out_features, in_features}, rule)),
      bias_(param("bias", {out_features}, rule)) {}

at::Tensor Linear::forward(const at::Tensor& x) const {
  OMNI_CHECK(weight_.defined(), "Linear used before its weights were loaded");
  OMNI_CHECK(x.scalar_type() == weight_.scalar_type(), "Linear: input dtype ", x.scalar_type(),
             " differs from weight dtype ", weight_.scalar_type());
  return at::linear(x, weight_, bias_);
}

FeedForward::FeedForward(int64_t dim, int64_t inner_dim)
    : proj_(child("net.0.proj", std::make_unique<Linear>(dim, inner_dim))),
      out_(child("net.2", std::make_unique<Linear>(inner_dim, dim))) {}

at::Tensor FeedForward::forward(const at::Tensor& x) const {
  // gelu in place: one [B, S, ffn_dim] tensor live instead of two (the widest activation of a block).
  at::Tensor h = proj_->forward(x);  // [B, S, ffn_dim]
  return out_->forward(at::gelu_(h, "tanh"));
}

at::Tensor layer_norm_fp32(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  auto xf = x.to(at::kFloat);
  at::Tensor w = weight.defined() ? weight.to(at::kFloat) : at::Tensor();
  at::Tensor b = bias.defined() ? bias.to(at::kFloat) : at::Tensor();
  return at::layer_norm(xf, {xf.size(-1)}, w, b, eps, /*cudnn_enable=*/true);
}

}  // namespace omni::models::wan
