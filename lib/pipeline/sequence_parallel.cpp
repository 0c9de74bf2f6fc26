#include "pipeline/sequence_parallel.h"

#include <ATen/SDPBackend.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/torch_compat.h"
#include "dist/device_mesh.h"

namespace omni::pipeline {

using models::AttentionKind;

namespace {

int64_t sum_of(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

std::vector<int64_t> scaled(const std::vector<int64_t>& v, int64_t factor) {
  std::vector<int64_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] * factor;
  return out;
}

void check_bhsd(const at::Tensor& t, const char* who, const char* name) {
  OMNI_CHECK(t.defined() && t.dim() == 4, who, ": ", name, " must be [B, H, S, d], got ",
             t.defined() ? models::shape_str(t.sizes()) : std::string("undefined"));
}

PartialAttention run_ring_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                 RingKernel kernel, int64_t sq);

}  // namespace

std::vector<int64_t> token_chunks(int64_t seq, int parts) {
  OMNI_CHECK(parts >= 1 && seq >= 0, "token_chunks: ", seq, " tokens over ", parts, " parts");
  std::vector<int64_t> out(parts, seq / parts);
  for (int64_t i = 0; i < seq % parts; ++i) out[i] += 1;
  return out;
}

void check_ulysses_heads(int64_t heads, int ulysses) {
  if (ulysses >= 1 && heads % ulysses == 0) return;
  std::string divisors;
  for (int64_t i = 1; i <= heads; ++i)
    if (heads % i == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(i);
  OMNI_FAIL_USAGE("--ulysses-degree ", ulysses, " does not divide the transformer's ", heads,
                  " attention heads (Ulysses gives each rank heads / ulysses whole heads); use one of ", divisors,
                  ", or split the rest of the sequence with --ring-degree");
}

const char* ring_kernel_name(RingKernel kernel) {
  switch (kernel) {
    case RingKernel::kCpuFlash:
      return "cpu-flash";
    case RingKernel::kCudnn:
      return "cudnn";
    case RingKernel::kFlash:
      return "flash";
    case RingKernel::kEfficient:
      return "efficient";
    case RingKernel::kMath:
      return "math";
  }
  return "unknown";
}

RingKernel ring_kernel_for(c10::DeviceType device, at::ScalarType dtype, int64_t sdp_choice, int64_t head_dim) {
  // The CPU has one fused kernel with the log-sum-exp; it takes every floating dtype and head dim.
  if (device == c10::DeviceType::CPU) return RingKernel::kCpuFlash;
  if (device != c10::DeviceType::CUDA) return RingKernel::kMath;
  const bool half = dtype == at::kBFloat16 || dtype == at::kHalf;
  // The head dims the fused CUDA kernels share (flash: multiple of 8 up to 256); SDPA checks the finer limits.
  const bool fused_dim = head_dim > 0 && head_dim % 8 == 0 && head_dim <= 256;
  // When SDPA picks a fused kernel that cannot serve this dtype (it never should), the one that can.
  const RingKernel by_dtype = !fused_dim            ? RingKernel::kMath
                              : half                ? RingKernel::kFlash
                              : dtype == at::kFloat ? RingKernel::kEfficient
                                                    : RingKernel::kMath;
  switch (sdp_choice) {
    case static_cast<int64_t>(at::SDPBackend::cudnn_attention):
      return half && fused_dim ? RingKernel::kCudnn : by_dtype;
    case static_cast<int64_t>(at::SDPBackend::flash_attention):
      return half && fused_dim ? RingKernel::kFlash : by_dtype;
    case static_cast<int64_t>(at::SDPBackend::efficient_attention):
      return (half || dtype == at::kFloat) && fused_dim ? RingKernel::kEfficient : by_dtype;
    default:
      // math (fused kernels disabled or inapplicable), error, overrideable, or a value this build does not know.
      return RingKernel::kMath;
  }
}

RingKernel choose_ring_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale) {
  // SDPA's choice costs host checks on every call and could flip between blocks of one run (sizes, strides);
  // one kernel per (device, dtype, head dim) keeps a run's numerics uniform and the log to one line.
  using Key = std::tuple<int, int, int, int64_t>;
  static std::mutex mutex;
  static std::map<Key, RingKernel> chosen;
  const Key key{static_cast<int>(q.device().type()), q.device().index(), static_cast<int>(q.scalar_type()), q.size(3)};
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  std::string why;
  int64_t choice = static_cast<int64_t>(at::SDPBackend::error);
  if (q.is_cuda()) {
    choice = at::_fused_sdp_choice(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/false, scale,
                                   /*enable_gqa=*/false);
    why = "SDPA would run " + compat::sdp_backend_name(choice);
  } else if (q.is_cpu()) {
    why = "the CPU's fused kernel with log-sum-exp";
  } else {
    why = "no fused kernel with log-sum-exp on " + q.device().str();
  }
  const RingKernel kernel = ring_kernel_for(q.device().type(), q.scalar_type(), choice, q.size(3));
  chosen.emplace(key, kernel);
  OMNI_INFO("ring attention kernel: ", ring_kernel_name(kernel), " for ", q.device().str(), " ",
            dtype_name(q.scalar_type()), ", head dim ", q.size(3), " (", why, ")");
  return kernel;
}

