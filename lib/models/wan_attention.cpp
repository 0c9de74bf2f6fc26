#include "models/wan_attention.h"

#include "core/error.h"
#include "core/torch_compat.h"

namespace omni::models {

at::Tensor wan_attention_core(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, AttentionKind kind,
                              AttentionBackend* backend) {
  if (backend) return backend->attend(q, k, v, kind);
  return compat::scaled_dot_product_attention(q, k, v);
}

namespace {
// A projection's name: diffusers' or Wan's original.
const char* projection_name(wan::WeightNames names, const char* diffusers, const char* original) {
  return names == wan::WeightNames::kDiffusers ? diffusers : original;
}
}  // namespace

WanAttention::WanAttention(int64_t dim, int64_t heads, double eps, AttentionKind kind, int64_t added_kv_dim,
                           wan::WeightNames names)
    : heads_(heads),
      eps_(eps),
      kind_(kind),
      to_q_(child(projection_name(names, "to_q", "q"), std::make_unique<wan::Linear>(dim, dim))),
      to_k_(child(projection_name(names, "to_k", "k"), std::make_unique<wan::Linear>(dim, dim))),
      to_v_(child(projection_name(names, "to_v", "v"), std::make_unique<wan::Linear>(dim, dim))),
      to_out_(child(projection_name(names, "to_out.0", "o"), std::make_unique<wan::Linear>(dim, dim))),
      // torch.nn.RMSNorm weights are not in _keep_in_fp32_modules: they take the model dtype.
      norm_q_(param("norm_q.weight", {dim})),
      norm_k_(param("norm_k.weight", {dim})) {
  if (added_kv_dim > 0) {
    OMNI_CHECK(names == wan::WeightNames::kDiffusers, "image key/values are registered under diffusers' names only");
    OMNI_CHECK(kind == AttentionKind::kCross, "added key/value projections belong to the cross-attention");
    add_k_ = child("add_k_proj", std::make_unique<wan::Linear>(added_kv_dim, dim));
    add_v_ = child("add_v_proj", std::make_unique<wan::Linear>(added_kv_dim, dim));
    norm_added_k_ = &param("norm_added_k.weight", {dim});  // an RMSNorm like norm_k, in the model dtype
  }
}

at::Tensor WanAttention::forward(const at::Tensor& x, const at::Tensor& context, const RotaryEmbedding* rope,
                                 AttentionBackend* backend, const at::Tensor& context_image) const {
  const at::Tensor& kv_source = kind_ == AttentionKind::kSelf ? x : context;
  OMNI_CHECK(kv_source.defined(), "cross-attention needs the text context");
  OMNI_CHECK(context_image.defined() == (add_k_ != nullptr),
             add_k_ ? "this cross-attention has image key/values: it needs the image tokens"
                    : "image tokens given to an attention without image key/values");
  OMNI_CHECK(kind_ == AttentionKind::kCross || rope != nullptr, "self-attention needs the rotary tables");

  auto q = wan::rms_norm(to_q_->forward(x), norm_q_, eps_);          // [B, S, D]
  auto k = wan::rms_norm(to_k_->forward(kv_source), norm_k_, eps_);  // [B, Sk, D]
  auto v = to_v_->forward(kv_source);                                // [B, Sk, D]

  q = q.unflatten(2, {heads_, -1});  // [B, S, H, d]
  k = k.unflatten(2, {heads_, -1});  // [B, Sk, H, d]
  v = v.unflatten(2, {heads_, -1});  // [B, Sk, H, d]
  if (kind_ == AttentionKind::kSelf) {
    q = apply_rotary_emb(q, *rope);
    k = apply_rotary_emb(k, *rope);
  }

  at::Tensor out_image;
  if (add_k_ != nullptr) {
    // The image tokens' own softmax (diffusers computes it first, then the text one, and adds them).
    auto k_img = wan::rms_norm(add_k_->forward(context_image), *norm_added_k_, eps_).unflatten(2, {heads_, -1});
    auto v_img = add_v_->forward(context_image).unflatten(2, {heads_, -1});  // [B, N, H, d]
    out_image = wan_attention_core(q.transpose(1, 2), k_img.transpose(1, 2), v_img.transpose(1, 2), kind_,
                                   backend);                                  // [B, H, S, d]
    out_image = out_image.transpose(1, 2).flatten(2, 3).to(q.scalar_type());  // [B, S, D]
  }
  auto out = wan_attention_core(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), kind_,
                                backend);                       // [B, H, S, d]
  out = out.transpose(1, 2).flatten(2, 3).to(q.scalar_type());  // [B, S, D]
  if (out_image.defined()) out = out + out_image;
  return to_out_->forward(out.to(x.scalar_type()));
}

}  // namespace omni::models
