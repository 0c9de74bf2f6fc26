// forward_bench: seconds, TFLOP/s and peak memory of one forward of each Wan2.2 model at the released sizes.
//
//   forward_bench [--device cpu|cuda] [--dtype bfloat16|float32] [--vae-dtype float32|bfloat16] [--tiny]
//                 [--only a14b,ti2v5b,vae21,vae22] [--warmup 2] [--iters 3] [--json FILE] [--self-check]
//                 [--wait-after-rows N] [--no-fp8]
//
// --wait-after-rows N: after the N-th row is written, wait until killed (for tests of a run cut short, such
// as tools/gpu/check.sh's forward_bench stage under its timeout: tests/e2e/gpu_check).
//
// Workloads (the anchors' sizes; --tiny: the generator's "small" preset on a few latent frames):
//   a14b    one T2V-A14B expert on 832x480x81 (latent 21x60x104, 32,760 tokens), text 512, batch 1 and 2
//           (batch 2: both CFG branches in one call);
//   ti2v5b  TI2V-5B on 1280x704x121 (latent 31x44x80, 27,280 tokens), per-token timesteps as image mode gives
//           them (two runs), batch 1 and 2;
//   vae21   Wan2.1 VAE decode of [1, 16, 21, 60, 104];  vae22  Wan2.2 VAE decode of [1, 48, 31, 44, 80].
// A14B in three weight modes at batch 1 (--no-fp8: the first only), labelled in the table's first column:
//   a14b                  the run dtype (--dtype), every weight as drawn;
//   a14b fp8-ffn dequant  --weight-dtype float8_e4m3fn with the default --fp8-layers ffn: the Linear weights that
//                         models::held_dtype puts in float8 (feed-forward layers of the blocks but the first and
//                         last) quantized in place, one float32 scale per output row (fp8::row_scales over the
//                         whole row, fp8::quantize: what shard_model's load does for a shard group of one), each
//                         dequantized to the activation dtype for its product;
//   a14b fp8-ffn matmul   the same weights with --fp8-matmul (models::set_fp8_matmul, reset after): at::_scaled_mm
//                         (CUDA), the float32 linear of the float8 values (CPU).
// Each row's "weights" figure (JSON weight_bytes) is the resident bytes of the weights, float8 row scales included.
// The float8 rows quantize the model built for the first row rather than load through models::shard_model: that
// needs a checkpoint on disk (28 GB for a full expert), and the forward is the same either way (Linear reads only
// its weight's dtype and its scale slot).
// Order: a14b (its three weight modes), ti2v5b and vae21 at batch 1 first, then vae22, a14b batch 2 and ti2v5b
// batch 2 (each model is built afresh for its batch-2 rows), so that a run cut short keeps the cheapest, most
// wanted rows.
// Models are built in memory from random weights drawn on the target device in the target dtype (a full
// A14B expert is 28 GB in bfloat16: no host copy, no checkpoint). The configs are the checkpoint generator's
// presets (make_preset), so the sizes here are the ones omni-make-checkpoint writes.
//
// FLOPs: transformers use the analytic count (transformer_flops); the VAE decoders the count of their actual
// convolution and attention calls, observed on the first warm-up run (FlopCounter), which also counts the
// transformers' matmuls so that --self-check can hold the analytic formula to what really ran.
// SDPA: the backend that at::_fused_sdp_choice picks (cudnn, flash, mem-efficient or math) for each distinct
// shape of scaled_dot_product_attention call seen in the first warm-up run, asked again on empty tensors of
// the same sizes, strides, dtype and device (transformers: self-attention, then cross-attention).
// Output, row by row as each is measured (a run killed midway keeps what it measured): a table row (flushed),
// a "forward_bench: {json}" line, and --json FILE rewritten (temp file + rename) so that it is always a valid
// JSON array of the rows so far ("[]" before the first).
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#ifdef OMNI_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"
#include "core/memory.h"
#include "core/timer.h"
#include "core/torch_compat.h"
#include "dist/device.h"
#include "generator/checkpoint_generator.h"
#include "models/autoencoder_kl_wan.h"
#include "models/fp8_weights.h"
#include "models/wan_transformer.h"