at::Tensor normalize_lse(const at::Tensor& lse, int64_t sq) {
  OMNI_CHECK(lse.defined() && (lse.dim() == 3 || (lse.dim() == 4 && lse.size(3) == 1)) && lse.size(2) >= sq,
             "normalize_lse: expected [B, H, >= ", sq, "] or [B, H, >= ", sq, ", 1], got ",
             lse.defined() ? models::shape_str(lse.sizes()) : std::string("undefined"));
  auto out = lse.dim() == 4 ? lse.squeeze(3) : lse;  // [B, H, >= Sq]
  return out.narrow(2, 0, sq).to(at::kFloat);        // [B, H, Sq]
}

PartialAttention block_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale) {
  check_bhsd(q, "block_attention", "q");
  return block_attention(q, k, v, scale, choose_ring_kernel(q, k, v, scale));
}

PartialAttention block_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                 RingKernel kernel) {
  check_bhsd(q, "block_attention", "q");
  check_bhsd(k, "block_attention", "k");
  check_bhsd(v, "block_attention", "v");
  const int64_t sq = q.size(2), sk = k.size(2);
  OMNI_CHECK(sk > 0 && v.size(2) == sk, "block_attention: empty or mismatched key block (k ", k.sizes(), ", v ",
             v.sizes(), ")");
  // The kernel was chosen once, from the first call's tensors; the fused CUDA kernels want the head dim dense,
  // which a later block (a received buffer, a view of the local one) need not be.
  const bool fused_cuda =
      kernel == RingKernel::kCudnn || kernel == RingKernel::kFlash || kernel == RingKernel::kEfficient;
  auto dense = [&](const at::Tensor& t) { return fused_cuda && t.stride(3) != 1 ? t.contiguous() : t; };
  return run_ring_kernel(dense(q), dense(k), dense(v), scale, kernel, sq);
}

namespace {

// One block through `kernel`: [B, H, Sq, d] output (float32) and log-sum-exp [B, H, Sq].
PartialAttention run_ring_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                 RingKernel kernel, int64_t sq) {
  switch (kernel) {
    case RingKernel::kCpuFlash: {
      auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, /*dropout_p=*/0.0,
                                                                        /*is_causal=*/false, /*attn_mask=*/{}, scale);
      return {out.to(at::kFloat), normalize_lse(lse, sq)};  // [B, H, Sq, d], [B, H, Sq]
    }
    case RingKernel::kCudnn: {
      auto res = at::_scaled_dot_product_cudnn_attention(q, k, v, /*attn_bias=*/std::nullopt,
                                                         /*compute_log_sumexp=*/true, /*dropout_p=*/0.0,
                                                         /*is_causal=*/false, /*return_debug_mask=*/false, scale);
      // The log-sum-exp comes back as [B, H, Sq, 1].
      return {std::get<0>(res).to(at::kFloat), normalize_lse(std::get<1>(res), sq)};
    }
    case RingKernel::kFlash: {
      auto res = at::_scaled_dot_product_flash_attention(q, k, v, /*dropout_p=*/0.0, /*is_causal=*/false,
                                                         /*return_debug_mask=*/false, scale);
      return {std::get<0>(res).to(at::kFloat), normalize_lse(std::get<1>(res), sq)};  // lse [B, H, Sq]
    }
    case RingKernel::kEfficient: {
      auto res = at::_scaled_dot_product_efficient_attention(q, k, v, /*attn_bias=*/{}, /*compute_log_sumexp=*/true,
                                                             /*dropout_p=*/0.0, /*is_causal=*/false, scale);
      // The kernel pads the log-sum-exp rows to its tile size: [B, H, >= Sq].
      return {std::get<0>(res).to(at::kFloat), normalize_lse(std::get<1>(res), sq)};
    }
    case RingKernel::kMath:
      break;
  }
  return block_attention_math(q, k, v, scale);
}

}  // namespace

