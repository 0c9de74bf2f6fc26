// Sequence parallelism for the Wan transformer (docs/DESIGN.md section 4): the token sequence of one video is split
// over the sp = ring x ulysses ranks, each rank running every block on its own contiguous token chunk.
//
// - Ulysses (DeepSpeed-Ulysses): around self-attention, one all-to-all turns q/k/v from sequence-sharded,
//   all heads [B, H, S_r, d] into head-sharded, all tokens [B, H/u, S, d]; the attention core runs on whole
//   sequences of H/u heads and a second all-to-all turns the result back. Needs heads % ulysses == 0.
// - Ring (ring attention): each rank keeps its queries; K/V blocks travel around the ring, one hop per step
//   (the next hop's transfer overlaps the current block's compute), and the per-block results are merged with
//   the log-sum-exp (online softmax) rule, which is exact up to float rounding.
// - USP (both): Ulysses inside (contiguous ranks), ring outside, on the head-sharded tensors.
//
// Cross-attention needs no communication: k/v are the whole text context, which every rank holds.
// Token chunks may differ by one token between ranks (S need not be divisible by the degree); the
// collectives carry per-rank counts.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "dist/process_group.h"
#include "models/module.h"
#include "models/wan_attention.h"
#include "models/wan_transformer.h"

namespace omni::dist {
class DeviceMesh;
}

namespace omni::pipeline {

// Sizes of `parts` contiguous chunks of `seq` tokens, as even as possible (the first seq % parts chunks hold
// one token more).
std::vector<int64_t> token_chunks(int64_t seq, int parts);

// Usage error (exit 2) unless the model's `heads` split evenly over `ulysses` ranks.
void check_ulysses_heads(int64_t heads, int ulysses);

// One attention result in mergeable form: `out` = softmax(q k^T * scale) v over some key block, normalized
// within that block, and `lse` = log(sum(exp(scores))) over the same block. Both float32.
struct PartialAttention {
  at::Tensor out;  // [B, H, Sq, d]
  at::Tensor lse;  // [B, H, Sq]
};

// The kernel ring attention runs on each key block: one that returns the log-sum-exp beside the output.
// kCpuFlash: LibTorch's CPU flash kernel. kCudnn: cuDNN's fused attention (the fastest on Hopper, what SDPA
// itself runs there). kFlash: the flash kernel (CUDA, bfloat16 / float16). kEfficient: the memory-efficient
// kernel (CUDA, also float32). kMath: block_attention_math, the explicit float32 composition.
enum class RingKernel { kCpuFlash, kCudnn, kFlash, kEfficient, kMath };

// "cpu-flash", "cudnn", "flash", "efficient", "math".
const char* ring_kernel_name(RingKernel kernel);

// The ring kernel for blocks of `dtype` and `head_dim` on `device`, given `sdp_choice`, the backend SDPA itself
// would run (at::_fused_sdp_choice: the int of at::SDPBackend; ignored on the CPU). Pure: SDPA's cuDNN, flash
// and memory-efficient choices map to those kernels where they apply to the dtype and head dim (else to flash
// for bfloat16 / float16, memory-efficient for float32), anything else (math, error, overrideable, unknown) and
// devices other than CPU and CUDA to kMath.
RingKernel ring_kernel_for(c10::DeviceType device, at::ScalarType dtype, int64_t sdp_choice, int64_t head_dim);

// The kernel for blocks like q/k/v: chosen once per process for each (device, dtype, head dim), by
// ring_kernel_for on SDPA's choice for these tensors, and logged (info) the first time with the reason.
RingKernel choose_ring_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale);

// A fused kernel's log-sum-exp as the merge wants it: [B, H, Sq] float32. Accepts [B, H, Sq] (flash),
// [B, H, Sq, 1] (cuDNN) and rows padded to a tile size, [B, H, >= Sq] (memory-efficient); `sq` is the query count.
at::Tensor normalize_lse(const at::Tensor& lse, int64_t sq);

// Attention of q [B, H, Sq, d] over one key block k/v [B, H, Sk, d] (Sk > 0) by `kernel` (default:
// choose_ring_kernel's). No score matrix is materialized except by kMath. `out` is the kernel's (rounded to
// q's dtype by the fused kernels), returned in float32 for the merge. q/k/v may be strided views (last
// dimension contiguous).
PartialAttention block_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale);
PartialAttention block_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                 RingKernel kernel);