namespace {

using omni::dtype_name;
using omni::generator::CheckpointKind;
using omni::models::AutoencoderKLWan;
using omni::models::WanTransformer3DModel;
using omni::models::WanTransformerConfig;
using omni::models::WanVaeConfig;
using Json = nlohmann::ordered_json;  // keys in insertion order: "workload" first, for grep

// One line of progress on stdout, flushed so that a long run shows where it is.
template <typename... Args>
void say(const Args&... args) {
  std::cout << "forward_bench: " << omni::str_cat(args...) << std::endl;
}

// ---------------------------------------------------------------------------------------------------------
// FLOPs

// Multiply-adds x 2 of one WanTransformer3DModel forward, counting exactly the matmuls it runs (biases,
// norms, RoPE, activations and modulation are elementwise and left out). B batch, S video tokens after
// patching, L text tokens, D = heads x head_dim, F ffn_dim, P patch volume, T text_dim; Nt = B x R rows go
// through the time embedding, R = 1 (one timestep per sample) or the runs of equal per-token timesteps (TI2V
// with an image: 2, the conditioning frame's tokens and the rest; models::TokenRuns).
//   patch embedding  2 B S (C_in P) D            (a Conv3d with kernel == stride, run as a linear)
//   time embedding   2 Nt (freq_dim D + D D + D 6D)      time_embedder.linear_1/2, time_proj
//   text embedding   2 B L (T D + D D)           text_embedder.linear_1/2
//   per block        self q/k/v/o 4 x 2 B S D D; self softmax(q k^T) v 2 x 2 B S S D;
//                    cross q/o 2 x 2 B S D D, k/v 2 x 2 B L D D, scores and values 2 x 2 B S L D;
//                    FFN 2 x 2 B S D F
//   head             2 B S D (C_out P)            proj_out
int64_t transformer_flops(const WanTransformerConfig& c, int64_t batch, int64_t tokens, int64_t text_len,
                          int64_t timestep_runs) {
  const int64_t B = batch, S = tokens, L = text_len, D = c.inner_dim(), F = c.ffn_dim, P = c.patch_volume();
  const int64_t nt = B * timestep_runs;
  const int64_t block = 4 * 2 * B * S * D * D + 2 * 2 * B * S * S * D + 2 * 2 * B * S * D * D + 2 * 2 * B * L * D * D +
                        2 * 2 * B * S * L * D + 2 * 2 * B * S * D * F;
  return 2 * B * S * c.in_channels * P * D + 2 * nt * (c.freq_dim * D + D * D + D * 6 * D) +
         2 * B * L * (c.text_dim * D + D * D) + c.num_layers * block + 2 * B * S * D * c.out_channels * P;
}

// One distinct scaled_dot_product_attention call: what at::_fused_sdp_choice needs to choose again.
struct SdpaCall {
  std::vector<int64_t> q_sizes, q_strides, k_sizes, k_strides, v_sizes, v_strides;
  at::ScalarType dtype = at::kFloat;
  at::Device device = at::kCPU;
  std::optional<double> scale;
};

// FLOPs of the aten::linear (and aten::_scaled_mm), aten::scaled_dot_product_attention and aten::convolution calls made
// while it is alive on this thread, read from their input shapes by a RecordFunction observer (what the torch
// profiler's with_flops does). Every conv2d / conv3d reaches aten::convolution once; nested ops are not matched. The
// first few distinct attention calls (by sizes) are kept in `sdpa`.
class FlopCounter {
 public:
  FlopCounter() {
    active_ = this;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&FlopCounter::observe).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  }
  ~FlopCounter() {
    at::removeCallback(handle_);
    active_ = nullptr;
  }
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  int64_t linear = 0, attention = 0, conv = 0;
  std::vector<SdpaCall> sdpa;
  int64_t total() const { return linear + attention + conv; }

 private:
  static std::unique_ptr<at::ObserverContext> observe(const at::RecordFunction& fn) {
    FlopCounter* c = active_;
    const char* name = fn.name();
    const bool linear = std::strcmp(name, "aten::linear") == 0;
    const bool scaled_mm = std::strcmp(name, "aten::_scaled_mm") == 0;  // the float8 products (--fp8-matmul)
    // The feed-forward's first product with its GELU fused (CUDA): (bias, mat1 [M, in], mat2 [in, out], ...).
    const bool addmm_act = std::strcmp(name, "aten::_addmm_activation") == 0;
    const bool attention = std::strcmp(name, "aten::scaled_dot_product_attention") == 0;
    const bool conv = std::strcmp(name, "aten::convolution") == 0;
    // Only the matched ops: the dispatcher does not record every op's inputs.
    if (!c || !(linear || scaled_mm || addmm_act || attention || conv)) return nullptr;
    const auto in = fn.inputs();
    if (addmm_act) {
      if (in.size() >= 3 && in[1].isTensor() && in[2].isTensor()) {
        c->linear += 2 * in[1].toTensor().numel() * in[2].toTensor().size(1);
      }
      return nullptr;
    }
    if (in.size() < 3 || !in[0].isTensor() || !in[1].isTensor()) return nullptr;
    const at::Tensor& x = in[0].toTensor();
    const at::Tensor& w = in[1].toTensor();
    if (linear) {
      c->linear += 2 * x.numel() * w.size(0);  // x [..., in], w [out, in]
    } else if (scaled_mm) {
      c->linear += 2 * x.numel() * w.size(1);  // x [M, in], w [in, out]
    } else if (attention && in[2].isTensor()) {
      const at::Tensor& v = in[2].toTensor();  // q [..., Sq, d], k [..., Sk, d], v [..., Sk, dv]
      c->attention += 2 * (x.numel() / x.size(-1)) * w.size(-2) * (x.size(-1) + v.size(-1));
      const auto seen = [&](const SdpaCall& s) {
        return x.sizes() == at::IntArrayRef(s.q_sizes) && w.sizes() == at::IntArrayRef(s.k_sizes) &&
               v.sizes() == at::IntArrayRef(s.v_sizes);
      };
      if (c->sdpa.size() < 4 && std::none_of(c->sdpa.begin(), c->sdpa.end(), seen)) {
        // (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        std::optional<double> scale;
        if (in.size() > 6 && in[6].isDouble()) scale = in[6].toDouble();
        c->sdpa.push_back({x.sizes().vec(), x.strides().vec(), w.sizes().vec(), w.strides().vec(), v.sizes().vec(),
                           v.strides().vec(), x.scalar_type(), x.device(), scale});
      }
    } else if (conv && in.size() >= 9 && !in[6].toBool()) {
      // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups). A list of one
      // value applies to every spatial dim (conv3d's default dilation {1}). Wan has no transposed
      // convolutions, whose output size this formula would get wrong.
      const auto stride = in[3].toIntVector(), pad = in[4].toIntVector(), dil = in[5].toIntVector();
      const auto at = [](const std::vector<int64_t>& v, int64_t i) { return v.size() == 1 ? v[0] : v.at(i); };
      int64_t out_voxels = 1;
      for (int64_t i = 0; i + 2 < x.dim(); ++i) {
        const int64_t k = w.size(2 + i);
        out_voxels *= (x.size(2 + i) + 2 * at(pad, i) - at(dil, i) * (k - 1) - 1) / at(stride, i) + 1;
      }
      // 2 x C_in/groups x k^n multiply-adds per output value; w [C_out, C_in/groups, k...].
      c->conv += 2 * x.size(0) * w.size(0) * out_voxels * (w.numel() / w.size(0));
    }
    return nullptr;
  }

