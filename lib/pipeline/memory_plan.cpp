#include "pipeline/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/files.h"
#include "core/fp8.h"
#include "core/memory.h"
#include "io/safetensors.h"
#include "io/video_writer.h"
#include "models/autoencoder_kl_wan.h"
#include "models/clip_vision_model.h"
#include "models/hsdp_sharding.h"
#include "models/umt5_encoder.h"
#include "models/wan_s2v_transformer.h"
#include "models/wan_transformer.h"
#include "models/wav2vec2_model.h"

namespace omni::pipeline {
namespace {

int64_t esize(c10::ScalarType t) {
  return static_cast<int64_t>(c10::elementSize(t));
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// One sharded model's units on this rank and what its checkpoint costs to read.
struct ModelUnits {
  std::string name;
  int64_t resident = 0;    // this rank's slices of every unit
  int64_t root_full = 0;   // the gathered root
  int64_t block_full = 0;  // the largest gathered block
  int64_t pair_full = 0;   // the largest two consecutive gathered blocks (one runs, the next is prefetched)
  int64_t blocks = 0;
  int64_t mapped = 0;      // checkpoint bytes this rank reads (its slices, as stored)
  int64_t read_piece = 0;  // the largest piece read at once (stored + converted copies)
  // A float8 Linear's weight dequantized for its product (the largest one), with its float32 row chunk.
  int64_t float8_dequant = 0;
  int64_t float8_largest = 0;  // elements of the largest float8 Linear weight
  // A unit's float8 slice being made at load (FlatParamUnit::load_shard: the float8 slice, the float32 values
  // of its weights quantized here, the quantization's row chunk), beyond what the units after it add by the end
  // of the load (their slices and checkpoint pages): the part of it the end-of-load state does not cover.
  int64_t float8_quantize = 0;
  // What a forward has gathered at most: the root, the block running and the next one (prefetched). Blocks
  // differ with float8 weights (the first and last stay in the run dtype).
  int64_t gathered_peak() const { return root_full + (blocks >= 2 ? pair_full : blocks * block_full); }
};

// The stored bytes of `name` in `ckpt`.
int64_t stored_bytes(const io::Checkpoint& ckpt, const std::string& name) {
  const auto& info = ckpt.info(name);
  return info.data_end - info.data_begin;
}

ModelUnits units_of(const std::string& name, const models::Module& model,
                    const std::vector<const models::Module*>& blocks, const io::Checkpoint& ckpt, c10::ScalarType dtype,
                    int shard, const models::WeightHolding& flags = {}) {
  const models::WeightHolding holding = models::with_stored_float8(flags, ckpt);
  ModelUnits out;
  out.name = name;
  const int num_blocks = models::numbered_blocks(model.parameters());
  const models::UnitParams split = models::split_units(model, blocks);
  const auto root = models::unit_bytes(split.root, dtype, shard, holding, num_blocks);
  out.resident = root.resident;
  out.root_full = root.full;
  out.blocks = static_cast<int64_t>(split.blocks.size());
  int64_t previous_full = 0;
  for (const auto& b : split.blocks) {
    const auto u = models::unit_bytes(b, dtype, shard, holding, num_blocks);
    out.resident += u.resident;
    out.block_full = std::max(out.block_full, u.full);
    if (previous_full > 0) out.pair_full = std::max(out.pair_full, previous_full + u.full);
    previous_full = u.full;
  }
  // Each unit's float8 group: its slice in float8, and the float32 values of the weights quantized at load
  // (not those read as stored) that fall in it.
  auto float8_load = [&](const std::vector<models::ParamRef>& params) {
    int64_t float8_numel = 0, quantized_numel = 0;
    for (const auto& p : params) {
      if (models::held_dtype(p, dtype, holding, num_blocks) != at::kFloat8_e4m3fn) continue;
      int64_t n = 1;
      for (int64_t d : p.shape) n *= d;
      float8_numel += n;
      if (!holding.stored_float8.count(p.name)) quantized_numel += n;
    }
    if (float8_numel == 0) return int64_t{0};
    const int64_t slice = hsdp::FlatParamUnit::padded_numel(float8_numel, shard) / shard;
    const int64_t quantized = std::min(slice, quantized_numel);
    // fp8::quantize_into's row chunk: a float32 quotient and its float8 rounding, at most the quantized values.
    return slice + quantized * esize(at::kFloat) +
           std::min(quantized, fp8::kDequantChunkElements) * (esize(at::kFloat) + 1);
  };
  // Units load root first, then the blocks in order; after unit k the later ones still add their slices and
  // their share of the checkpoint's pages.
  std::vector<const std::vector<models::ParamRef>*> units{&split.root};
  for (const auto& b : split.blocks) units.push_back(&b);
  int64_t later = 0;  // what the units after the current one add
  for (size_t k = units.size(); k-- > 0;) {
    out.float8_quantize = std::max(out.float8_quantize, float8_load(*units[k]) - later);
    later += models::unit_bytes(*units[k], dtype, shard, holding, num_blocks).resident;
    for (const auto& p : *units[k])
      if (ckpt.contains(p.name)) later += ceil_div(stored_bytes(ckpt, p.name), shard);
  }
  int64_t stored = 0;
  for (const auto& p : model.parameters()) {
    if (!ckpt.contains(p.name)) continue;  // check_state reports it when the model loads
    const int64_t bytes = stored_bytes(ckpt, p.name);
    stored += bytes;
    // Checkpoint::read_flat reads each tensor's part of a slice as one piece: the stored copy, then the copy
    // converted to the unit's dtype.
    const int64_t numel = ckpt.info(p.name).numel();
    const int64_t piece = std::min(numel, ceil_div(numel, shard));
    // A float8 weight's slice is read as stored float8, or as float32 and quantized (FlatParamUnit::load_shard).
    const auto held_as = models::held_dtype(p, dtype, holding, num_blocks);
    const bool stored_float8 = holding.stored_float8.count(p.name) != 0;
    if (held_as == at::kFloat8_e4m3fn) {
      const int64_t n = ckpt.info(p.name).numel();
      out.float8_largest = std::max(out.float8_largest, n);
      out.float8_dequant =
          std::max(out.float8_dequant,
                   n * esize(dtype) + std::min(n, fp8::kDequantChunkElements + p.shape[1]) * esize(at::kFloat));
    }
    const int64_t held = held_as != at::kFloat8_e4m3fn ? esize(held_as) : stored_float8 ? 1 : esize(at::kFloat);
    const int64_t as_stored = numel > 0 ? bytes / numel : 0;
    out.read_piece = std::max(out.read_piece, piece * (as_stored + (as_stored == held ? 0 : held)));
  }
  out.mapped = ceil_div(stored, shard);
  return out;
}

// A VAE level as its convolutions see it: channels, frames per chunk, spatial divisor from the full size.
struct VaeLevel {
  int64_t channels;
  int64_t frames;
  int64_t divisor;
};

// Live working-set multiple of the largest level's activation: a residual block holds its input (the
// shortcut), the normalized and activated copies, the cached frames concatenated in front of the conv input
// (n + 2 frames) and the conv output.
constexpr double kVaeLevelMultiple = 6.0;
// Measured against that structure (float32 decodes on the CPU of Wan2.1-sized VAEs, 96 x 1,2,4,4 with 2
// residual blocks and narrower ones, at 256x448 and 480x832, 17 frames: tools/bench/memory_plan.sh): the
// decode's peak is 1.15 x the structural figure plus a fixed 384 MiB on the host (convolution workspaces and
// the heap's share), within 7% at every point.
constexpr double kVaeMeasuredScale = 1.15;
constexpr int64_t kVaeHostOverhead = int64_t{384} << 20;

// Peak bytes of a VAE pass (decode or encode) over one chunk at a time at `height` x `width` pixels of the
// patchified frame (after / before the patch), with `res_blocks` residual blocks per level: the largest
// level's working set plus every causal conv's cache of its last two input frames at every level.
int64_t vae_working_set(const std::vector<VaeLevel>& levels, int64_t height, int64_t width, int64_t res_blocks,
                        int64_t elem, bool host) {
  double largest = 0, caches = 0;
  for (const auto& l : levels) {
    const double area = static_cast<double>(height / l.divisor) * static_cast<double>(width / l.divisor);
    largest = std::max(largest, static_cast<double>(l.channels * l.frames) * area);
    // Two causal convs per residual block, (res_blocks + 1) blocks per level, two cached frames each.
    caches += static_cast<double>(2 * (res_blocks + 1) * 2 * l.channels) * area;
  }
  const double structural = (kVaeLevelMultiple * largest + caches) * static_cast<double>(elem);
  return static_cast<int64_t>(kVaeMeasuredScale * structural) + (host ? kVaeHostOverhead : 0);
}

}  // namespace

struct MemoryPlanner::Shapes {
  std::vector<ModelUnits> models;  // text_encoder, then each expert
  // Wan2.1's image models: the CLIP image encoder (loaded between the text encoder and the experts).
  std::optional<ModelUnits> image_encoder;
  std::optional<models::ClipVisionConfig> clip;
  // Wan2.2-S2V: its wav2vec2 (float32, loaded before the transformer) and its config.
  std::optional<ModelUnits> audio_encoder;
  std::optional<models::Wav2Vec2Config> wav2vec2;
  bool s2v = false;  // WanS2VPipeline: clips, each encoding its motion frames (and pose chunk)
  models::WanTransformerConfig transformer;
  models::Umt5Config text;
  models::WanVaeConfig vae;
  bool expand_timesteps = false;
  bool image_to_video = false;
  bool vace = false;     // WanVACEPipeline: every video encodes its control clip (grey without one)
  bool animate = false;  // WanAnimatePipeline: segments, each encoding its pose and conditioning clips
  int64_t vae_resident = 0;
  int64_t vae_mapped = 0;
  int64_t lora_mapped[2] = {0, 0};  // per expert
};

MemoryPlanner::MemoryPlanner(const ModelSpec& model, const MemoryPlanSettings& settings)
    : settings_(settings), shapes_(std::make_unique<Shapes>()) {
  auto& s = *shapes_;
  s.expand_timesteps = model.index().expand_timesteps;
  s.image_to_video = model.index().image_to_video;
  s.vace = model.index().vace;
  s.animate = model.index().animate;
  s.s2v = model.index().s2v;
  s.text = model.text_encoder;
  {
    const models::Umt5Encoder encoder(s.text, settings.run.dtype);
    s.models.push_back(units_of("text_encoder", encoder, models::blocks_of(encoder),
                                model.dir->checkpoint("text_encoder"), settings.run.dtype, settings.shard,
                                settings.run.text_encoder_weights));
  }
  if (model.image_encoder) {
    s.clip = model.image_encoder;
    const models::ClipVisionModel clip(*s.clip, settings.run.dtype);
    s.image_encoder = units_of("image_encoder", clip, models::blocks_of(clip), model.dir->checkpoint("image_encoder"),
                               settings.run.dtype, settings.shard);
  }
  if (model.s2v) {
    // Wan2.2-S2V: wav2vec2 in float32 (as the pipeline holds it), then its own transformer (its audio injectors
    // units of their own, its audio encoder and frame packer in the root).
    s.wav2vec2 = model.audio_encoder;
    const models::Wav2Vec2Model audio(*s.wav2vec2, at::kFloat);
    s.audio_encoder = units_of("audio_encoder", audio, models::blocks_of(audio), model.dir->checkpoint("audio_encoder"),
                               at::kFloat, settings.shard);
    const models::WanS2VTransformer transformer(*model.s2v, settings.run.dtype);
    s.models.push_back(units_of("transformer", transformer, models::blocks_of(transformer),
                                model.dir->checkpoint("transformer"), settings.run.dtype, settings.shard,
                                settings.run.transformer_weights));
  }
  for (size_t e = 0; e < (model.s2v ? 0 : model.experts.size()); ++e) {
    const char* name = ModelSpec::expert_name(static_cast<int>(e));
    const models::WanTransformer3DModel expert(model.experts[e], settings.run.dtype);
    s.models.push_back(units_of(name, expert, models::blocks_of(expert), model.dir->checkpoint(name),
                                settings.run.dtype, settings.shard, settings.run.transformer_weights));
  }
  s.transformer = model.experts[0];
  s.vae = model.vae;
  const models::AutoencoderKLWan vae(s.vae);
  for (const auto& p : vae.parameters()) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    s.vae_resident += n * esize(settings.run.vae_dtype);
  }
  s.vae_mapped = model.dir->checkpoint("vae").total_bytes();
  for (int e = 0; e < 2; ++e)
    for (const auto& f : settings.run.lora[e]) s.lora_mapped[e] += file_size(f.path);
}

MemoryPlanner::~MemoryPlanner() = default;

StepTraffic MemoryPlanner::step_traffic(const VideoParams& v) const {
  const auto& s = *shapes_;
  const auto& set = settings_;
  const auto& tc = s.transformer;
  const int64_t e = esize(set.run.dtype);
  const int64_t u = set.ulysses, r = set.ring, sp = u * r;
  const int64_t lat_t = v.denoised_latent_frames(s.vae.scale_factor_temporal),
                lat_h = v.height / s.vae.scale_factor_spatial, lat_w = v.width / s.vae.scale_factor_spatial;
  const int64_t tokens = tc.token_count(lat_t, lat_h, lat_w);
  const bool guidance = v.guidance_on();
  const int64_t batch = guidance && set.cfg == 1 ? 2 : 1;
  const int64_t dim = tc.inner_dim(), layers = tc.num_layers;
  const int64_t mine = ceil_div(tokens, sp);  // this rank's tokens in a block
  StepTraffic t;
  if (set.shard > 1) t.shard = s.models[1].resident * (set.shard - 1);
  // Ulysses: q, k, v (3 x D / u per token) to each of u - 1 ranks, the output (D / u per token) back.
  if (u > 1) t.ulysses = layers * 4 * batch * mine * (dim / u) * (u - 1) * e;
  // Ring: K and V of the ring rank's tokens (all tokens / ring, D / u after Ulysses) on each of ring - 1 hops.
  if (r > 1) t.ring = layers * 2 * batch * ceil_div(tokens, r) * (dim / u) * (r - 1) * e;
  // The head's output (pt*ph*pw*C_out values a token, models::WanTransformer3DModel::head), gathered.
  const int64_t head_out = tc.out_channels * tc.patch_size[0] * tc.patch_size[1] * tc.patch_size[2];
  if (sp > 1) t.sp = batch * mine * head_out * (sp - 1) * e;
  if (set.cfg == 2 && guidance) t.cfg = tc.out_channels * lat_t * lat_h * lat_w * e;
  return t;
}

StepWork MemoryPlanner::step_work(const VideoParams& v) const {
  const auto& s = *shapes_;
  const auto& set = settings_;
  const auto& tc = s.transformer;
  const double u = set.ulysses, r = set.ring;
  const int64_t lat_t = v.denoised_latent_frames(s.vae.scale_factor_temporal),
                lat_h = v.height / s.vae.scale_factor_spatial, lat_w = v.width / s.vae.scale_factor_spatial;
  const double tokens = static_cast<double>(tc.token_count(lat_t, lat_h, lat_w));
  const double batch = v.guidance_on() && set.cfg == 1 ? 2 : 1;
  const double dim = static_cast<double>(tc.inner_dim()), ffn = static_cast<double>(tc.ffn_dim);
  const double layers = static_cast<double>(tc.num_layers), text = v.max_sequence_length;
  const double mine = std::ceil(tokens / (u * r));  // this rank's tokens in a block
  StepWork w;
  // Per block: self-attention's q, k, v, o (4 D^2) and cross-attention's q, o (2 D^2) on this rank's tokens, the
  // feed-forward (2 D ffn); cross-attention's k, v (2 D^2) on the text tokens, on every rank whole.
  w.matmul_flops = 2 * batch * layers * (mine * (6 * dim * dim + 2 * dim * ffn) + text * 2 * dim * dim);
  // Self-attention: after the Ulysses exchange this rank's D / u of the heads, its ring share of the queries
  // against every key; cross-attention: its tokens' queries, all heads, against the text.
  w.attention_flops = 4 * batch * layers * ((tokens / r) * tokens * (dim / u) + mine * text * dim);
  // The element-wise operators in float32 (diffusers' norms and modulation run in float32): the three norms
  // with their shift / scale / gate, the residual adds, RoPE on q and k, about 20 D-wide reads and writes per
  // token, and the GELU's read and write of the ffn-wide hidden state.
  w.other_bytes = batch * layers * mine * (20 * dim + 2 * ffn) * 4;
  // The sequence split's copies in the run dtype: Ulysses packs q, k and v for its exchange and unpacks them,
  // and the attention's output both ways (UlyssesAttention: 4 D-wide tensors, each written and read twice); the
  // ring stacks K and V once and merges each hop's partial output into a float32 accumulator (three D-wide
  // float32 reads and writes a hop).
  const double e = static_cast<double>(esize(set.run.dtype));
  if (u > 1) w.other_bytes += batch * layers * mine * dim * 4 * 2 * 2 * e;
  if (r > 1) w.other_bytes += batch * layers * mine * dim * (2 * 2 * e + (r - 1) * 3 * 2 * 4);
  // One transformer call a step (the batch rows together): its blocks, and the embeddings, the head and the
  // scheduler's step around them about as many operators as one more (diffusers' WanTransformer3DModel under
  // torch.profiler: 106 top-level operators per block, 73 outside them).
  w.blocks = layers + 1;
  // Per block Ulysses' two all-to-alls (q, k, v out; the attention back) and the ring's hops; per call the
  // sequence gather and, with HSDP, each block's gather and the root's; per step the CFG exchange.
  w.collectives = layers * ((u > 1 ? 2 : 0) + (r - 1)) + (u * r > 1 ? 1 : 0) + (set.shard > 1 ? layers + 1 : 0) +
                  (set.cfg == 2 && v.guidance_on() ? 1 : 0);
  const auto& te = s.text;
  const double te_linear =
      static_cast<double>(te.num_layers) *
      (4.0 * te.d_model * te.inner_dim() + 3.0 * te.d_model * te.d_ff);  // q, k, v, o; wi_0, wi_1, wo
  w.text_encode_flops = 2 * te_linear * text * (v.guidance_on() ? 2 : 1);
  const double top = static_cast<double>(s.vae.decoder_base_dim.value_or(s.vae.base_dim)) / 96.0;
  const double patch = static_cast<double>(s.vae.patch());
  w.decode_units = static_cast<double>(v.height) * v.width * v.rounded_num_frames(s.vae.scale_factor_temporal) * top *
                   top / (patch * patch);
  w.segments = static_cast<double>(v.segments(s.vae.scale_factor_temporal));  // Animate's (a segment's frames above)
  return w;
}

std::vector<std::vector<StepTrafficSplit>> split_step_traffic(const StepTraffic& t, const dist::DeviceMesh& mesh) {
  return split_step_traffic(t, mesh.topology().node_of, [&](dist::GroupKind kind) { return mesh.placed(kind).ranks; });
}

std::vector<std::vector<StepTrafficSplit>> split_step_traffic(
    const StepTraffic& t, const std::vector<int>& node_of,
    const std::function<std::vector<std::vector<int>>(dist::GroupKind)>& groups) {
  using dist::GroupKind;
  std::vector<std::vector<StepTrafficSplit>> out(node_of.size());
  for (const auto& [kind, bytes] : std::vector<std::pair<GroupKind, int64_t>>{{GroupKind::kShard, t.shard},
                                                                              {GroupKind::kUlysses, t.ulysses},
                                                                              {GroupKind::kRing, t.ring},
                                                                              {GroupKind::kSp, t.sp},
                                                                              {GroupKind::kCfg, t.cfg}}) {
    if (bytes == 0) continue;
    for (const std::vector<int>& group : groups(kind)) {  // ranks, layout order
      const int n = static_cast<int>(group.size());
      if (n < 2) continue;
      for (int me = 0; me < n; ++me) {
        const int r = group[static_cast<size_t>(me)];
        const int node = node_of[static_cast<size_t>(r)];
        StepTrafficSplit split{kind, 0, 0};
        if (kind == GroupKind::kRing) {  // every hop goes to the next ring rank
          const int next = group[static_cast<size_t>((me + 1) % n)];
          (node_of[static_cast<size_t>(next)] == node ? split.intra_node : split.inter_node) = bytes;
        } else {  // spread evenly over the other ranks of the group
          int across = 0;
          for (int peer : group) across += peer != r && node_of[static_cast<size_t>(peer)] != node ? 1 : 0;
          split.inter_node = bytes * across / (n - 1);
          split.intra_node = bytes - split.inter_node;
        }
        out[static_cast<size_t>(r)].push_back(split);
      }
    }
  }
  return out;
}

MemoryPlan MemoryPlanner::plan(const RankWork& work) const {
  const auto& s = *shapes_;
  const auto& set = settings_;
  const bool host = !set.cuda;
  const int64_t e = esize(set.run.dtype), ev = esize(set.run.vae_dtype), f32 = 4;
  MemoryPlan plan;
  // The fused kernels LibTorch picks for our calls (no score matrix is ever materialized): the CPU's flash
  // kernel; on CUDA flash for bfloat16 / float16, memory-efficient for float32 (docs/DESIGN.md section 3).
  plan.attention_kernel = host                           ? "flash (CPU)"
                          : set.run.dtype == c10::kFloat ? "memory-efficient (CUDA)"
                                                         : "flash (CUDA)";
  // The sharded models in the pipeline's load order: the text encoder, the image encoder, the experts (with
  // the LoRA files of each, by expert).
  std::vector<std::pair<const ModelUnits*, int64_t>> load_order = {{&s.models[0], 0}};
  if (s.image_encoder) load_order.push_back({&*s.image_encoder, 0});
  if (s.audio_encoder) load_order.push_back({&*s.audio_encoder, 0});
  for (size_t i = 1; i < s.models.size(); ++i) load_order.push_back({&s.models[i], s.lora_mapped[i - 1]});
  for (const auto& [m, lora] : load_order) plan.resident.push_back({m->name, m->resident, MemoryKind::kWeights});
  plan.resident.push_back({"vae", s.vae_resident, MemoryKind::kVaeWeights});

  // Load, in the pipeline's order: each component at the end of its reading, with what it costs on top.
  {
    MemoryPhase best{"load", {}};
    std::vector<MemoryPart> loaded;
    auto consider = [&](std::vector<MemoryPart> extra) {
      MemoryPhase p{"load", loaded};
      for (auto& x : extra) p.parts.push_back(std::move(x));
      if (p.bytes() > best.bytes()) best = p;
    };
    for (const auto& [m, lora] : load_order) {
      loaded.push_back({m->name, m->resident, MemoryKind::kWeights});
      std::vector<MemoryPart> extra;
      if (host) {
        extra.push_back({"checkpoint pages read (" + m->name + ")", m->mapped, MemoryKind::kWeights});
        extra.push_back({"read buffer", m->read_piece});
        if (m->float8_quantize > 0) extra.push_back({"float8 slice being quantized", m->float8_quantize});
        if (lora > 0) extra.push_back({"LoRA files", lora});
      }
      consider(extra);
    }
    loaded.push_back({"vae", s.vae_resident, MemoryKind::kVaeWeights});
    consider(host ? std::vector<MemoryPart>{{"checkpoint pages read (vae)", s.vae_mapped}} : std::vector<MemoryPart>{});
    plan.phases.push_back(best);
  }

  const int sp = set.ulysses * set.ring;
  const auto& tc = s.transformer;
  const int64_t dim = tc.inner_dim(), ffn = tc.ffn_dim, head_dim = tc.attention_head_dim;
  const int64_t sf = s.vae.scale_factor_spatial, tf = s.vae.scale_factor_temporal, patch = s.vae.patch();
  const ModelUnits& te = s.models[0];
  int64_t max_text = 0;
  for (const auto& pv : work.videos) max_text = std::max<int64_t>(max_text, pv.video.max_sequence_length);

  if (!work.videos.empty()) {
    // UMT5 over one prompt of max_sequence_length tokens: hidden states and q/k/v/out projections, the
    // gated feed-forward's three d_ff tensors, and per head the scores, the relative position bias and the
    // softmax in float32.
    const int64_t len = max_text, heads = s.text.num_heads;
    MemoryPhase p{"text_encode", plan.resident};
    if (set.shard > 1)
      p.parts.push_back({"gathered text_encoder units", te.gathered_peak(), MemoryKind::kGatheredUnits});
    p.parts.push_back(
        {"text_encoder activations", e * len * (6 * s.text.d_model + 3 * s.text.d_ff) + f32 * 3 * heads * len * len});
    plan.phases.push_back(p);
  }

  if (s.image_encoder && !work.videos.empty()) {
    // CLIP over one video's images (two with a last image): per image its tokens' hidden states, q/k/v/out and
    // the MLP's intermediate width, and per head the scores in float32.
    const auto& c = *s.clip;
    const int64_t images = 2, n = c.num_positions();
    MemoryPhase p{"clip_encode", plan.resident};
    if (set.shard > 1)
      p.parts.push_back({"gathered image_encoder units", s.image_encoder->gathered_peak(), MemoryKind::kGatheredUnits});
    p.parts.push_back({"image_encoder activations", e * images * n * (6 * c.hidden_size + 2 * c.intermediate_size) +
                                                        f32 * images * c.num_attention_heads * n * n});
    plan.phases.push_back(p);
  }

  if (s.audio_encoder && !work.videos.empty()) {
    // wav2vec2 over the whole recording (50 frames a second; the clips' length stands for it): per frame the
    // hidden states kept for every layer (float32, the transformer's input), q/k/v/out and the feed-forward's
    // width, and per head the scores in float32.
    const auto& c = *s.wav2vec2;
    int64_t n = 0;
    for (const auto& pv : work.videos) n = std::max(n, pv.video.output_frames(tf) * 50 / kS2VFps + 50);
    MemoryPhase p{"audio_encode", plan.resident};
    if (set.shard > 1)
      p.parts.push_back({"gathered audio_encoder units", s.audio_encoder->gathered_peak(), MemoryKind::kGatheredUnits});
    p.parts.push_back({"audio_encoder activations", f32 * n * (6 * c.hidden_size + 2 * c.intermediate_size) +
                                                        f32 * c.num_attention_heads * n * n +
                                                        f32 * (c.num_hidden_layers + 1) * n * c.hidden_size});
    plan.phases.push_back(p);
  }

  // Denoise: the largest video of this rank.
  MemoryPhase denoise{"denoise", plan.resident};
  int64_t best_act = -1;
  int64_t fp8_input_rows = 0;  // the most token rows one product sees (one batch row, this rank's share)
  const bool fp8_products = s.models[1].float8_largest > 0 && set.run.fp8_matmul;
  std::vector<MemoryPart> best_parts;
  for (const auto& pv : work.videos) {
    const VideoParams& v = pv.video;
    const int64_t lat_t = v.denoised_latent_frames(tf), lat_h = v.height / sf, lat_w = v.width / sf;
    // S2V: the reference latent's and the frame-packed motion tokens after the video's (a frame's worth, a
    // quarter and four sixteenths of one).
    const int64_t frame_tokens = tc.token_count(1, lat_h, lat_w);
    const int64_t tokens = tc.token_count(lat_t, lat_h, lat_w) + (s.s2v ? 2 * frame_tokens + frame_tokens / 2 : 0);
    // cond and uncond batched on one rank (S2V runs them one after the other: one row's activations)
    const int64_t batch = v.guidance_on() && set.cfg == 1 && !s.s2v ? 2 : 1;
    // The blocks and finish() run each batch row alone (models::wan::each_batch_row): the batch's input and
    // output tensors are whole, the working set in between one row's.
    const int64_t local = ceil_div(tokens, sp);  // this rank's token rows in a block, per batch row
    fp8_input_rows = std::max(fp8_input_rows, local);
    const int64_t full = batch * tokens;
    const int64_t other_rows = e * (batch - 1) * local * dim * 2;  // the other rows' block input and output
    const bool per_token = s.expand_timesteps && v.image;          // TI2V's image mode (text mode: one per row)

    std::vector<MemoryPart> parts;
    // prepare() runs on every token (the sequence split happens after it): the patch-embedded tokens, the
    // text context and the rotary tables. Per-token timesteps (TI2V with an image) are embedded per run of
    // tokens that share one (models::TokenRuns): a few rows, not [B, S, 7 D].
    const int64_t state = e * full * dim + e * batch * max_text * dim + f32 * 2 * tokens * head_dim;
    parts.push_back({"transformer forward state", state});
    // VACE: the patch-embedded context on every token (split like them after prepare()) and one hint per VACE
    // block on this rank's tokens, held until its main block adds it.
    if (tc.is_vace()) {
      const auto hints = static_cast<int64_t>(tc.vace_layers.size());
      parts.push_back({"VACE context and hints", e * full * dim + e * hints * batch * local * dim});
    }
    // One block on this rank's tokens. Attention: the block input, the normalized input, q, k, v, the
    // attention output, its flattened copy and the output projection, plus the rotary products in float32;
    // Ulysses adds the all-to-all buffers of q, k, v and the output, ring the received key/value blocks and
    // the float32 accumulator. Feed-forward: input, residual, normalized input, the gelu'd d_ff projection
    // and its output; its tail adds the float32 gate product and sum.
    int64_t attention = e * local * 8 * dim + f32 * local * 2 * dim;
    if (set.ulysses > 1) attention += e * local * 4 * dim;
    if (set.ring > 1) attention += e * local * 4 * dim + f32 * local * dim;
    int64_t feed_forward = std::max(e * local * (4 * dim + ffn), e * local * 4 * dim + f32 * local * 2 * dim);
    // --fp8-matmul on the host (models::scaled_mm_linear): during an FFN product, beside the feed-forward's own
    // tensors, the input's float8 copy and its float32 copy, the weight's float32 copy, and the float32 result
    // where the activations are narrower (in float32 it is the result the feed-forward counts). The
    // down-projection (in = ffn) is the wider moment; both are weighed.
    if (host && fp8_products) {
      const auto product_extra = [&](int64_t in, int64_t out) {
        return (1 + f32) * local * in + f32 * in * out + (f32 - e) * local * out;
      };
      feed_forward += std::max(product_extra(dim, ffn), product_extra(ffn, dim));
    }
    const int64_t row_block = std::max(attention, feed_forward);
    // On the host, token tensors up to glibc's mmap threshold come from the heap, which keeps freed chunks
    // and fragments as the block's differently sized temporaries come and go: measured (tools/bench/
    // memory_plan.sh), the heap then grows by about the block's working set again.
    if (host && e * local * dim <= kHostHeapMaxAllocation) parts.push_back({"host heap fragmentation", row_block});
    const int64_t block = row_block + other_rows;
    // The head on this rank's tokens (models::WanTransformer3DModel::head): the blocks' output, and for one
    // batch row the float32 layer norm, its modulation and the modulated input (per run: written into one more
    // tensor of the activation dtype); then its output, gathered from the sequence-parallel ranks and
    // unpatchified, pt*ph*pw*C_out values a token.
    const int64_t head_out = tc.out_channels * tc.patch_size[0] * tc.patch_size[1] * tc.patch_size[2];
    const int64_t finish = e * batch * local * dim + e * local * dim * (per_token ? 1 : 0) + f32 * local * dim * 3 +
                           e * batch * (local + 2 * tokens) * head_out;
    // First-block cache: before the other blocks run, the float64 sums of one branch's rows (pipeline/
    // step_cache.cpp), a slice of at most 32 MiB at a time: the two inputs, their difference and the base.
    const bool first_block = set.run.step_cache == StepCacheMode::kFirstBlock;
    const int64_t cache_sums = first_block ? 4 * std::min<int64_t>(int64_t{32} << 20, 8 * local * dim) : 0;
    // Animate: the segment's face crops for each batch row (the unconditional branch's made apart) through the
    // motion encoder, before the blocks: motion_encoder_batch_size crops at a time, its widest moment the first
    // levels (the crop's side at its width: the input, the convolution's output, the blur's padded copy and the
    // activation).
    int64_t motion = 0;
    if (tc.is_animate()) {
      const int64_t side = tc.motion_encoder_size, frames = v.rounded_num_frames(tf);
      parts.push_back({"Animate face crops", e * (batch + 1) * 3 * frames * side * side});
      const auto& widths = tc.motion_encoder_channel_sizes.empty() ? models::WanAnimateMotionEncoder::default_channels()
                                                                   : tc.motion_encoder_channel_sizes;
      for (int64_t px = side; px >= 4; px /= 2) {
        const auto it = widths.find(std::to_string(px));
        if (it != widths.end()) motion = std::max(motion, 4 * e * tc.motion_encoder_batch_size * it->second * px * px);
      }
    }
    parts.push_back({"transformer block activations", std::max({block, finish, cache_sums, motion})});
    // Held beside the blocks per batch row: the residual of the skipped blocks and, first-block cache, block 0's
    // residual of the last computed step and of this call.
    if (set.run.step_cache != StepCacheMode::kNone)
      parts.push_back({"step cache residuals", (first_block ? 3 : 1) * e * batch * local * dim});
    // Latents, the noise predictions and the scheduler's history (UniPC keeps a few model outputs).
    const int64_t channels = tc.in_channels;
    parts.push_back({"latents and scheduler", f32 * 10 * batch * channels * lat_t * lat_h * lat_w});
    int64_t act = 0;
    for (const auto& x : parts) act += x.bytes;
    if (act > best_act) {
      best_act = act;
      best_parts = parts;
    }
  }
  if (!work.videos.empty()) {
    const ModelUnits& tr = s.models[1];
    if (set.shard > 1)
      denoise.parts.push_back({"gathered transformer units", tr.gathered_peak(), MemoryKind::kGatheredUnits});
    if (tr.float8_dequant > 0 && !set.run.fp8_matmul)
      denoise.parts.push_back(
          {"a float8 weight dequantized for its product", tr.float8_dequant, MemoryKind::kGatheredUnits});
    // --fp8-matmul on CUDA quantizes each product's input: the float8 copy of the largest (the FFN
    // down-projection's, this rank's token rows of one batch row) and fp8::quantize_into's float32 row chunk.
    // The host's product counts them with its feed-forward.
    if (fp8_products && !host)
      denoise.parts.push_back({"a float8 product's quantized input",
                               fp8_input_rows * s.transformer.ffn_dim + 2 * f32 * fp8::kDequantChunkElements});
    for (auto& x : best_parts) denoise.parts.push_back(x);
    plan.phases.push_back(denoise);
  }

  // The VAE's levels.
  const auto& vc = s.vae;
  const int64_t levels = static_cast<int64_t>(vc.dim_mult.size());
  // Image encode: the conditioning clip through the encoder (I2V: the image and num_frames - 1 zero frames;
  // TI2V: the image alone; video-to-video: the clip's num_frames frames), chunks of 4 frames at full
  // resolution, halved per level.
  MemoryPhase encode{"image_encode", {}};
  for (const auto& pv : work.videos) {
    const VideoParams& v = pv.video;
    if (!v.image && !v.video && !s.vace && !s.animate && !s.s2v) continue;
    std::vector<VaeLevel> enc;
    int64_t frames = 4;
    for (int64_t l = 0; l < levels; ++l) {
      enc.push_back({vc.base_dim * vc.dim_mult[static_cast<size_t>(l)], frames, int64_t{1} << l});
      if (l + 1 < levels && vc.temperal_downsample[static_cast<size_t>(l)]) frames = std::max<int64_t>(1, frames / 2);
    }
    // S2V: the 73 motion frames re-encoded after every clip (the pose chunks are shorter).
    const int64_t clip_frames = s.s2v ? std::max<int64_t>(kS2VMotionFrames, v.num_frames + 1)
                                : s.image_to_video || v.video || s.vace || s.animate ? v.rounded_num_frames(tf)
                                                                                     : 1;
    MemoryPhase p{"image_encode", plan.resident};
    // VACE: the control clip, its mask, and the kept and generated parts encoded one after the other. Animate: a
    // segment's pose clip and conditioning clip (replace mode: its background too, and the mask), and its face
    // crops.
    const int64_t clips = s.vace ? 4 : s.animate ? (v.replace ? 3 : 2) : 1;
    p.parts.push_back({"conditioning clip", clips * (f32 + ev) * 3 * clip_frames * v.height * v.width});
    if (s.animate) {
      const int64_t side = s.transformer.motion_encoder_size;
      p.parts.push_back({"Animate face crops and mask",
                         f32 * clip_frames * (3 * side * side + (v.replace ? v.height * v.width : 0))});
    }
    p.parts.push_back({"vae encode working set",
                       vae_working_set(enc, v.height / patch, v.width / patch, vc.num_res_blocks, ev, host)});
    if (p.bytes() > encode.bytes()) encode = p;
  }
  if (!encode.parts.empty()) plan.phases.push_back(encode);

  // Decode: one latent frame at a time; a later chunk is tf frames at the top levels.
  if (std::any_of(work.videos.begin(), work.videos.end(), [](const PlannedVideo& pv) { return pv.decoded; })) {
    const int64_t dec_dim = vc.decoder_base_dim.value_or(vc.base_dim);
    std::vector<VaeLevel> dec;  // from the full resolution down
    int64_t frames = tf;
    for (int64_t i = levels - 1; i >= 0; --i) {
      // Up block i works at 2^i x the latent size on dec_dim x dim_mult[levels - 1 - i] channels.
      const int64_t ch = dec_dim * vc.dim_mult[static_cast<size_t>(levels - 1 - i)];
      dec.push_back({ch, frames, int64_t{1} << (levels - 1 - i)});
      // Block i - 1 has half the frames when it upsamples in time: the decoder's temporal upsampling is the
      // encoder's downsampling reversed, temporal_upsample[i - 1] = temperal_downsample[levels - 1 - i].
      if (i > 0 && vc.temperal_downsample[static_cast<size_t>(levels - 1 - i)])
        frames = std::max<int64_t>(1, frames / 2);
    }
    MemoryPhase best{"decode", {}};
    for (const auto& pv : work.videos) {
      if (!pv.decoded) continue;
      const VideoParams& v = pv.video;
      // S2V decodes each clip behind its 19 motion latents: 73 + num_frames frames at once.
      const int64_t frames_out = v.speech ? kS2VMotionFrames + v.num_frames : v.rounded_num_frames(tf);
      const int64_t rows = work.decode_group > 1 ? ceil_div(v.height / sf, work.decode_group) * sf + 2 * sf : v.height;
      const int64_t video = 3 * frames_out * v.height * v.width;
      MemoryPhase p{"decode", plan.resident};
      p.parts.push_back({"vae decode working set",
                         vae_working_set(dec, rows / patch, v.width / patch, vc.num_res_blocks, ev, host),
                         MemoryKind::kDecode});
      p.parts.push_back({"decoded video", ev * 3 * frames_out * rows * v.width, MemoryKind::kDecode});
      if (work.decode_group > 1 && work.gathers_video)
        p.parts.push_back({"gathered video", ev * video, MemoryKind::kDecode});
      // The frames become the decoded video in place; the writer gets them as uint8 levels [F, H, W, 3], made
      // in float32 chunks (io::frames_to_uint8).
      if (work.decode_group == 1 || work.gathers_video)
        p.parts.push_back({"frames", video + std::min(video, io::kLevelsChunkSamples) * f32, MemoryKind::kDecode});
      // Animate: the finished segments' frames, uint8 levels on the host, until the video is written.
      if ((v.animate || v.speech) && host && (work.decode_group == 1 || work.gathers_video))
        p.parts.push_back({"finished frames", 3 * v.output_frames(tf) * v.height * v.width, MemoryKind::kDecode});
      if (p.bytes() > best.bytes()) best = p;
    }
    plan.phases.push_back(best);
  }
  return plan;
}

int64_t MemoryPhase::bytes() const {
  int64_t total = 0;
  for (const auto& p : parts) total += p.bytes;
  return total;
}

const MemoryPhase& MemoryPlan::peak_phase() const {
  OMNI_CHECK(!phases.empty(), "memory plan without phases");
  const MemoryPhase* best = &phases[0];
  for (const auto& p : phases)
    if (p.bytes() > best->bytes()) best = &p;
  return *best;
}

int64_t MemoryPlan::peak_bytes() const {
  return peak_phase().bytes();
}

const MemoryPart& MemoryPlan::largest_part() const {
  const auto& parts = peak_phase().parts;
  OMNI_CHECK(!parts.empty(), "memory plan phase without parts");
  return *std::max_element(parts.begin(), parts.end(),
                           [](const MemoryPart& a, const MemoryPart& b) { return a.bytes < b.bytes; });
}

nlohmann::json MemoryPlan::to_json() const {
  nlohmann::json phases_json = nlohmann::json::object();
  for (const auto& p : phases) {
    nlohmann::json parts = nlohmann::json::object();
    for (const auto& x : p.parts) parts[x.name] = x.bytes;
    phases_json[p.name] = {{"bytes", p.bytes()}, {"parts", parts}};
  }
  int64_t resident = 0;
  for (const auto& x : this->resident) resident += x.bytes;
  return {{"planned_peak_bytes", peak_bytes()},
          {"planned_peak_phase", peak_phase().name},
          {"planned_resident_bytes", resident},
          {"planned_attention_kernel", attention_kernel},
          {"planned_phases", phases_json}};
}

std::string MemoryPlan::summary() const {
  const auto& peak = peak_phase();
  std::vector<MemoryPart> parts = peak.parts;
  std::stable_sort(parts.begin(), parts.end(),
                   [](const MemoryPart& a, const MemoryPart& b) { return a.bytes > b.bytes; });
  std::string out = format_bytes(peak.bytes()) + " at " + peak.name + ":";
  bool first = true;
  for (const auto& p : parts) {
    if (p.bytes <= 0) continue;
    out += (first ? " " : ", ") + p.name + " " + format_bytes(p.bytes);
    first = false;
  }
  return out;
}

}  // namespace omni::pipeline