PartialAttention block_attention_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                      int64_t max_score_elements) {
  check_bhsd(q, "block_attention_math", "q");
  check_bhsd(k, "block_attention_math", "k");
  check_bhsd(v, "block_attention_math", "v");
  const int64_t batch = q.size(0), heads = q.size(1), sq = q.size(2), sk = k.size(2);
  OMNI_CHECK(sk > 0 && v.size(2) == sk, "block_attention_math: empty or mismatched key block (k ", k.sizes(), ", v ",
             v.sizes(), ")");
  // float32 throughout: the scores, the exponentials and the weighted sum, like the reference's softmax.
  const auto qf = q.to(at::kFloat);
  const auto kt = k.to(at::kFloat).transpose(-2, -1);  // [B, H, d, Sk]
  const auto vf = v.to(at::kFloat);                    // [B, H, Sk, dv]

  auto one_chunk = [&](const at::Tensor& qc) {
    auto scores = at::matmul(qc, kt).mul_(scale);  // [B, H, n, Sk]
    auto lse = at::logsumexp(scores, -1);          // [B, H, n]
    scores.sub_(lse.unsqueeze(-1)).exp_();         // block-normalized probabilities
    return PartialAttention{at::matmul(scores, vf), lse};
  };

  const int64_t rows = std::max<int64_t>(1, max_score_elements / std::max<int64_t>(1, batch * heads * sk));
  if (rows >= sq) return one_chunk(qf);
  PartialAttention res{at::empty({batch, heads, sq, v.size(3)}, qf.options()),  // [B, H, Sq, dv]
                       at::empty({batch, heads, sq}, qf.options())};            // [B, H, Sq]
  for (int64_t s0 = 0; s0 < sq; s0 += rows) {
    const int64_t s1 = std::min(sq, s0 + rows);
    auto part = one_chunk(qf.slice(2, s0, s1));
    res.out.slice(2, s0, s1).copy_(part.out);
    res.lse.slice(2, s0, s1).copy_(part.lse);
  }
  return res;
}

void merge_attention(PartialAttention& acc, const PartialAttention& block) {
  OMNI_CHECK(acc.out.sizes() == block.out.sizes() && acc.lse.sizes() == block.lse.sizes(),
             "merge_attention: partial results of different shapes (", acc.out.sizes(), " vs ", block.out.sizes(), ")");
  // softmax over K1 u K2 = (Z1 * out1 + Z2 * out2) / (Z1 + Z2) with Z = exp(lse): weights exp(lse_i - lse).
  auto lse = at::logaddexp(acc.lse, block.lse);               // [B, H, Sq]
  auto w_acc = (acc.lse - lse).exp_().unsqueeze(-1);          // [B, H, Sq, 1]
  auto w_block = (block.lse - lse).exp_().unsqueeze(-1);      // [B, H, Sq, 1]
  acc.out = acc.out.mul(w_acc).addcmul_(block.out, w_block);  // [B, H, Sq, d]
  acc.lse = lse;
}

// ---------------------------------------------------------------------------------------------------------
// Ring attention.