  static thread_local FlopCounter* active_;
  at::CallbackHandle handle_;
};
thread_local FlopCounter* FlopCounter::active_ = nullptr;

// ---------------------------------------------------------------------------------------------------------
// Options

struct Options {
  at::Device device = at::kCPU;
  at::ScalarType dtype = at::kBFloat16;
  at::ScalarType vae_dtype = at::kFloat;  // the pipeline's default (--vae-dtype of omni-generate)
  bool tiny = false;
  bool self_check = false;
  bool fp8 = true;  // the a14b float8 rows (--no-fp8: without)
  std::vector<std::string> only{"a14b", "ti2v5b", "vae21", "vae22"};
  int warmup = 2;
  int iters = 3;
  int wait_after_rows = 0;   // 0: never
  std::string fail_row;      // test only: the row of this label throws before it runs
  std::string float32_math;  // "tf32" or "ieee" (omni-generate's --tf32 off); empty: LibTorch's default
  std::string json_path;
  bool wants(const std::string& w) const { return std::find(only.begin(), only.end(), w) != only.end(); }
};

int parse_count(const std::string& flag, const std::string& v, int min) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  OMNI_CHECK_USAGE(!v.empty() && *end == '\0' && n >= min && n <= 1000, flag, " must be an integer in [", min,
                   ", 1000], got '", v, "'");
  return static_cast<int>(n);
}

constexpr const char* kUsage =
    "usage: forward_bench [--device cpu|cuda] [--dtype bfloat16|float32] [--vae-dtype float32|bfloat16] [--tiny] "
    "[--only a14b,ti2v5b,vae21,vae22] [--warmup N>=1] [--iters N] [--json FILE] [--self-check] "
    "[--wait-after-rows N] [--no-fp8] [--fail-row LABEL] [--float32-math tf32|ieee]";

Options parse(int argc, char** argv) {
  Options o;
  // CUDA timing and memory figures need the OMNI_WITH_CUDA code; without it a visible GPU is not used.
#ifdef OMNI_WITH_CUDA
  const bool gpu = at::hasCUDA();
#else
  const bool gpu = false;
#endif
  o.device = gpu ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tiny" || a == "--self-check") {
      (a == "--tiny" ? o.tiny : o.self_check) = true;
      continue;
    }
    if (a == "--no-fp8") {
      o.fp8 = false;
      continue;
    }
    OMNI_CHECK_USAGE(i + 1 < argc, a, ": unknown flag, or a flag without its value; ", kUsage);
    const std::string v = argv[++i];
    if (a == "--device") {
      OMNI_CHECK_USAGE(v == "cpu" || v == "cuda", "--device must be cpu or cuda, got '", v, "'");
      OMNI_CHECK_USAGE(v == "cpu" || gpu,
                       "--device cuda, but no CUDA GPU is visible (or the build has no OMNI_WITH_CUDA)");
      o.device = v == "cpu" ? at::Device(at::kCPU) : at::Device(at::kCUDA, 0);
    } else if (a == "--dtype") {
      o.dtype = omni::parse_dtype(v, a, {at::kBFloat16, at::kFloat});
    } else if (a == "--vae-dtype") {
      o.vae_dtype = omni::parse_dtype(v, a, {at::kBFloat16, at::kFloat});
    } else if (a == "--only") {
      o.only.clear();
      std::stringstream ss(v);
      for (std::string w; std::getline(ss, w, ',');) {
        OMNI_CHECK_USAGE(w == "a14b" || w == "ti2v5b" || w == "vae21" || w == "vae22", "--only: '", w,
                         "' is not one of a14b, ti2v5b, vae21, vae22");
        o.only.push_back(w);
      }
    } else if (a == "--warmup") {
      o.warmup = parse_count(a, v, 1);  // the first warm-up run also counts FLOPs and checks the output
    } else if (a == "--iters") {
      o.iters = parse_count(a, v, 1);
    } else if (a == "--wait-after-rows") {
      o.wait_after_rows = parse_count(a, v, 1);
    } else if (a == "--float32-math") {
      // float32 products and convolutions on CUDA: TF32 tensor cores or exact float32 (FFMA).
      OMNI_CHECK_USAGE(v == "tf32" || v == "ieee", "--float32-math must be tf32 or ieee, got '", v, "'");
      o.float32_math = v;
    } else if (a == "--fail-row") {
      o.fail_row = v;  // test only (tests/e2e/gpu_check): one row's failure must not end the others
    } else if (a == "--json") {
      // Checked now, not after a run of many minutes.
      const auto dir = std::filesystem::path(v).parent_path();
      OMNI_CHECK_USAGE(dir.empty() || std::filesystem::is_directory(dir), "--json ", v, ": no folder ", dir.string());
      o.json_path = v;
    } else {
      OMNI_FAIL_USAGE("unknown flag ", a, "; ", kUsage);
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------------------
// Device: synchronization, timing, peak memory

void synchronize(const at::Device& device) {
#ifdef OMNI_WITH_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#endif
}

// Seconds of one call of `fn`: CUDA events around it on the current stream (GPU time, launch overhead of
// the first kernel included), else a steady clock.
double time_call(const at::Device& device, const std::function<void()>& fn) {
#ifdef OMNI_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
    synchronize(device);
    start.record();
    fn();
    stop.record();
    stop.synchronize();
    return start.elapsed_time(stop) / 1e3;
  }
#endif
  omni::Timer timer;
  fn();
  return timer.seconds();
}

