#include "models/wan_time_text_embedding.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "dist/host_reads.h"

namespace omni::models {

at::Tensor timestep_sinusoid(const at::Tensor& timesteps, int64_t dim) {
  OMNI_CHECK(timesteps.dim() == 1, "timestep_sinusoid expects a 1-D tensor, got ", timesteps.sizes());
  OMNI_CHECK(dim % 2 == 0, "timestep_sinusoid expects an even dim, got ", dim);
  const int64_t half = dim / 2;
  auto opts = at::TensorOptions().dtype(at::kFloat).device(timesteps.device());
  // Same float32 operation order as diffusers: (-ln(10000) * i) / half, then exp.
  auto exponent = at::arange(0, half, opts).mul(-std::log(10000.0)).div(static_cast<double>(half));  // [half]
  auto freqs = exponent.exp();                                                                       // [half]
  auto angles = timesteps.to(at::kFloat).unsqueeze(1) * freqs.unsqueeze(0);                          // [N, half]
  return at::cat({angles.cos(), angles.sin()}, 1);                                                   // [N, dim]
}

TokenRuns TokenRuns::narrow(int64_t begin, int64_t count, int64_t* first) const {
  OMNI_CHECK(!empty() && begin >= 0 && count > 0 && begin + count <= tokens, "TokenRuns::narrow: tokens [", begin, ", ",
             begin + count, ") outside the ", tokens, " the runs cover");
  // The run holding `begin`: the last start at or before it.
  const auto it = std::upper_bound(starts.begin(), starts.end(), begin);
  *first = static_cast<int64_t>(it - starts.begin()) - 1;
  TokenRuns out;
  out.tokens = count;
  out.starts.push_back(0);
  for (auto s = it; s != starts.end() && *s < begin + count; ++s) out.starts.push_back(*s - begin);
  return out;
}

TokenRuns TokenRuns::of(const at::Tensor& timestep, at::Tensor* values) {
  OMNI_CHECK(timestep.dim() == 2 && timestep.size(1) > 0, "per-token timesteps must be [B, S], got ", timestep.sizes());
  // The runs are read on the host: per-token timesteps on a device would make every transformer call wait for it.
  OMNI_CHECK(timestep.is_cpu(), "per-token timesteps [B, S] come on the host (their runs are read there), got them on ",
             timestep.device());
  const auto t = timestep.to(at::kDouble).contiguous();  // [B, S]
  const int64_t batch = t.size(0), seq = t.size(1);
  const double* v = t.const_data_ptr<double>();
  TokenRuns runs;
  runs.tokens = seq;
  runs.starts.push_back(0);
  for (int64_t s = 1; s < seq; ++s) {
    for (int64_t b = 0; b < batch; ++b) {
      if (v[b * seq + s] != v[b * seq + s - 1]) {
        runs.starts.push_back(s);
        break;
      }
    }
  }
  *values = timestep.index_select(1, at::tensor(runs.starts, at::kLong));  // [B, R], on the host
  return runs;
}

WanTimeTextEmbedding::WanTimeTextEmbedding(int64_t dim, int64_t freq_dim, int64_t text_dim, int64_t image_dim,
                                           int64_t pos_embed_seq_len)
    : dim_(dim), freq_dim_(freq_dim) {
  // Registration order follows the checkpoint's module order; names are the checkpoint keys.
  time_linear_1_ = child("time_embedder.linear_1", std::make_unique<wan::Linear>(freq_dim, dim, ParamDtype::kFloat32));
  time_linear_2_ = child("time_embedder.linear_2", std::make_unique<wan::Linear>(dim, dim, ParamDtype::kFloat32));
  time_proj_ = child("time_proj", std::make_unique<wan::Linear>(dim, 6 * dim));
  text_linear_1_ = child("text_embedder.linear_1", std::make_unique<wan::Linear>(text_dim, dim));
  text_linear_2_ = child("text_embedder.linear_2", std::make_unique<wan::Linear>(dim, dim));
  if (image_dim > 0) {
    image_embedder_ = child("image_embedder", std::make_unique<WanImageEmbedding>(image_dim, dim, pos_embed_seq_len));
  }
}

ConditionEmbedding WanTimeTextEmbedding::forward(const at::Tensor& timestep, const at::Tensor& context,
                                                 at::ScalarType dtype, const at::Tensor& image) const {
  OMNI_CHECK(image.defined() == (image_embedder_ != nullptr),
             image_embedder_ ? "this transformer has a CLIP image branch: it needs the image encoder's states"
                             : "this transformer has no CLIP image branch, yet image states were given");
  OMNI_CHECK(timestep.dim() == 1 || timestep.dim() == 2, "timestep must be [B] or [B, S], got ", timestep.sizes());
  TokenRuns runs;
  at::Tensor t = timestep;                                      // [B], or [B, R]: one timestep per run
  if (timestep.dim() == 2) runs = TokenRuns::of(timestep, &t);  // on the host where the timesteps are
  t = dist::upload(t, context.device());
  auto sinusoid = timestep_sinusoid(t.flatten(), freq_dim_);                   // [B*R or B, freq_dim] float32
  if (t.dim() == 2) sinusoid = sinusoid.unflatten(0, {t.size(0), t.size(1)});  // [B, R, freq_dim]

  // Each batch row goes through its own products ([1, freq_dim], or [1, R, freq_dim] per run; [1, L, text_dim]),
  // as every product of the transformer does (wan::each_batch_row says why). For the time embedding this
  // matters on every CPU: one row is a GEMV, two a GEMM, which differ in float32 here and, amplified over the
  // steps, by 1e-2 in the latents of a full-width bfloat16 run.
  OMNI_CHECK(context.size(0) == sinusoid.size(0), "context has ", context.size(0), " rows, the timesteps ",
             sinusoid.size(0));
  std::vector<at::Tensor> temb_rows, proj_rows, text_rows;
  for (int64_t b = 0; b < sinusoid.size(0); ++b) {
    // time_embedder runs in float32 (kept so even in bfloat16 models); its output takes the activation dtype.
    auto row = sinusoid.narrow(0, b, 1);                                                    // [1(, R), freq_dim]
    auto temb = time_linear_2_->forward(at::silu(time_linear_1_->forward(row))).to(dtype);  // [1(, R), D]
    proj_rows.push_back(time_proj_->forward(at::silu(temb)));                               // [1(, R), 6D]
    temb_rows.push_back(std::move(temb));
    auto text = text_linear_1_->forward(context.narrow(0, b, 1).to(dtype));  // [1, L, D]
    text_rows.push_back(text_linear_2_->forward(at::gelu(text, "tanh")));    // [1, L, D]
  }
  auto temb = at::cat(temb_rows, 0);                           // [B(, R), D]
  auto proj = at::cat(proj_rows, 0).unflatten(-1, {6, dim_});  // [B(, R), 6, D]
  auto text = at::cat(text_rows, 0);                           // [B, L, D]
  at::Tensor context_image;
  if (image_embedder_) {
    // One video's image rows (one image, or first and last as one row): the same for every batch row.
    context_image = image_embedder_->forward(image.to(context.device()), dtype);  // [1, N, D]
    OMNI_CHECK(context_image.size(0) == 1, "the image states make ", context_image.size(0),
               " rows; one video's (one image, or first and last with the position table) make one");
    context_image = context_image.expand({text.size(0), context_image.size(1), context_image.size(2)});
  }
  return {temb, proj, text, context_image, std::move(runs)};
}

}  // namespace omni::models
