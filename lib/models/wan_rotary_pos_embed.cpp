#include "models/wan_rotary_pos_embed.h"

#include "core/error.h"

namespace omni::models {

namespace {

// get_1d_rotary_pos_embed(dim, max_seq_len, theta, use_real=True, repeat_interleave_real=True, float64):
// returns cos and sin [max_seq_len, dim], each value repeated for both channels of its pair.
std::pair<at::Tensor, at::Tensor> rope_1d(int64_t dim, int64_t max_seq_len, double theta) {
  auto f64 = at::TensorOptions().dtype(at::kDouble);
  auto exponents = at::arange(0, dim, 2, f64).slice(0, 0, dim / 2).div(static_cast<double>(dim));  // [dim/2]
  auto inv_freq = at::pow(theta, exponents).reciprocal();                                          // [dim/2]
  auto pos = at::arange(max_seq_len, f64);                                                         // [L]
  auto angles = at::outer(pos, inv_freq);                                                          // [L, dim/2]
  auto cos = angles.cos().repeat_interleave(2, 1).to(at::kFloat);                                  // [L, dim]
  auto sin = angles.sin().repeat_interleave(2, 1).to(at::kFloat);                                  // [L, dim]
  return {cos, sin};
}

}  // namespace

WanRotaryPosEmbed::WanRotaryPosEmbed(int64_t attention_head_dim, int64_t max_seq_len, double theta)
    : head_dim_(attention_head_dim), max_seq_len_(max_seq_len) {
  OMNI_CHECK(attention_head_dim > 0 && attention_head_dim % 2 == 0,
             "rotary embedding needs an even attention_head_dim, got ", attention_head_dim);
  const int64_t d = attention_head_dim;
  const int64_t h_dim = 2 * (d / 6);
  const int64_t t_dim = d - 2 * h_dim;
  std::vector<at::Tensor> cos_parts, sin_parts;
  for (int64_t dim : {t_dim, h_dim, h_dim}) {
    auto [c, s] = rope_1d(dim, max_seq_len, theta);
    cos_parts.push_back(c);
    sin_parts.push_back(s);
  }
  // diffusers (0.40) splits the concatenated table in forward() at the sizes it was built with, t_dim,
  // h_dim, h_dim; older versions split at d - 2*(d//3), d//3, d//3, which differs where d//3 != 2*(d//6)
  // (head dims 16, 64, ...; not 128, the released models'). The construction sizes are the parts themselves.
  for (int axis = 0; axis < 3; ++axis) {
    cos_[axis] = cos_parts[axis].contiguous();  // [L, part]
    sin_[axis] = sin_parts[axis].contiguous();  // [L, part]
  }
}

RotaryEmbedding WanRotaryPosEmbed::forward(int64_t frames, int64_t height, int64_t width,
                                           const at::Device& device) const {
  const auto key = std::make_tuple(frames, height, width, device.str());
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const int64_t sizes[3] = {frames, height, width};
  const char* axis_name[3] = {"frames", "height", "width"};
  for (int a = 0; a < 3; ++a) {
    OMNI_CHECK_USAGE(sizes[a] > 0 && sizes[a] <= max_seq_len_, "the video is ", sizes[a], " patches along ",
                     axis_name[a], ", outside the transformer's rope_max_seq_len (", max_seq_len_,
                     "); use a smaller size");
  }
  auto grid_table = [&](const std::array<at::Tensor, 3>& table) {
    // Each axis indexed by its own coordinate and broadcast over the other two, then concatenated.
    auto f = table[0].slice(0, 0, frames).to(device).view({frames, 1, 1, -1}).expand({frames, height, width, -1});
    auto h = table[1].slice(0, 0, height).to(device).view({1, height, 1, -1}).expand({frames, height, width, -1});
    auto w = table[2].slice(0, 0, width).to(device).view({1, 1, width, -1}).expand({frames, height, width, -1});
    return at::cat({f, h, w}, -1).reshape({frames * height * width, head_dim_});  // [S, d]
  };
  // diffusers' apply_rotary_emb reads cos at even and sin at odd channels; keep just those.
  auto cos = grid_table(cos_).slice(1, 0, head_dim_, 2).contiguous();    // [S, d/2]
  auto sin = grid_table(sin_).slice(1, 1, head_dim_, 2).contiguous();    // [S, d/2]
  auto cos_channels = cos.repeat_interleave(2, 1);                       // [S, d]: c0 c0 c1 c1 ...
  auto sin_signed = at::stack({-sin, sin}, -1).flatten(1).contiguous();  // [S, d]: -s0 s0 -s1 s1 ...
  if (cache_.size() >= 4) cache_.clear();                                // a run uses one or two grids; bound it anyway
  return cache_.emplace(key, RotaryEmbedding{cos, sin, cos_channels, sin_signed}).first->second;
}

at::Tensor apply_rotary_emb(const at::Tensor& x, const RotaryEmbedding& rope) {
  OMNI_CHECK(x.dim() == 4 && x.size(1) == rope.cos.size(0) && x.size(3) == 2 * rope.cos.size(1), "apply_rotary_emb: x ",
             x.sizes(), " does not match rope tables ", rope.cos.sizes());
  // diffusers: out[2i] = x[2i] cos_i - x[2i+1] sin_i, out[2i+1] = x[2i] sin_i + x[2i+1] cos_i, in float32.
  // Here as x * (c, c) + swap(x) * (-s, s), with swap exchanging each pair: the same products and the same
  // single addition per channel (a - b == a + (-b) exactly; a + b == b + a), so the same float32 result in
  // four kernels instead of eight. One rounding to x's dtype at the end, as diffusers' assignment into
  // empty_like(x) does.
  auto swapped = x.unflatten(-1, {x.size(3) / 2, 2}).flip(-1).flatten(-2);  // [B, S, H, d]: x1 x0 x3 x2 ...
  auto cos = rope.cos_channels.unsqueeze(1);                                // [S, 1, d]
  auto sin = rope.sin_signed.unsqueeze(1);                                  // [S, 1, d]
  return (x * cos).add_(swapped * sin).to(x.scalar_type());                 // [B, S, H, d]
}

}  // namespace omni::models