// Before each row: cached blocks of the previous model go back to the driver, and the peak restarts from
// what is allocated now (this model's weights and inputs).
void reset_peak_memory(const at::Device& device) {
#ifdef OMNI_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
  }
#endif
}

// CUDA: peak bytes allocated by the caching allocator since reset_peak_memory (weights included). CPU: the
// process's peak RSS, which cannot be reset (so it is the peak of this and every earlier row).
int64_t peak_memory(const at::Device& device) {
  return device.is_cuda() ? omni::dist::peak_device_bytes(device) : omni::peak_rss_bytes();
}

// ---------------------------------------------------------------------------------------------------------
// Models

// Random values for every parameter of `module` (except names starting with `skip`), drawn on `device` in
// the parameter's own dtype. Scales as the checkpoint generator's random_weights (which draws on the host in
// float32, too much for a 14B model): N(0, 1/fan_in) weights keep activations near unit scale through 40
// blocks (no overflow in bfloat16, no float32 denormals slowing the CPU), norm scales 1 + N(0, 0.02^2),
// biases N(0, 0.02^2), modulation tables N(0, 1/D).
void fill_random(const omni::models::Module& module, at::ScalarType dtype, const at::Device& device,
                 const std::string& skip = "") {
  for (const auto& p : module.parameters()) {
    if (!skip.empty() && p.name.compare(0, skip.size(), skip) == 0) continue;
    const auto opts = at::TensorOptions().device(device).dtype(omni::models::resolve_param_dtype(p.dtype_rule, dtype));
    at::Tensor t = at::empty(p.shape, opts);
    const std::string leaf = p.name.substr(p.name.rfind('.') + 1);  // whole name when it has no dot
    if (leaf == "gamma" || (leaf == "weight" && p.shape.size() == 1)) {
      t.normal_(1.0, 0.02);
    } else if (leaf == "bias" || p.shape.size() <= 1) {
      t.normal_(0.0, 0.02);
    } else if (leaf == "scale_shift_table") {
      t.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(p.shape.back())));
    } else {
      t.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(t.numel() / p.shape[0])));
    }
    *p.tensor = t;
  }
}

// The transformer's weights in each mode of the a14b rows.
enum class Weights { kRunDtype, kFp8Dequant, kFp8Matmul };

// The row label's suffix ("" for the run dtype) and the JSON "weights" value.
std::string weights_name(Weights w, at::ScalarType run_dtype) {
  switch (w) {
    case Weights::kFp8Dequant:
      return "fp8-ffn dequant";
    case Weights::kFp8Matmul:
      return "fp8-ffn matmul";
    case Weights::kRunDtype:
      break;
  }
  return dtype_name(run_dtype);
}

// Bytes of the weights as resident: every parameter as held, and the float32 row scales of float8 weights.
int64_t resident_weight_bytes(const omni::models::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) {
    if (p.tensor->defined()) total += p.tensor->numel() * static_cast<int64_t>(p.tensor->element_size());
    if (p.scale && p.scale->defined()) total += p.scale->numel() * static_cast<int64_t>(p.scale->element_size());
  }
  return total;
}

// --weight-dtype float8_e4m3fn on a model whose weights are in memory: each parameter that models::held_dtype
// puts in float8 under `holding` is quantized in place, with one float32 scale per output row (its slot
// ParamRef::scale), as FlatParamUnit's load does for a shard group of one: fp8::row_scales of each row's
// largest magnitude, fp8::quantize. Returns how many weights were quantized.
int quantize_in_place(const WanTransformer3DModel& model, const omni::models::WeightHolding& holding,
                      at::ScalarType dtype) {
  int n = 0;
  for (const auto& p : model.parameters()) {
    if (omni::models::held_dtype(p, dtype, holding, model.num_blocks()) != at::kFloat8_e4m3fn) continue;
    OMNI_CHECK(p.scale && p.tensor->defined() && p.tensor->dim() == 2, p.name, ": not a loaded Linear weight");
    const at::Tensor w = *p.tensor;                                                   // [out, in]
    const at::Tensor scales = omni::fp8::row_scales(w.abs().amax(1).to(at::kFloat));  // [out] float32
    *p.tensor = omni::fp8::quantize(w, scales.unsqueeze(1));                          // [out, in] float8_e4m3fn
    *p.scale = scales;
    ++n;
  }
  return n;
}

