#include "models/wan_animate_face_adapter.h"

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "models/wan_attention.h"

namespace omni::models {

WanAnimateFaceAdapter::WanAnimateFaceAdapter(int64_t dim, int64_t heads, double eps)
    : heads_(heads),
      eps_(eps),
      to_q_(child("to_q", std::make_unique<wan::Linear>(dim, dim))),
      to_k_(child("to_k", std::make_unique<wan::Linear>(dim, dim))),
      to_v_(child("to_v", std::make_unique<wan::Linear>(dim, dim))),
      to_out_(child("to_out", std::make_unique<wan::Linear>(dim, dim))),
      norm_q_(param("norm_q.weight", {dim / heads})),
      norm_k_(param("norm_k.weight", {dim / heads})) {}

at::Tensor WanAnimateFaceAdapter::forward(const at::Tensor& x, const at::Tensor& face, int64_t first_token,
                                          int64_t frame_tokens) const {
  const int64_t dim = to_q_->in_features();
  OMNI_CHECK(x.dim() == 3 && x.size(2) == dim && face.dim() == 4 && face.size(0) == x.size(0) && face.size(3) == dim,
             "face adapter: tokens [B, S, ", dim, "] and face tokens [B, T, N, ", dim, "], got ", x.sizes(), " and ",
             face.sizes());
  const int64_t batch = x.size(0), frames = face.size(1), per_frame = face.size(2), local = x.size(1);
  OMNI_CHECK(frame_tokens > 0 && first_token >= 0 && first_token + local <= frames * frame_tokens,
             "face adapter: tokens ", first_token, "..", first_token + local, " lie outside ", frames, " frames of ",
             frame_tokens, " tokens");
  // Queries [B, S', H, d]: normalized over D, projected, then RMS-normalized per head.
  const at::Tensor h = at::layer_norm(x, {dim}, {}, {}, eps_);
  const at::Tensor q = wan::rms_norm(to_q_->forward(h).unflatten(2, {heads_, -1}), norm_q_, eps_);
  // Keys and values of every frame's face tokens: [B, T * N, D] -> [B, T, N, H, d].
  const at::Tensor kv_in = at::layer_norm(face, {dim}, {}, {}, eps_).flatten(1, 2);
  const at::Tensor k = wan::rms_norm(to_k_->forward(kv_in).view({batch, frames, per_frame, heads_, -1}), norm_k_, eps_);
  const at::Tensor v = to_v_->forward(kv_in).view({batch, frames, per_frame, heads_, -1});
  // Each frame's queries against that frame's keys alone (diffusers folds the frames into the batch; a
  // softmax over N keys per query is the same computation frame by frame). A rank's tokens may begin or end
  // inside a frame.
  at::Tensor out = at::empty_like(q);  // [B, S', H, d]
  const int64_t last = first_token + local;
  for (int64_t f = first_token / frame_tokens; f * frame_tokens < last; ++f) {
    const int64_t begin = std::max(first_token, f * frame_tokens), end = std::min(last, (f + 1) * frame_tokens);
    const at::Tensor qf = q.narrow(1, begin - first_token, end - begin).transpose(1, 2);        // [B, H, n, d]
    const at::Tensor kf = k.select(1, f).transpose(1, 2), vf = v.select(1, f).transpose(1, 2);  // [B, H, N, d]
    const at::Tensor of = wan_attention_core(qf, kf, vf, AttentionKind::kCross, nullptr);       // [B, H, n, d]
    out.narrow(1, begin - first_token, end - begin).copy_(of.transpose(1, 2));
  }
  return to_out_->forward(out.flatten(2, 3));  // [B, S', D]
}

}  // namespace omni::models
