#include "models/wan_s2v_transformer.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/tensor_dump.h"
#include "io/safetensors.h"

namespace omni::models {

namespace {

// The reference image's rotary frame (WanModel_S2V.forward: ref_grid_sizes start at frame 30).
constexpr int64_t kReferenceFrame = 30;
// trainable_cond_mask's rows.
constexpr int64_t kVideoMask = 0, kReferenceMask = 1, kMotionMask = 2;
// Wan's rope_params(1024, ...) tables.
constexpr int64_t kRopeTable = 1024;

// [frames * rows * cols, 3] int64 positions (frame0 + f, y, x) in (frame, row, column) order.
at::Tensor grid_positions(int64_t frame0, int64_t frames, int64_t rows, int64_t cols) {
  const auto f = at::arange(frame0, frame0 + frames, at::kLong).view({frames, 1, 1}).expand({frames, rows, cols});
  const auto y = at::arange(rows, at::kLong).view({1, rows, 1}).expand({frames, rows, cols});
  const auto x = at::arange(cols, at::kLong).view({1, 1, cols}).expand({frames, rows, cols});
  return at::stack({f, y, x}, -1).reshape({-1, 3});  // [frames * rows * cols, 3]
}

// [1, n, D] tokens of a frames x rows x cols grid -> [1, D, frames, rows, cols] (Conv3d's layout, for dumps).
at::Tensor as_grid(const at::Tensor& tokens, int64_t frames, int64_t rows, int64_t cols) {
  return tokens.transpose(1, 2).reshape({1, tokens.size(2), frames, rows, cols});
}

}  // namespace

WanS2VTransformer::WanS2VTransformer(const WanS2VTransformerConfig& config, at::ScalarType dtype)
    : config_(config),
      dtype_(dtype),
      rope_(config.head_dim(), kRopeTable),
      patch_weight_(param("patch_embedding.weight", {config.dim, config.in_dim, config.patch_size[0],
                                                     config.patch_size[1], config.patch_size[2]})),
      patch_bias_(param("patch_embedding.bias", {config.dim})),
      cond_weight_(param("cond_encoder.weight", {config.dim, config.cond_dim, config.patch_size[0],
                                                 config.patch_size[1], config.patch_size[2]})),
      cond_bias_(param("cond_encoder.bias", {config.dim})),
      head_modulation_(param("head.modulation", {1, 2, config.dim}, ParamDtype::kFloat32)),
      cond_mask_(param("trainable_cond_mask.weight", {3, config.dim})) {
  config_.validate("S2V transformer config");
  OMNI_CHECK_USAGE(dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf,
                   "the transformer runs in float32, bfloat16 or float16, not ", dtype);
  const int64_t dim = config.dim;
  // nn.Sequential indices: text_embedding = Linear, GELU, Linear; time_embedding = Linear, SiLU, Linear;
  // time_projection = SiLU, Linear. Wan runs the time embedding under autocast(float32).
  text_linear_1_ = child("text_embedding.0", std::make_unique<wan::Linear>(config.text_dim, dim));
  text_linear_2_ = child("text_embedding.2", std::make_unique<wan::Linear>(dim, dim));
  time_linear_1_ = child("time_embedding.0", std::make_unique<wan::Linear>(config.freq_dim, dim, ParamDtype::kFloat32));
  time_linear_2_ = child("time_embedding.2", std::make_unique<wan::Linear>(dim, dim, ParamDtype::kFloat32));
  time_projection_ = child("time_projection.1", std::make_unique<wan::Linear>(dim, 6 * dim, ParamDtype::kFloat32));
  for (int64_t i = 0; i < config.num_layers; ++i) {
    blocks_.push_back(child("blocks." + std::to_string(i),
                            std::make_unique<WanTransformerBlock>(dim, config.ffn_dim, config.num_heads,
                                                                  /*cross_attn_norm=*/true, config.eps, 0,
                                                                  wan::WeightNames::kWanOriginal)));
  }
  // Head_S2V: under autocast(float32) in Wan.
  head_ = child("head.head",
                std::make_unique<wan::Linear>(dim, config.out_dim * config.patch_volume(), ParamDtype::kFloat32));
  audio_encoder_ = child("casual_audio_encoder",
                         std::make_unique<WanS2VAudioEncoder>(config.audio_dim, dim, config.num_audio_token));
  injector_of_block_.assign(static_cast<size_t>(config.num_layers), -1);
  for (size_t k = 0; k < config.audio_inject_layers.size(); ++k) {
    // Each under "audio_injector" (its own names carry k): one module per injection, one HSDP unit each.
    injectors_.push_back(child("audio_injector", std::make_unique<WanS2VAudioInjector>(static_cast<int64_t>(k), dim,
                                                                                       config.num_heads, config.eps)));
    injector_of_block_[static_cast<size_t>(config.audio_inject_layers[k])] = static_cast<int>(k);
  }
  frame_packer_ = child("frame_packer", std::make_unique<WanS2VFramePacker>(config.in_dim, dim));
}

std::unique_ptr<WanS2VTransformer> WanS2VTransformer::load(const std::string& dir, at::ScalarType dtype,
                                                           const at::Device& device) {
  auto model = std::make_unique<WanS2VTransformer>(WanS2VTransformerConfig::load(dir), dtype);
  load_state(*model, io::Checkpoint::open(dir), dtype, device);
  return model;
}

const WanTransformerBlock& WanS2VTransformer::block(int i) const {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "block index ", i, " out of range [0, ", num_blocks(), ")");
  return *blocks_[static_cast<size_t>(i)];
}