// The same by explicit float32 matrix products, the reference composition (tests; and the fallback where
// no fused kernel applies). Queries are processed in chunks so that one chunk's float32 score matrix stays
// within `max_score_elements` (default 2^28, 1 GiB; at least one query row per chunk).
PartialAttention block_attention_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                      int64_t max_score_elements = int64_t{1} << 28);

// Folds `block` into `acc` (the online softmax): the result is what one softmax over the union of both key
// sets gives, up to float rounding. `acc` is updated in place.
void merge_attention(PartialAttention& acc, const PartialAttention& block);

// Ring attention over `ring` (null or size 1: local attention). `tokens_per_rank[i]` is the number of
// key/value tokens ring rank i holds (its query count too). Self-attention only; cross-attention is local.
// Every block runs on choose_ring_kernel's kernel.
class RingAttention : public models::AttentionBackend {
 public:
  RingAttention(dist::ProcessGroup* ring, std::vector<int64_t> tokens_per_rank);
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, models::AttentionKind kind) override;

 private:
  dist::ProcessGroup* ring_;
  std::vector<int64_t> tokens_;
};

// Ulysses attention over `ulysses` (null or size 1: passes self-attention to `inner`). `tokens_per_rank[i]`
// is the number of tokens ulysses rank i holds. The head-sharded self-attention core runs on `inner` when
// given (a RingAttention for USP), else locally. q/k/v may be any [B, H, S_me, d] views (the transformer hands
// over transposes of [B, S_me, H, d]); the core gets strided [B, H/u, S, d] views of the token-major receive
// buffer, and the result is a [B, H, S_me, d] view of a [B, S_me, H, d]-contiguous tensor, so that the
// caller's transpose(1, 2).flatten(2, 3) copies nothing.
class UlyssesAttention : public models::AttentionBackend {
 public:
  UlyssesAttention(dist::ProcessGroup* ulysses, std::vector<int64_t> tokens_per_rank,
                   models::AttentionBackend* inner = nullptr);
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, models::AttentionKind kind) override;

 private:
  dist::ProcessGroup* ulysses_;
  std::vector<int64_t> tokens_;
  models::AttentionBackend* inner_;
};

// This rank's place in sequence parallelism: the process groups (null: degree 1 on that axis). The sp group
// spans ring x ulysses with group rank ring_i * ulysses + ulysses_i (the DeviceMesh's order); it gathers
// the output tokens and is needed whenever degree() > 1.
struct SequenceParallel {
  std::shared_ptr<dist::ProcessGroup> ulysses;
  std::shared_ptr<dist::ProcessGroup> ring;
  std::shared_ptr<dist::ProcessGroup> sp;

  int ulysses_degree() const { return ulysses ? ulysses->size() : 1; }
  int ring_degree() const { return ring ? ring->size() : 1; }
  int degree() const { return ulysses_degree() * ring_degree(); }
  // Index in the sp group, which orders the token chunks.
  int rank() const { return (ring ? ring->rank() : 0) * ulysses_degree() + (ulysses ? ulysses->rank() : 0); }

  // The ulysses, ring and sp groups of `groups` (made with those kinds; those of degree 1 are null).
  static SequenceParallel from_groups(const dist::DeviceGroups& groups);
};

// WanTransformer3DModel::forward's token split over `sp` (ForwardHooks::tokens): sp rank r holds the r-th
// contiguous chunk of the tokens (token_chunks) with its per-token modulation and rope rows, attends through
// Ulysses / ring attention, and the chunks are all-gathered before the output head, so every rank returns
// the whole output. Collective over the sp group: every rank passes the same inputs. One object serves one
// forward call at a time (split() sizes it to that call's tokens).
class SequenceSplit : public models::TokenSplit {
 public:
  // `sp` must outlive this object; its degree is at least 2.
  explicit SequenceSplit(const SequenceParallel& sp);
  void check(const models::WanTransformerConfig& config, int64_t seq) override;
  models::AttentionBackend* split(models::WanTransformerState& state) override;
  at::Tensor gather(const at::Tensor& x) override;

 private:
  const SequenceParallel& sp_;
  std::vector<int64_t> chunks_;  // tokens per sp rank of the current call
  std::unique_ptr<RingAttention> ring_;
  std::unique_ptr<UlyssesAttention> ulysses_;
};

}  // namespace omni::pipeline