// models::set_fp8_matmul for one scope: the switch is process-wide, and rows after this one must not see it.
class Fp8MatmulScope {
 public:
  explicit Fp8MatmulScope(bool on) : was_(omni::models::fp8_matmul()) { omni::models::set_fp8_matmul(on); }
  ~Fp8MatmulScope() { omni::models::set_fp8_matmul(was_); }
  Fp8MatmulScope(const Fp8MatmulScope&) = delete;
  Fp8MatmulScope& operator=(const Fp8MatmulScope&) = delete;

 private:
  bool was_;
};

// A video size (frames x height x width) and its latent grid under a VAE's scale factors.
struct Clip {
  int64_t frames, height, width;
  std::vector<int64_t> latent(const WanVaeConfig& v, int64_t batch, int64_t channels) const {
    OMNI_CHECK((frames - 1) % v.scale_factor_temporal == 0 && height % v.scale_factor_spatial == 0 &&
                   width % v.scale_factor_spatial == 0,
               "clip ", width, "x", height, "x", frames, " does not fit the VAE's strides");
    return {batch, channels, 1 + (frames - 1) / v.scale_factor_temporal, height / v.scale_factor_spatial,
            width / v.scale_factor_spatial};  // [B, C, T, h, w]
  }
  std::string str() const { return omni::str_cat(width, "x", height, "x", frames); }
};

// ---------------------------------------------------------------------------------------------------------
// Running and reporting

struct Row {
  std::string workload, shape, latent;  // video W x H x F; latent [B, C, T, h, w]
  int64_t batch = 1, tokens = 0;        // tokens: transformers only
  at::ScalarType dtype = at::kFloat;
  int64_t weight_bytes = 0;
  std::vector<double> seconds{};  // timed runs
  int64_t flops = 0, flops_counted = 0, peak_bytes = 0;
  std::vector<Json> sdpa{};  // one per distinct attention call: shapes and the backend chosen
  std::string weights{};     // the a14b rows' weight mode (weights_name); empty: the run dtype, no suffix
  // The table's first column: the workload, and the weight mode where it is not the run dtype.
  std::string label() const { return weights.empty() ? workload : workload + " " + weights; }
  double median() const {
    auto s = seconds;
    std::sort(s.begin(), s.end());
    const size_t n = s.size();
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }
  // The backends of the attention calls in call order, each named once: "flash", "cudnn/flash", "-" (none).
  std::string sdpa_backends() const {
    std::vector<std::string> names;
    for (const auto& c : sdpa) {
      const std::string b = c.at("backend").get<std::string>();
      if (std::find(names.begin(), names.end(), b) == names.end()) names.push_back(b);
    }
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : "/") + n;
    return out.empty() ? "-" : out;
  }
};

// The backend SDPA picks for this call, asked on empty tensors of its sizes, strides, dtype and device.
Json sdpa_choice(const SdpaCall& c) {
  const auto opts = at::TensorOptions().device(c.device).dtype(c.dtype);
  std::string backend;
  try {
    const at::Tensor q = at::empty_strided(c.q_sizes, c.q_strides, opts);
    const at::Tensor k = at::empty_strided(c.k_sizes, c.k_strides, opts);
    const at::Tensor v = at::empty_strided(c.v_sizes, c.v_strides, opts);
    backend =
        omni::compat::sdp_backend_name(at::_fused_sdp_choice(q, k, v, /*attn_mask=*/{}, 0.0, false, c.scale, false));
  } catch (const std::exception& e) {
    backend = "error";
    say("warning: _fused_sdp_choice failed: ", std::string(e.what()).substr(0, 200));
  }
  return Json{{"q", omni::str_cat(at::IntArrayRef(c.q_sizes))},
              {"k", omni::str_cat(at::IntArrayRef(c.k_sizes))},
              {"dtype", dtype_name(c.dtype)},
              {"backend", backend}};
}

// Warm-up runs (the first one under a FlopCounter, its output checked by `check`), then timed runs. `flops`
// < 0 takes the counted figure (the VAE).
Row run_workload(Row row, const Options& o, int64_t flops, const std::function<at::Tensor()>& fn,
                 const std::function<void(const at::Tensor&)>& check) {
  say(row.label(), " ", row.shape, " batch ", row.batch, ": ", o.warmup, " warm-up + ", o.iters, " timed runs");
  OMNI_CHECK(row.label() != o.fail_row, "--fail-row ", o.fail_row, ": this row fails, as asked");
  synchronize(o.device);
  reset_peak_memory(o.device);
  std::vector<SdpaCall> calls;  // the attention calls of the first warm-up run
  for (int i = 0; i < o.warmup; ++i) {
    if (i == 0) {
      at::Tensor out;
      {
        FlopCounter counter;
        out = fn();
        row.flops_counted = counter.total();
        calls = counter.sdpa;
      }
      check(out);
    } else {
      fn();
    }
  }
  for (int i = 0; i < o.iters; ++i) row.seconds.push_back(time_call(o.device, [&] { fn(); }));
  row.peak_bytes = peak_memory(o.device);
  // The backend SDPA picks for each attention call, asked after the peak is read (its probe tensors are as large
  // as the call's q, k and v).
  for (const auto& c : calls) row.sdpa.push_back(sdpa_choice(c));
  say(row.label(), " batch ", row.batch, ": SDPA backend ", row.sdpa_backends(), " (", o.device.str(), ")");
  for (const auto& c : row.sdpa) {
    say("  attention q ", c.at("q").get<std::string>(), " k ", c.at("k").get<std::string>(), " ",
        c.at("dtype").get<std::string>(), ": ", c.at("backend").get<std::string>());
  }
  row.flops = flops < 0 ? row.flops_counted : flops;
  OMNI_CHECK(row.flops > 0, row.workload, ": no FLOPs counted (did the model's ops change names?)");
  return row;
}