const WanS2VAudioInjector* WanS2VTransformer::injector_after(int i) const {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "block index ", i, " out of range [0, ", num_blocks(), ")");
  const int k = injector_of_block_[static_cast<size_t>(i)];
  return k < 0 ? nullptr : injectors_[static_cast<size_t>(k)];
}

std::vector<const Module*> WanS2VTransformer::units() const {
  std::vector<const Module*> out;
  for (int i = 0; i < num_blocks(); ++i) {
    out.push_back(blocks_[static_cast<size_t>(i)]);
    if (const auto* injector = injector_after(i)) out.push_back(injector);
  }
  return out;
}

int WanS2VTransformer::block_unit(int i) const {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "block index ", i, " out of range [0, ", num_blocks(), ")");
  int injectors_before = 0;
  for (int j = 0; j < i; ++j) injectors_before += injector_of_block_[static_cast<size_t>(j)] >= 0 ? 1 : 0;
  return i + injectors_before;
}

int WanS2VTransformer::injector_unit(int i) const {
  return injector_after(i) ? block_unit(i) + 1 : -1;
}

std::pair<at::Tensor, at::Tensor> WanS2VTransformer::embed_timestep(const at::Tensor& timestep,
                                                                    const at::Device& device) const {
  // sinusoidal_embedding_1d in float64 over [t, 0] (the second row: the reference and motion tokens' zero
  // timestep), [cos | sin], then float32.
  const int64_t half = config_.freq_dim / 2;
  const auto f64 = at::TensorOptions().dtype(at::kDouble).device(device);
  const auto t = at::cat({timestep.to(device, at::kDouble).view({1}), at::zeros({1}, f64)});   // [2]
  const auto freqs = at::pow(10000.0, -at::arange(half, f64).div(static_cast<double>(half)));  // [half]
  const auto angles = at::outer(t, freqs);                                                     // [2, half]
  const auto sinusoid = at::cat({angles.cos(), angles.sin()}, 1).to(at::kFloat);               // [2, freq_dim]
  // Both rows in one product, as Wan embeds them.
  const auto e = time_linear_2_->forward(at::silu(time_linear_1_->forward(sinusoid)));    // [2, D]
  const auto e0 = time_projection_->forward(at::silu(e)).unflatten(1, {6, config_.dim});  // [2, 6, D]
  return {e0, e};
}

