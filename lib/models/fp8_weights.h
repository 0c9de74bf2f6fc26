// Which parameters of a Wan transformer (--weight-dtype float8_e4m3fn) or of UMT5 (--text-encoder-weight-dtype
// float8_e4m3fn) are held in float8, and why the others are not: the table the loader (hsdp_sharding), the
// memory plan and the run's sidecar share. UMT5 follows the same rules: its q/k/v/o and wi_0/wi_1/wo weights of
// the blocks between the first and the last, by --fp8-layers family; its embedding, relative attention bias and
// layer norms stay in --dtype.
//
// Only Linear weights inside the blocks can be float8 (their matrix products dominate and tolerate a scale
// per output channel). Everything else stays in the run dtype:
//   - embeddings, norms, modulation tables, patch embedding, biases: small, and read by elementwise code
//     whose error would not be averaged by a long dot product;
//   - condition embedder and head (outside the blocks): run once per call, their error reaches every token;
//   - the first and last block: the entry and exit of the residual stream, the most sensitive to weight error
//     (ComfyUI and LightX2V keep them too);
//   - the layer families --fp8-layers leaves out (default: attention stays; vllm-omni#2920 got noise with
//     float8 everywhere and keeps the feed-forward layers only).
// A Linear weight the checkpoint already stores in float8_e4m3fn (ComfyUI's fp8_scaled files) is held in float8
// as stored, with the file's scales, whatever the flags say: its values are float8 already, so holding it in
// the run dtype would cost memory and gain nothing (the dequantized product is the same either way).
#pragma once

#include <c10/core/ScalarType.h>

#include <set>
#include <string>
#include <vector>

namespace omni::io {
class Checkpoint;
}

namespace omni::models {

// Which Linear weights of the blocks are held in float8 (--fp8-layers): the feed-forward ones, the attention
// ones, or both.
enum class Fp8Layers { kFfn, kAttention, kAll };

struct ParamRef;

struct WeightHolding {
  bool float8 = false;  // --weight-dtype float8_e4m3fn
  Fp8Layers layers = Fp8Layers::kFfn;
  std::set<std::string> stored_float8;  // our names of the weights the checkpoint stores in float8_e4m3fn
};

// `h` with the [out, in] weights `ckpt` stores in float8_e4m3fn (Checkpoint::float8_row_scales) as stored_float8.
WeightHolding with_stored_float8(WeightHolding h, const io::Checkpoint& ckpt);

// The number of numbered blocks ("blocks.<i>.", "encoder.block.<i>.") among `params`: the num_blocks below. Not
// the HSDP unit count, which also counts VACE blocks and Animate's face adapters.
int numbered_blocks(const std::vector<ParamRef>& params);

// Empty when `p` is held in float8 under `h` in a model of `num_blocks` blocks; else why it is not.
std::string float8_kept_reason(const ParamRef& p, const WeightHolding& h, int num_blocks);

// The dtype `p` is held in: float8_e4m3fn where float8_kept_reason is empty, else resolve_param_dtype.
at::ScalarType held_dtype(const ParamRef& p, at::ScalarType model_dtype, const WeightHolding& h, int num_blocks);

// Per-run switch of the float8 matrix product (--fp8-matmul): at::_scaled_mm with the weight's row scales and a
// per-token input scale, instead of dequantizing the weight to the activation dtype first. Process-wide, set
// by the pipeline before the first forward.
void set_fp8_matmul(bool on);
bool fp8_matmul();

}  // namespace omni::models