Json to_json(const Row& r, const Options& o) {
  const double med = r.median();
  return Json{{"workload", r.workload},
              {"label", r.label()},
              {"weights", r.weights.empty() ? dtype_name(r.dtype) : r.weights},
              {"shape", r.shape},
              {"latent", r.latent},
              {"batch", r.batch},
              {"tokens", r.tokens},
              {"dtype", dtype_name(r.dtype)},
              {"device", o.device.str()},
              {"warmup", o.warmup},
              {"seconds", med},
              {"seconds_all", r.seconds},
              {"flops", r.flops},
              {"flops_counted", r.flops_counted},
              {"tflops_per_s", r.flops / med / 1e12},
              {"peak_memory_bytes", r.peak_bytes},
              {"peak_memory_kind", o.device.is_cuda() ? "cuda_allocated_peak" : "process_peak_rss"},
              {"weight_bytes", r.weight_bytes},
              {"sdpa_backend", r.sdpa_backends()},
              {"sdpa_calls", r.sdpa}};
}

// Each row as soon as it is measured: the table's header before the first, the row (flushed), its JSON line,
// and the --json file rewritten whole through a temporary file and a rename, so that it is valid JSON holding
// the rows so far whenever the run is killed.
class Reporter {
 public:
  explicit Reporter(const Options& o) : o_(o) { write_json(); }