RingAttention::RingAttention(dist::ProcessGroup* ring, std::vector<int64_t> tokens_per_rank)
    : ring_(ring), tokens_(std::move(tokens_per_rank)) {
  const int size = ring ? ring->size() : 1;
  OMNI_CHECK(static_cast<int>(tokens_.size()) == size, "RingAttention: ", tokens_.size(),
             " token counts for a ring of ", size);
}

at::Tensor RingAttention::attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, AttentionKind kind) {
  if (kind == AttentionKind::kCross || !ring_ || ring_->size() == 1)
    return compat::scaled_dot_product_attention(q, k, v);
  check_bhsd(q, "RingAttention", "q");
  check_bhsd(k, "RingAttention", "k");
  const int size = ring_->size(), me = ring_->rank();
  const int next = (me + 1) % size, prev = (me + size - 1) % size;
  OMNI_CHECK(q.size(2) == tokens_[me] && k.size(2) == tokens_[me] && v.sizes() == k.sizes(), "RingAttention: rank ", me,
             " expected ", tokens_[me], " tokens, got q ", q.sizes(), ", k ", k.sizes(), ", v ", v.sizes());
  const int64_t batch = k.size(0), heads = k.size(1), d = k.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));

  // K and V travel together: one transfer per hop.
  at::Tensor kv = at::stack({k, v}).contiguous();  // [2, B, H, S_me, d]
  const RingKernel kernel = choose_ring_kernel(q, kv[0], kv[1], scale);
  PartialAttention acc;
  // At step t this rank holds the block that started on ring rank (me - t); it passes it on to `next`
  // while computing on it, and receives the block of (me - t - 1) from `prev`.
  for (int t = 0; t < size; ++t) {
    dist::WorkHandle work;
    at::Tensor incoming;
    if (t + 1 < size) {
      const int src = ((me - t - 1) % size + size) % size;
      incoming = at::empty({2, batch, heads, tokens_[src], d}, kv.options());  // [2, B, H, S_src, d]
      std::vector<int64_t> send(size, 0), recv(size, 0);
      send[next] = kv.numel();
      recv[prev] = incoming.numel();
      work = ring_->all_to_all_v(incoming, kv, send, recv);
    }
    auto part = block_attention(q, kv[0], kv[1], scale, kernel);
    if (t == 0) {
      acc = std::move(part);
    } else {
      merge_attention(acc, part);
    }
    if (work) {
      work->wait();
      kv = incoming;
    }
  }
  return acc.out.to(q.scalar_type());  // [B, H, S_me, d]
}

// ---------------------------------------------------------------------------------------------------------
// Ulysses attention.

UlyssesAttention::UlyssesAttention(dist::ProcessGroup* ulysses, std::vector<int64_t> tokens_per_rank,
                                   models::AttentionBackend* inner)
    : ulysses_(ulysses), tokens_(std::move(tokens_per_rank)), inner_(inner) {
  const int size = ulysses ? ulysses->size() : 1;
  OMNI_CHECK(static_cast<int>(tokens_.size()) == size, "UlyssesAttention: ", tokens_.size(),
             " token counts for a group of ", size);
}