at::Tensor WanS2VTransformer::forward(const WanS2VInputs& in, UnitHooks* hooks, TokenSplit* split) const {
  const auto& c = config_;
  const int64_t dim = c.dim;
  OMNI_CHECK_USAGE(in.latents.dim() == 5 && in.latents.size(0) == 1 && in.latents.size(1) == c.in_dim,
                   "S2V: the latents must be [1, ", c.in_dim, ", T, h, w] (one clip), got ", in.latents.sizes());
  const int64_t frames = in.latents.size(2), height = in.latents.size(3), width = in.latents.size(4);
  OMNI_CHECK_USAGE(height % 8 == 0 && width % 8 == 0, "S2V: the latent size ", height, "x", width,
                   " must be a multiple of 8 (64 pixels)");
  const int64_t rows = height / c.patch_size[1], cols = width / c.patch_size[2];
  const int64_t frame_tokens = rows * cols, video_tokens = frames * frame_tokens;
  auto check_grid = [&](const at::Tensor& t, const char* what, int64_t channels, int64_t t_frames) {
    OMNI_CHECK_USAGE(t.dim() == 5 && t.size(0) == 1 && t.size(1) == channels && t.size(2) == t_frames &&
                         t.size(3) == height && t.size(4) == width,
                     "S2V: ", what, " must be [1, ", channels, ", ", t_frames, ", ", height, ", ", width, "], got ",
                     t.sizes());
  };
  check_grid(in.ref_latents, "the reference latent", c.in_dim, 1);
  check_grid(in.cond_states, "the pose latents", c.cond_dim, frames);
  if (!in.drop_motion_frames) {
    OMNI_CHECK_USAGE(in.motion_latents.dim() == 5 && in.motion_latents.size(0) == 1 &&
                         in.motion_latents.size(1) == c.in_dim && in.motion_latents.size(3) == height &&
                         in.motion_latents.size(4) == width,
                     "S2V: the motion latents must be [1, ", c.in_dim, ", M, ", height, ", ", width, "], got ",
                     in.motion_latents.sizes());
  }
  OMNI_CHECK_USAGE(in.context.dim() == 3 && in.context.size(0) == 1 && in.context.size(1) <= c.text_len &&
                       in.context.size(2) == c.text_dim,
                   "S2V: the context must be [1, L <= ", c.text_len, ", ", c.text_dim, "], got ", in.context.sizes());
  OMNI_CHECK_USAGE(in.timestep.numel() == 1, "S2V: one timestep per call, got ", in.timestep.sizes());
  OMNI_CHECK_USAGE(
      in.audio.dim() == 4 && in.audio.size(0) == 1 && in.audio.size(2) == c.audio_dim && in.audio.size(3) > 0,
      "S2V: the audio must be [1, 25, ", c.audio_dim, ", slots], got ", in.audio.sizes());
  OMNI_CHECK_USAGE(in.motion_frames >= 0, "S2V: motion_frames must not be negative");
  // The audio frames the encoder makes (two stride-2 causal convolutions: ceil twice), less the motion's.
  const int64_t motion_latent_frames = (in.motion_frames + 3) / 4;
  const int64_t audio_frames = ((in.motion_frames + in.audio.size(3) + 1) / 2 + 1) / 2 - motion_latent_frames;
  OMNI_CHECK_USAGE(audio_frames == frames, "S2V: ", in.audio.size(3), " audio slots after ", in.motion_frames,
                   " motion frames give ", audio_frames, " latent frames of audio; the latents have ", frames,
                   " (4 slots a latent frame)");

  // A split's usage errors before any unit is gathered (the heads Ulysses divides; at least a token a rank).
  if (split) {
    WanTransformerConfig heads;
    heads.num_attention_heads = c.num_heads;
    heads.attention_head_dim = c.head_dim();
    split->check(heads, video_tokens);
  }
  if (hooks) hooks->before(UnitHooks::kRootUnit);
  OMNI_CHECK(patch_weight_.defined(), "S2V transformer root parameters are not loaded (or not gathered)");
  const auto device = patch_weight_.device();

  // 1. Audio tokens: motion_frames copies of the first slot before the clip's slots; the first
  // motion_latent_frames audio frames (the copies') dropped.
  const auto audio = in.audio.to(device, at::kFloat);  // [1, 25, A, slots]
  const auto lead = audio.narrow(3, 0, 1).expand({-1, -1, -1, in.motion_frames});
  const AudioTokens encoded = audio_encoder_->forward(at::cat({lead, audio}, 3));  // [1, T', n + 1 | 1, D]
  debug::dump("audio.local", encoded.local);
  debug::dump("audio.global", encoded.global);
  const auto audio_local = encoded.local.narrow(1, motion_latent_frames, frames);    // [1, T, n + 1, D]
  const auto audio_global = encoded.global.narrow(1, motion_latent_frames, frames);  // [1, T, 1, D]
  debug::dump("audio.merged_emb", audio_local);
  debug::dump("audio.emb_global", audio_global);

  // 2. Tokens: video (+ pose), reference, motion; each group's rotary positions and mask row.
  auto video = wan::embed_patches(in.latents.to(device, dtype_), patch_weight_, patch_bias_, c.patch_size);
  const auto cond = wan::embed_patches(in.cond_states.to(device, dtype_), cond_weight_, cond_bias_, c.patch_size);
  debug::dump("embed.x_patch", as_grid(video, frames, rows, cols));
  debug::dump("embed.cond", as_grid(cond, frames, rows, cols));
  video = video + cond;  // [1, Lv, D]
  const auto ref = wan::embed_patches(in.ref_latents.to(device, dtype_), patch_weight_, patch_bias_,
                                      c.patch_size);  // [1, hw, D]
  debug::dump("embed.ref_patch", as_grid(ref, 1, rows, cols));
  MotionTokens motion;
  if (in.drop_motion_frames) {
    motion.tokens = video.new_empty({1, 0, dim});
    motion.positions = at::empty({0, 3}, at::kLong);
  } else {
    // add_last_motion (config) times the forward's 2: all three groups, or none of the newest.
    motion = frame_packer_->forward(in.motion_latents.to(device, dtype_), c.add_last_motion ? 2 : 0);
  }
  debug::dump("embed.motion_tokens", motion.tokens);
  at::Tensor x = at::cat({video, ref, motion.tokens}, 1);  // [1, S, D]
  const int64_t seq = x.size(1), ref_end = video_tokens + frame_tokens;
  const auto mask_row = [&](int64_t row) { return cond_mask_.select(0, row).to(dtype_); };  // [D]
  x.narrow(1, 0, video_tokens).add_(mask_row(kVideoMask));
  x.narrow(1, video_tokens, frame_tokens).add_(mask_row(kReferenceMask));
  x.narrow(1, ref_end, seq - ref_end).add_(mask_row(kMotionMask));
  if (debug::dumps_enabled()) {
    auto ids = at::full({1, seq}, kVideoMask, at::kLong);
    ids.narrow(1, video_tokens, frame_tokens).fill_(kReferenceMask);
    ids.narrow(1, ref_end, seq - ref_end).fill_(kMotionMask);
    debug::dump("embed.mask_ids", ids);
    debug::dump("embed.seg_idx", at::full({1}, c.zero_timestep ? video_tokens : 0, at::kLong));
    debug::dump("embed.tokens", x);
  }
  const at::Tensor positions = at::cat({grid_positions(0, frames, rows, cols),
                                        grid_positions(kReferenceFrame, 1, rows, cols), motion.positions});  // [S, 3]
  const RotaryEmbedding rope = rope_.at_positions(positions, device);                                        // [S, d/2]
  debug::dump("rope.pos", positions);
  debug::dump("rope.freqs", at::stack({rope.cos, rope.sin}, -1));

  // 3. Timestep: the video tokens' row t, the others' row 0 (zero_timestep): two runs of the blocks' modulation.
  const auto [e0, e] = embed_timestep(in.timestep, device);  // [2, 6, D], [2, D] float32
  debug::dump("embed.e", e.narrow(0, 0, 1));
  debug::dump("embed.e0", (c.zero_timestep ? e0 : e0.narrow(0, 0, 1).expand({2, 6, dim})).transpose(0, 1).unsqueeze(0));
  TokenRuns runs;
  at::Tensor timestep_proj;
  if (c.zero_timestep) {
    runs.starts = {0, video_tokens};
    runs.tokens = seq;
    timestep_proj = e0.unsqueeze(0);  // [1, 2, 6, D]
  } else {
    timestep_proj = e0.narrow(0, 0, 1);  // [1, 6, D]
  }

  // 4. Text: zero rows up to text_len, then text_embedding (Linear, tanh-GELU, Linear).
  auto context = at::zeros({1, c.text_len, c.text_dim}, x.options());  // [1, text_len, text_dim]
  context.narrow(1, 0, in.context.size(1)).copy_(in.context);
  context = text_linear_2_->forward(at::gelu(text_linear_1_->forward(context), "tanh"));  // [1, text_len, D]
  debug::dump("embed.context", context);

  // Sequence parallelism: this rank's share [first, first + S') of all the tokens, its runs, modulation rows and
  // rope rows; the attention backend that joins the shares.
  WanTransformerState st;
  st.tokens = x;
  st.cond.timestep_proj = timestep_proj;
  st.runs = runs;
  st.rope = rope;
  st.batch = 1;
  AttentionBackend* backend = split ? split->split(st) : nullptr;
  x = st.tokens;                         // [1, S', D]
  const int64_t first = st.first_token;  // 0 without a split
  // Whole sequences for the dumps, so that a split run's line up with one rank's (a collective of the split's
  // ranks, which all collect dumps).
  const auto whole = [&](const at::Tensor& t) { return split ? split->gather(t) : t; };

  // 5. Blocks, each followed by its audio injection if it has one.
  const auto frames_audio = audio_local.select(0, 0);                   // [T, n + 1, D]
  const auto frames_global = audio_global.select(0, 0).select(1, 0);    // [T, D]
  const int64_t video_end = std::min(first + x.size(1), video_tokens);  // the share's video tokens end here
  for (int i = 0; i < num_blocks(); ++i) {
    if (hooks) hooks->before(block_unit(i));
    x = block(i).forward(x, context, st.cond.timestep_proj, st.runs, st.rope, backend);  // [1, S', D]
    if (hooks) hooks->after(block_unit(i));
    const std::string name = "block." + std::to_string(i);
    if (debug::dumps_enabled()) debug::dump(name + ".out", whole(x));
    if (const WanS2VAudioInjector* injector = injector_after(i)) {
      // Every rank gathers the injector's unit, a share without video tokens too (HSDP's gathers are collective).
      if (hooks) hooks->before(injector_unit(i));
      // The share's video tokens frame by frame ('b (t n) c -> (b t) n c'), each frame's tokens with its own audio:
      // the whole frames in one call [F', hw, D], a frame cut by the split alone [1, k, D]; the result added in
      // place. Without a split: one call over all T frames.
      for (int64_t a = first; a < video_end;) {
        const int64_t f = a / frame_tokens;
        const bool whole_frames = a % frame_tokens == 0 && a + frame_tokens <= video_end;
        const int64_t count = whole_frames ? (video_end - a) / frame_tokens : 1;
        const int64_t b = whole_frames ? a + count * frame_tokens : std::min((f + 1) * frame_tokens, video_end);
        const auto tokens = x.narrow(1, a - first, b - a).reshape({count, (b - a) / count, dim});
        at::Tensor adain;
        const bool dump = debug::dumps_enabled() && !split;
        const auto added = injector->forward(tokens, frames_audio.narrow(0, f, count),
                                             frames_global.narrow(0, f, count), dump ? &adain : nullptr);
        x.narrow(1, a - first, b - a).add_(added.reshape({1, b - a, dim}));
        if (dump) {
          debug::dump("inject." + std::to_string(i) + ".adain", adain);
          debug::dump("inject." + std::to_string(i) + ".attn", added);
        }
        a = b;
      }
      if (hooks) hooks->after(injector_unit(i));
    }
    if (debug::dumps_enabled()) debug::dump(name + ".after_audio", whole(x));
  }

  // 6. Head (Head_S2V, float32) on the video tokens alone: LayerNorm, modulation by head.modulation + e(t)
  // (shift first), head.head.
  // A split's share runs the head on all its tokens, gathered (the reference and motion tokens' rows dropped).
  const auto mod = head_modulation_ + e.narrow(0, 0, 1).unsqueeze(1);  // [1, 2, D] float32
  const auto normed = wan::layer_norm_fp32(split ? x : x.narrow(1, 0, video_tokens), {}, {}, c.eps);  // float32
  auto h = head_->forward(normed * (1 + mod.narrow(1, 1, 1)) + mod.narrow(1, 0, 1));  // [1, Lv | S', 64]
  if (split) h = split->gather(h.contiguous()).narrow(1, 0, video_tokens);            // [1, Lv, 64]
  debug::dump("head.out", h);
  // Unpatchify: feature (p, q, r, c) of token (f, y, x) -> [c, f p, y q, x r].
  const int64_t pt = c.patch_size[0], ph = c.patch_size[1], pw = c.patch_size[2];
  auto out = h.to(dtype_).reshape({1, frames, rows, cols, pt, ph, pw, c.out_dim});  // [1, T, h', w', pt, ph, pw, C]
  out = out.permute({0, 7, 1, 4, 2, 5, 3, 6});                                      // [1, C, T, pt, h', ph, w', pw]
  out = out.reshape({1, c.out_dim, frames * pt, rows * ph, cols * pw});             // [1, C, T, h, w]
  if (hooks) hooks->after(UnitHooks::kRootUnit);
  return out;
}

}  // namespace omni::models