  void add(const Row& r) {
    if (all_.empty()) {
      std::printf("\n| %-20s | %-14s | %5s | %-9s | %7s | %10s | %10s | %9s | %11s | %11s | %-13s |\n", "workload",
                  "shape", "batch", "dtype", "tokens", "ms/forward", "TFLOP", "TFLOP/s", "weights",
                  o_.device.is_cuda() ? "peak alloc" : "peak RSS", "SDPA");
      std::printf(
          "|----------------------|----------------|-------|-----------|---------|------------|------------|"
          "-----------|-------------|-------------|---------------|\n");
    }
    const double med = r.median();
    std::printf("| %-20s | %-14s | %5s | %-9s | %7s | %10.2f | %10.4f | %9.3f | %11s | %11s | %-13s |\n",
                r.label().c_str(), r.shape.c_str(), std::to_string(r.batch).c_str(), dtype_name(r.dtype),
                r.tokens ? std::to_string(r.tokens).c_str() : "-", med * 1e3, r.flops / 1e12, r.flops / med / 1e12,
                omni::format_bytes(r.weight_bytes).c_str(), omni::format_bytes(r.peak_bytes).c_str(),
                r.sdpa_backends().c_str());
    std::fflush(stdout);
    all_.push_back(to_json(r, o_));
    std::cout << "forward_bench: " << all_.back().dump() << std::endl;
    write_json();
    if (o_.wait_after_rows > 0 && all_.size() == static_cast<size_t>(o_.wait_after_rows)) {
      say("--wait-after-rows ", o_.wait_after_rows, ": waiting to be killed");
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  // A row that threw: a table line and a JSON entry with its error, so the rows after it still run and a
  // reader sees which one failed and why (the program exits non-zero at the end).
  void fail(const std::string& label, int64_t batch, const std::string& error) {
    ++failures_;
    std::string one_line = error.substr(0, error.find('\n'));
    std::printf("| %-20s | FAILED (batch %s): %s\n", label.c_str(), std::to_string(batch).c_str(),
                one_line.substr(0, 200).c_str());
    std::fflush(stdout);
    all_.push_back(Json{{"label", label}, {"batch", batch}, {"device", o_.device.str()}, {"error", one_line}});
    std::cout << "forward_bench: " << all_.back().dump() << std::endl;
    write_json();
  }
  size_t rows() const { return all_.size(); }
  int failures() const { return failures_; }

 private:
  void write_json() const {
    if (o_.json_path.empty()) return;
    const std::string tmp = o_.json_path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << all_.dump(2) << "\n";
      f.close();
      OMNI_CHECK_USAGE(f.good(), "cannot write --json ", tmp);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, o_.json_path, ec);
    OMNI_CHECK_USAGE(!ec, "cannot rename ", tmp, " to ", o_.json_path, ": ", ec.message());
  }

  const Options& o_;
  Json all_ = Json::array();
  int failures_ = 0;
};

void check_output(const at::Tensor& out, at::IntArrayRef expected, const std::string& what) {
  OMNI_CHECK(out.sizes() == expected, what, ": output ", out.sizes(), ", expected ", expected);
  OMNI_CHECK(at::isfinite(out).all().item<bool>(), what, ": output has non-finite values");
  say(what, ": output ", out.sizes(), " is finite");
}

// One transformer row per entry of `runs` (batch size, weight mode), in order, on one model built for them. The
// first float8 mode quantizes the model in place (for good: the run-dtype rows must come first).
struct TransformerRun {
  int64_t batch = 1;
  Weights weights = Weights::kRunDtype;
};
void bench_transformer(const std::string& name, CheckpointKind kind, const Clip& clip, bool per_token_timestep,
                       const std::vector<TransformerRun>& runs, const Options& o, Reporter& report) {
  const auto spec = omni::generator::make_preset(kind, o.tiny ? "small" : "full");
  const auto cfg = WanTransformerConfig::from_json(omni::generator::transformer_config_json(spec), "preset");
  const auto vae = WanVaeConfig::from_json(omni::generator::vae_config_json(spec), "preset");
  const int64_t text_len = o.tiny ? 16 : 512;
  WanTransformer3DModel model(cfg, o.dtype);
  at::manual_seed(0);
  fill_random(model, o.dtype, o.device);
  const auto f32 = at::TensorOptions().device(o.device).dtype(at::kFloat);
  bool quantized = false;
  for (const auto& r : runs) {
    const int64_t batch = r.batch;
    const std::string label = r.weights == Weights::kRunDtype ? name : name + " " + weights_name(r.weights, o.dtype);
    try {
      c10::InferenceMode no_grad;
      if (r.weights != Weights::kRunDtype && !quantized) {
        // --weight-dtype float8_e4m3fn, --fp8-layers ffn (the default).
        const omni::models::WeightHolding holding{true, omni::models::Fp8Layers::kFfn, {}};
        const int64_t before = resident_weight_bytes(model);
        const int n = quantize_in_place(model, holding, o.dtype);
        synchronize(o.device);
        say(name, ": ", n, " Linear weights quantized to float8_e4m3fn (fp8-layers ffn); weights ",
            omni::format_bytes(before), " -> ", omni::format_bytes(resident_weight_bytes(model)));
        quantized = true;
      }
      OMNI_CHECK(r.weights != Weights::kRunDtype || !quantized, name, ": a run-dtype row after a float8 one");
      const Fp8MatmulScope fp8_matmul(r.weights == Weights::kFp8Matmul);
      const auto shape = clip.latent(vae, batch, cfg.in_channels);  // [B, C, T, h, w]
      const at::Tensor latents = at::randn(shape, f32).to(o.dtype);
      const at::Tensor text = at::randn({batch, text_len, cfg.text_dim}, f32).to(o.dtype);  // [B, L, text_dim]
      const int64_t seq = cfg.token_count(shape[2], shape[3], shape[4]);
      // TI2V (expand_timesteps): one timestep per token, [B, S]; the A14B experts: one per sample, [B]. The
      // model rejects a per-token timestep of another length, so the count is the one its patching gives.
      // TI2V's per-token timesteps as its image mode gives them: 0 on the first latent frame's tokens, t on the
      // rest (two runs).
      at::Tensor t = at::full({batch}, 500.0, f32);
      if (per_token_timestep) {
        t = at::full({batch, seq}, 500.0, at::kFloat);  // on the host, as the pipeline gives them (their runs)
        const int64_t frame_tokens = seq / (shape[2] / cfg.patch_size[0]);  // tokens of one latent frame
        t.narrow(1, 0, frame_tokens).zero_();
      }
      say(name, " latent ", latents.sizes(), " -> ", seq, " tokens (patch ", cfg.patch_size[0], "x", cfg.patch_size[1],
          "x", cfg.patch_size[2], ")");
      Row row{name, clip.str(), omni::str_cat(latents.sizes()), batch, seq, o.dtype, resident_weight_bytes(model)};
      if (r.weights != Weights::kRunDtype) row.weights = weights_name(r.weights, o.dtype);
      const int64_t flops = transformer_flops(cfg, batch, seq, text_len, per_token_timestep ? 2 : 1);
      row = run_workload(
          row, o, flops, [&] { return model.forward(latents, t, text); },
          [&](const at::Tensor& out) { check_output(out, latents.sizes(), row.label()); });
      // The analytic formula must describe what ran: the observer saw every matmul of this forward.
      if (row.flops_counted != flops) {
        OMNI_CHECK(!o.self_check, row.label(), ": analytic FLOPs ", flops, " != counted ", row.flops_counted);
        say("warning: ", row.label(), " analytic FLOPs ", flops, " != counted ", row.flops_counted);
      }
      report.add(row);
    } catch (const std::exception& e) {
      // One row's failure (a float8 product's check, an out-of-memory, a kernel error) ends that row alone.
      say(label, " batch ", batch, " failed: ", e.what());
      report.fail(label, batch, e.what());
    }
  }
}

void bench_vae(const std::string& name, CheckpointKind kind, const Clip& clip, const Options& o, Reporter& report) {
  const auto spec = omni::generator::make_preset(kind, o.tiny ? "small" : "full");
  const auto cfg = WanVaeConfig::from_json(omni::generator::vae_config_json(spec), "preset");
  AutoencoderKLWan vae(cfg);
  at::manual_seed(1);
  // decode() never runs the encoder: leaving it empty keeps the peak the decoder's own.
  fill_random(vae, o.vae_dtype, o.device, "encoder.");
  c10::InferenceMode no_grad;
  const auto shape = clip.latent(cfg, 1, cfg.z_dim);  // [1, z, T, h, w]
  const at::Tensor latents = at::randn(shape, at::TensorOptions().device(o.device)).to(o.vae_dtype);
  Row row{name, clip.str(), omni::str_cat(latents.sizes()), 1, 0, o.vae_dtype, vae.parameter_bytes()};
  const std::vector<int64_t> video{1, cfg.video_channels(), clip.frames, clip.height, clip.width};  // [1, 3, F, H, W]
  report.add(run_workload(
      row, o, -1, [&] { return vae.decode(latents); }, [&](const at::Tensor& out) { check_output(out, video, name); }));
}

// The analytic count against a number worked out by hand, on the "small" preset's transformer at the tiny
// a14b size (B 1, S 72, L 16, D 128, F 256, C 16, P 4, freq 256, text 64, 4 layers):
//   patch 2*72*64*128 = 1,179,648; time 2*(256*128 + 128*128 + 128*768) = 294,912;
//   text 2*16*(64*128 + 128*128) = 786,432; head 2*72*128*64 = 1,179,648;
//   block: 8*72*128^2 = 9,437,184 + 4*72^2*128 = 2,654,208 + 4*72*128^2 = 4,718,592 + 4*16*128^2 = 1,048,576
//          + 4*72*16*128 = 589,824 + 4*72*128*256 = 9,437,184, = 27,885,568, x 4 = 111,542,272;
//   total 114,982,912. Two runs of per-token timesteps add 2*(2-1)*(256*128 + 128*128 + 128*768) = 294,912.
void self_check_flops() {
  WanTransformerConfig c;
  c.num_attention_heads = 8;
  c.attention_head_dim = 16;
  c.ffn_dim = 256;
  c.num_layers = 4;
  c.text_dim = 64;
  const int64_t scalar = transformer_flops(c, 1, 72, 16, 1);
  const int64_t per_token = transformer_flops(c, 1, 72, 16, 2);
  OMNI_CHECK(scalar == 114982912, "self-check: transformer_flops gave ", scalar, ", by hand 114982912");
  OMNI_CHECK(per_token == 114982912 + 294912, "self-check: two-run transformer_flops gave ", per_token, ", by hand ",
             114982912 + 294912);
  say("self-check: the analytic FLOP count matches the hand count (", scalar, ")");
}

int run(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--help") == 0) {
    std::cout << kUsage << "\n";
    return 0;
  }
  const Options o = parse(argc, argv);
  say("device ", o.device.str(), ", dtype ", dtype_name(o.dtype), ", VAE dtype ", dtype_name(o.vae_dtype),
      o.tiny ? ", tiny sizes" : "");
  if (o.self_check) self_check_flops();
  if (!o.float32_math.empty())
    omni::dist::set_float32_math(o.float32_math == "tf32" ? omni::dist::Float32Math::kTf32
                                                          : omni::dist::Float32Math::kIeee);
  say("float32 math on CUDA: ", omni::dist::float32_math());
  // Tiny clips: a few latent frames of the "small" preset, enough to run every code path (temporal cache).
  const Clip a14b_clip = o.tiny ? Clip{9, 64, 96} : Clip{81, 480, 832};
  const Clip ti2v_clip = o.tiny ? Clip{5, 64, 128} : Clip{121, 704, 1280};
  Reporter report(o);  // writes "[]" to --json now
  // Batch 1 of a14b (its float8 rows right after it, on the same model), ti2v5b and vae21 first; vae22 and the
  // batch-2 rows last.
  std::vector<TransformerRun> a14b_1{{1, Weights::kRunDtype}};
  if (o.fp8) {
    a14b_1.push_back({1, Weights::kFp8Dequant});
    a14b_1.push_back({1, Weights::kFp8Matmul});
  }
  // A workload that fails before its rows run (building or filling its model) is reported as one failed row.
  const auto guarded = [&](const std::string& label, int64_t batch, const std::function<void()>& bench) {
    if (!o.wants(label)) return;
    try {
      bench();
    } catch (const std::exception& e) {
      say(label, " batch ", batch, " failed: ", e.what());
      report.fail(label, batch, e.what());
    }
  };
  guarded("a14b", 1, [&] { bench_transformer("a14b", CheckpointKind::kT2vA14b, a14b_clip, false, a14b_1, o, report); });
  guarded("ti2v5b", 1,
          [&] { bench_transformer("ti2v5b", CheckpointKind::kTi2v5b, ti2v_clip, true, {{1}}, o, report); });
  guarded("vae21", 1, [&] { bench_vae("vae21", CheckpointKind::kT2vA14b, a14b_clip, o, report); });
  guarded("vae22", 1, [&] { bench_vae("vae22", CheckpointKind::kTi2v5b, ti2v_clip, o, report); });
  guarded("a14b", 2, [&] { bench_transformer("a14b", CheckpointKind::kT2vA14b, a14b_clip, false, {{2}}, o, report); });
  guarded("ti2v5b", 2,
          [&] { bench_transformer("ti2v5b", CheckpointKind::kTi2v5b, ti2v_clip, true, {{2}}, o, report); });
  std::printf("\n");
  say("done: ", report.rows() - report.failures(), " rows measured, ", report.failures(), " failed",
      o.json_path.empty() ? "" : ", JSON in ", o.json_path);
  return report.failures() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return omni::run_tool("forward_bench", run, argc, argv);
}