at::Tensor UlyssesAttention::attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, AttentionKind kind) {
  auto core = [&](const at::Tensor& cq, const at::Tensor& ck, const at::Tensor& cv) {
    return inner_ ? inner_->attend(cq, ck, cv, kind) : compat::scaled_dot_product_attention(cq, ck, cv);
  };
  // Cross-attention: all heads of the whole text are here already; no exchange.
  if (kind == AttentionKind::kCross) return compat::scaled_dot_product_attention(q, k, v);
  if (!ulysses_ || ulysses_->size() == 1) return core(q, k, v);

  check_bhsd(q, "UlyssesAttention", "q");
  const int u = ulysses_->size(), me = ulysses_->rank();
  const int64_t batch = q.size(0), heads = q.size(1), s_me = q.size(2), d = q.size(3);
  check_ulysses_heads(heads, u);
  OMNI_CHECK(s_me == tokens_[me] && k.sizes() == q.sizes() && v.sizes() == q.sizes(), "UlyssesAttention: rank ", me,
             " expected ", tokens_[me], " tokens, got q ", q.sizes(), ", k ", k.sizes(), ", v ", v.sizes());
  const int64_t hl = heads / u;
  const int64_t seq = sum_of(tokens_);

  // Both exchanges move tokens in token-major layout, so that every rank's piece is one contiguous run and the
  // receive buffers are the results already. Full-size copies per block (q, k and v together count as one,
  // the output as one):
  //   in:  the pack into the send buffer; the exchange into the receive buffer, which is [S, 3, B, H/u, d] in
  //        sequence order (no cat), q/k/v being strided views of it.
  //   out: the pack into token-major [S, B, H/u, d], free when the core's output has that layout already (the
  //        CPU flash kernel writes q's layout, token-major here) or B == 1; the exchange; one
  //        permute into [B, S_me, H, d], which makes the caller's transpose(1, 2).flatten(2, 3) a view.
  // That is 2 + 2..3, against 4 + 4 before (stack, permute, exchange, cat; per-rank narrow + reshape, cat,
  // exchange, permute + reshape) and the caller's flatten copy.

  // 1. Sequence-sharded -> head-sharded, q, k and v in one exchange: rank j gets head group j of our tokens.
  const int64_t per_token = 3 * batch * hl * d;
  auto send = at::empty({u, s_me, 3, batch, hl, d}, q.options());  // [u, S_me, 3, B, H/u, d]
  const at::Tensor* qkv_in[] = {&q, &k, &v};
  for (int i = 0; i < 3; ++i) {
    auto grouped = qkv_in[i]->unflatten(1, {u, hl});            // [B, u, H/u, S_me, d], a view
    send.select(2, i).copy_(grouped.permute({1, 3, 0, 2, 4}));  // [u, S_me, B, H/u, d]
  }
  // Rank j's chunk [S_j, 3, B, H/u, d] lands after those of ranks < j: the buffer is in sequence order.
  auto recv = at::empty({seq, 3, batch, hl, d}, q.options());  // [S, 3, B, H/u, d]
  ulysses_->all_to_all_v(recv, send, std::vector<int64_t>(u, per_token * s_me), scaled(tokens_, per_token))->wait();
  send = at::Tensor();  // not needed during the attention core
  auto head_view = [&](int i) { return recv.select(1, i).permute({1, 2, 0, 3}); };  // [B, H/u, S, d]

  auto out = core(head_view(0), head_view(1), head_view(2));  // [B, H/u, S, d]

  // 2. Head-sharded -> sequence-sharded: rank j gets our heads for its tokens, one run of the token-major output.
  auto back_send = out.permute({2, 0, 1, 3}).contiguous();  // [S, B, H/u, d]
  const int64_t per_token_out = batch * hl * d;
  auto back = at::empty({u, s_me, batch, hl, d}, back_send.options());  // [u, S_me, B, H/u, d]
  ulysses_->all_to_all_v(back, back_send, scaled(tokens_, per_token_out), std::vector<int64_t>(u, per_token_out * s_me))
      ->wait();
  // contiguous(), not reshape(): with one head per rank reshape would return a strided view, leaving the copy
  // to the caller's flatten.
  auto result = back.permute({2, 1, 0, 3, 4}).contiguous().view({batch, s_me, heads, d});  // [B, S_me, H, d]
  return result.transpose(1, 2);                                                           // [B, H, S_me, d]
}

// ---------------------------------------------------------------------------------------------------------
// The sequence-parallel forward.

SequenceParallel SequenceParallel::from_groups(const dist::DeviceGroups& groups) {
  SequenceParallel sp;
  sp.ulysses = groups.get(dist::GroupKind::kUlysses);
  sp.ring = groups.get(dist::GroupKind::kRing);
  sp.sp = groups.get(dist::GroupKind::kSp);
  OMNI_CHECK(!sp.sp || sp.sp->rank() == sp.rank(), "sp group rank ", sp.sp ? sp.sp->rank() : 0,
             " is not ring_i * ulysses + ulysses_i = ", sp.rank());
  return sp;
}

