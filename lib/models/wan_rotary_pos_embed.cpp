#include "models/wan_rotary_pos_embed.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <vector>

#include "core/error.h"
#include "core/torch_compat.h"

#ifdef OMNI_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "models/wan_rotary_pos_embed_cuda.h"
#endif

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
  auto cos = grid_table(cos_).slice(1, 0, head_dim_, 2).contiguous();  // [S, d/2]
  auto sin = grid_table(sin_).slice(1, 1, head_dim_, 2).contiguous();  // [S, d/2]
  if (cache_.size() >= 4) cache_.clear();                              // a run uses one or two grids; bound it anyway
  return cache_.emplace(key, RotaryEmbedding{cos, sin}).first->second;
}

RotaryEmbedding WanRotaryPosEmbed::at_positions(const at::Tensor& positions, const at::Device& device) const {
  OMNI_CHECK(
      positions.dim() == 2 && positions.size(1) == 3 && positions.scalar_type() == at::kLong && positions.is_cpu(),
      "rotary positions must be [S, 3] int64 on the host, got ", positions.sizes(), " ", positions.scalar_type());
  const at::Tensor magnitude = positions.abs();  // [S, 3]
  OMNI_CHECK(positions.size(0) == 0 || magnitude.max().item<int64_t>() < max_seq_len_, "a rotary position of ",
             magnitude.max().item<int64_t>(), " lies outside the transformer's table of ", max_seq_len_);
  std::vector<at::Tensor> cos_parts, sin_parts;
  for (int axis = 0; axis < 3; ++axis) {
    const at::Tensor index = magnitude.select(1, axis);  // [S]
    // Rotating by -|p| keeps the cosine and negates the sine.
    const at::Tensor sign = at::where(positions.select(1, axis) < 0, -1.0, 1.0).to(at::kFloat).unsqueeze(1);  // [S, 1]
    cos_parts.push_back(cos_[axis].index_select(0, index));         // [S, part]
    sin_parts.push_back(sin_[axis].index_select(0, index) * sign);  // [S, part]
  }
  // As forward(): cos at the even channels, sin at the odd ones of the concatenated [S, d] table.
  const at::Tensor cos = at::cat(cos_parts, 1).slice(1, 0, head_dim_, 2).contiguous();  // [S, d/2]
  const at::Tensor sin = at::cat(sin_parts, 1).slice(1, 1, head_dim_, 2).contiguous();  // [S, d/2]
  return {cos.to(device), sin.to(device)};
}

namespace {

// The rotation of one [B, S, H, d] tensor on the CPU: a loop over (token, head) rows. This file is compiled
// with -ffp-contract=off, so x1 * c - x2 * s is two roundings of products and one of the difference, as
// diffusers' separate kernels compute it.
template <typename T>
void rotate_cpu(const T* x, T* out, const float* cos, const float* sin, int64_t batch, int64_t seq, int64_t heads,
                int64_t half) {
  const int64_t rows = batch * seq * heads;
  at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t s = (row / heads) % seq;
      const T* xr = x + row * 2 * half;
      T* outr = out + row * 2 * half;
      const float* cr = cos + s * half;
      const float* sr = sin + s * half;
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = static_cast<float>(xr[2 * i]), x2 = static_cast<float>(xr[2 * i + 1]);
        const float a = x1 * cr[i], b = x2 * sr[i], c = x1 * sr[i], d = x2 * cr[i];
        outr[2 * i] = static_cast<T>(a - b);
        outr[2 * i + 1] = static_cast<T>(c + d);
      }
    }
  });
}

}  // namespace

at::Tensor apply_rotary_emb(const at::Tensor& x, const RotaryEmbedding& rope) {
  OMNI_CHECK(x.dim() == 4 && x.size(1) == rope.cos.size(0) && x.size(3) == 2 * rope.cos.size(1), "apply_rotary_emb: x ",
             x.sizes(), " does not match rope tables ", rope.cos.sizes());
  OMNI_CHECK(rope.cos.scalar_type() == at::kFloat && rope.sin.scalar_type() == at::kFloat && rope.cos.is_contiguous() &&
                 rope.sin.is_contiguous() && rope.cos.device() == x.device() && rope.sin.device() == x.device(),
             "apply_rotary_emb: the rope tables must be contiguous float32 on ", x.device());
  const auto xc = x.contiguous();  // [B, S, H, d]
  auto out = at::empty_like(xc);   // [B, S, H, d]
  compat::RecordedOp record("omni::apply_rotary_emb", {xc, rope.cos, rope.sin});
  const int64_t batch = xc.size(0), seq = xc.size(1), heads = xc.size(2), half = xc.size(3) / 2;
  if (xc.is_cuda()) {
#ifdef OMNI_WITH_CUDA
    auto dtype = cuda::RopeDtype::kFloat32;
    if (xc.scalar_type() == at::kBFloat16) {
      dtype = cuda::RopeDtype::kBFloat16;
    } else if (xc.scalar_type() == at::kHalf) {
      dtype = cuda::RopeDtype::kFloat16;
    } else {
      OMNI_CHECK(xc.scalar_type() == at::kFloat, "apply_rotary_emb: no CUDA kernel for ", xc.scalar_type());
    }
    const c10::cuda::CUDAGuard guard(xc.device());
    const int rc =
        cuda::launch_rotary(dtype, xc.const_data_ptr(), out.mutable_data_ptr(), rope.cos.const_data_ptr<float>(),
                            rope.sin.const_data_ptr<float>(), batch * seq * heads, seq, heads, half,
                            c10::cuda::getCurrentCUDAStream(xc.device().index()).stream());
    OMNI_CHECK(rc >= 0, "a CUDA kernel before RoPE failed (CUDA error ", -rc, ", reported asynchronously)");
    OMNI_CHECK(rc == 0, "apply_rotary_emb: the CUDA kernel did not launch (CUDA error ", rc, ")");
#else
    OMNI_FAIL("apply_rotary_emb: a CUDA tensor in a build without CUDA");
#endif
  } else {
    OMNI_CHECK(xc.is_cpu(), "apply_rotary_emb runs on the CPU or CUDA, not ", xc.device());
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, xc.scalar_type(), "apply_rotary_emb", [&] {
      rotate_cpu<scalar_t>(xc.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(),
                           rope.cos.const_data_ptr<float>(), rope.sin.const_data_ptr<float>(), batch, seq, heads, half);
    });
  }
  record.outputs(out);
  return out;
}

}  // namespace omni::models