SequenceSplit::SequenceSplit(const SequenceParallel& sp) : sp_(sp) {
  OMNI_CHECK(sp.degree() > 1, "SequenceSplit: sequence parallelism of degree ", sp.degree());
  OMNI_CHECK(sp.sp && sp.sp->size() == sp.degree() && sp.sp->rank() == sp.rank(), "SequenceSplit: the sp group (size ",
             sp.sp ? sp.sp->size() : 0, ", rank ", sp.sp ? sp.sp->rank() : -1, ") does not match ring ",
             sp.ring_degree(), " x ulysses ", sp.ulysses_degree(), " (rank ", sp.rank(), ")");
}

void SequenceSplit::check(const models::WanTransformerConfig& config, int64_t seq) {
  const int u = sp_.ulysses_degree(), n = sp_.degree();
  check_ulysses_heads(config.num_attention_heads, u);
  OMNI_CHECK_USAGE(seq >= n, "the latent video has ", seq, " transformer tokens, fewer than the sequence-parallel ",
                   "degree ", n, " (--ulysses-degree ", u, " x --ring-degree ", sp_.ring_degree(),
                   "); use a larger video or smaller degrees");
}

models::AttentionBackend* SequenceSplit::split(models::WanTransformerState& st) {
  const int u = sp_.ulysses_degree(), ring = sp_.ring_degree(), n = sp_.degree(), me = sp_.rank();
  const int64_t seq = st.tokens.size(1);
  chunks_ = token_chunks(seq, n);  // sp rank r = ring_i * u + ulysses_i holds chunk r
  const int64_t begin = dist::exclusive_offsets(chunks_)[me], count = chunks_[me];

  // Ulysses exchanges within this ring slot's u chunks; the ring passes whole slots.
  const int ring_i = me / u;
  std::vector<int64_t> ulysses_tokens(chunks_.begin() + ring_i * u, chunks_.begin() + (ring_i + 1) * u);
  std::vector<int64_t> ring_tokens(ring, 0);
  for (int i = 0; i < n; ++i) ring_tokens[i / u] += chunks_[i];
  ring_ = std::make_unique<RingAttention>(sp_.ring.get(), ring_tokens);
  ulysses_ = std::make_unique<UlyssesAttention>(sp_.ulysses.get(), ulysses_tokens, ring > 1 ? ring_.get() : nullptr);

  st.tokens = st.tokens.narrow(1, begin, count);  // [B, S_me, D]
  st.first_token = begin;                         // Animate's face adapters find each token's latent frame from it
  if (st.control.defined()) st.control = st.control.narrow(1, begin, count);  // VACE's context, split alike
  if (!st.runs.empty()) {  // this rank's runs of the per-token timesteps, and their e0 rows [B, R', 6, D]
    int64_t first = 0;
    st.runs = st.runs.narrow(begin, count, &first);
    st.first_run = first;  // the head's temb rows
    st.cond.timestep_proj = st.cond.timestep_proj.narrow(1, first, st.runs.size());
  }
  st.rope = st.rope.slice(begin, begin + count);  // [S_me, d/2]
  return u > 1 ? static_cast<models::AttentionBackend*>(ulysses_.get()) : ring_.get();
}

at::Tensor SequenceSplit::gather(const at::Tensor& x) {
  OMNI_CHECK(x.dim() == 3 && x.size(1) == chunks_.at(sp_.rank()), "SequenceSplit::gather: expected [B, ",
             chunks_.at(sp_.rank()), ", D], got ", x.sizes());
  const int64_t batch = x.size(0), dim = x.size(2), seq = sum_of(chunks_);
  // Token-major, so each rank's chunk is one contiguous run of the gathered buffer.
  auto local = x.transpose(0, 1).contiguous();                // [S_me, B, D]
  auto full = at::empty({seq, batch, dim}, local.options());  // [S, B, D]
  sp_.sp->all_gather_v(full, local, scaled(chunks_, batch * dim))->wait();
  return full.transpose(0, 1);  // [B, S, D]
}

}  // namespace omni::pipeline
