#include "models/wan_transformer.h"

#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor_dump.h"
#include "io/safetensors.h"

namespace omni::models {

namespace {
const char* kBlockPrefix = "blocks.";
const char* kVaceBlockPrefix = "vace_blocks.";
const char* kFaceAdapterPrefix = "face_adapter.";

}  // namespace

WanTransformer3DModel::WanTransformer3DModel(const WanTransformerConfig& config, at::ScalarType dtype)
    : config_(config),
      dtype_(dtype),
      rope_(config.attention_head_dim, config.rope_max_seq_len),
      scale_shift_table_(param("scale_shift_table", {1, 2, config.inner_dim()}, ParamDtype::kFloat32)),
      patch_weight_(param("patch_embedding.weight", {config.inner_dim(), config.in_channels, config.patch_size[0],
                                                     config.patch_size[1], config.patch_size[2]})),
      patch_bias_(param("patch_embedding.bias", {config.inner_dim()})) {
  config_.validate("transformer config");
  OMNI_CHECK_USAGE(dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf,
                   "the transformer runs in float32, bfloat16 or float16, not ", dtype);
  const int64_t dim = config.inner_dim();
  condition_embedder_ =
      child("condition_embedder", std::make_unique<WanTimeTextEmbedding>(dim, config.freq_dim, config.text_dim,
                                                                         config.image_dim, config.pos_embed_seq_len));
  for (int64_t i = 0; i < config.num_layers; ++i) {
    blocks_.push_back(
        child(kBlockPrefix + std::to_string(i),
              std::make_unique<WanTransformerBlock>(dim, config.ffn_dim, config.num_attention_heads,
                                                    config.cross_attn_norm, config.eps, config.added_kv_proj_dim)));
  }
  proj_out_ = child("proj_out", std::make_unique<wan::Linear>(dim, config.out_channels * config.patch_volume()));
  if (config.is_animate()) {
    pose_patch_weight_ = &param("pose_patch_embedding.weight", {dim, config.latent_channels, config.patch_size[0],
                                                                config.patch_size[1], config.patch_size[2]});
    pose_patch_bias_ = &param("pose_patch_embedding.bias", {dim});
    motion_encoder_ =
        child("motion_encoder", std::make_unique<WanAnimateMotionEncoder>(
                                    config.motion_encoder_size, config.motion_style_dim, config.motion_dim,
                                    config.motion_encoder_dim, config.motion_encoder_channel_sizes));
    face_encoder_ = child("face_encoder", std::make_unique<WanAnimateFaceEncoder>(config.motion_encoder_dim, dim,
                                                                                  config.face_encoder_hidden_dim,
                                                                                  config.face_encoder_num_heads));
    for (int64_t k = 0; k < config.num_face_adapters(); ++k)
      face_adapters_.push_back(
          child(kFaceAdapterPrefix + std::to_string(k),
                std::make_unique<WanAnimateFaceAdapter>(dim, config.num_attention_heads, config.eps)));
  }
  if (config.is_vace()) {
    vace_patch_weight_ = &param("vace_patch_embedding.weight", {dim, config.vace_in_channels, config.patch_size[0],
                                                                config.patch_size[1], config.patch_size[2]});
    vace_patch_bias_ = &param("vace_patch_embedding.bias", {dim});
    for (size_t k = 0; k < config.vace_layers.size(); ++k) {
      vace_blocks_.push_back(
          child(kVaceBlockPrefix + std::to_string(k),
                std::make_unique<WanVaceBlock>(dim, config.ffn_dim, config.num_attention_heads, config.cross_attn_norm,
                                               config.eps, /*input_projection=*/k == 0)));
    }
  }
}

std::unique_ptr<WanTransformer3DModel> WanTransformer3DModel::load(const std::string& component_dir,
                                                                   at::ScalarType dtype, const at::Device& device) {
  auto config = WanTransformerConfig::load(component_dir);
  auto model = std::make_unique<WanTransformer3DModel>(config, dtype);
  auto ckpt = io::Checkpoint::open(component_dir);
  load_state(*model, ckpt, dtype, device);
  return model;
}

Module& WanTransformer3DModel::block(int i) {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "block index ", i, " out of range [0, ", num_blocks(), ")");
  return *blocks_[i];
}

const WanTransformerBlock& WanTransformer3DModel::block(int i) const {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "block index ", i, " out of range [0, ", num_blocks(), ")");
  return *blocks_[i];
}

const WanVaceBlock& WanTransformer3DModel::vace_block(int k) const {
  OMNI_CHECK(k >= 0 && k < num_vace_blocks(), "VACE block index ", k, " out of range [0, ", num_vace_blocks(), ")");
  return *vace_blocks_[k];
}

std::vector<const Module*> WanTransformer3DModel::units() const {
  std::vector<const Module*> out(vace_blocks_.begin(), vace_blocks_.end());
  for (int i = 0; i < num_blocks(); ++i) {
    out.push_back(blocks_[i]);
    if (const auto* adapter = face_adapter_after(i)) out.push_back(adapter);
  }
  return out;
}

const WanAnimateFaceAdapter* WanTransformer3DModel::face_adapter_after(int i) const {
  if (face_adapters_.empty() || i % config_.inject_face_latents_blocks != 0) return nullptr;
  return face_adapters_.at(i / config_.inject_face_latents_blocks);
}

int WanTransformer3DModel::block_unit(int i) const {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "block index ", i, " out of range [0, ", num_blocks(), ")");
  // The VACE blocks first, then each block with the face adapters of the blocks before it.
  const int adapters_before = face_adapters_.empty() ? 0
                                                     : (i + config_.inject_face_latents_blocks - 1) /
                                                           static_cast<int>(config_.inject_face_latents_blocks);
  return num_vace_blocks() + i + adapters_before;
}

int WanTransformer3DModel::face_adapter_unit(int i) const {
  return face_adapter_after(i) ? block_unit(i) + 1 : -1;
}

std::vector<ParamRef> WanTransformer3DModel::root_parameters() const {
  return parameters_except({kBlockPrefix, kVaceBlockPrefix, kFaceAdapterPrefix});
}

std::vector<ParamRef> WanTransformer3DModel::block_parameters(int i) const {
  std::vector<ParamRef> out;
  block(i).collect(kBlockPrefix + std::to_string(i) + ".", out);
  return out;
}

WanTransformerState WanTransformer3DModel::prepare(const at::Tensor& hidden_states, const at::Tensor& timestep,
                                                   const at::Tensor& encoder_hidden_states,
                                                   const at::Tensor& encoder_hidden_states_image) const {
  const auto& c = config_;
  OMNI_CHECK(hidden_states.dim() == 5 && hidden_states.size(1) == c.in_channels, "transformer input must be [B, ",
             c.in_channels, ", F, H, W], got ", hidden_states.sizes());
  const int64_t batch = hidden_states.size(0);
  const int64_t pt = c.patch_size[0], ph = c.patch_size[1], pw = c.patch_size[2];
  const int64_t frames = hidden_states.size(2), height = hidden_states.size(3), width = hidden_states.size(4);
  OMNI_CHECK_USAGE(frames % pt == 0 && height % ph == 0 && width % pw == 0, "latent size ", frames, "x", height, "x",
                   width, " (frames x height x width) is not a multiple of the transformer patch size ", pt, "x", ph,
                   "x", pw);
  const int64_t gf = frames / pt, gh = height / ph, gw = width / pw, seq = gf * gh * gw;
  OMNI_CHECK(encoder_hidden_states.dim() == 3 && encoder_hidden_states.size(0) == batch &&
                 encoder_hidden_states.size(2) == c.text_dim,
             "encoder_hidden_states must be [", batch, ", L, ", c.text_dim, "], got ", encoder_hidden_states.sizes());
  OMNI_CHECK((timestep.dim() == 1 && timestep.size(0) == batch) ||
                 (timestep.dim() == 2 && timestep.size(0) == batch && timestep.size(1) == seq),
             "timestep must be [", batch, "] or [", batch, ", ", seq, "] (one per token), got ", timestep.sizes());

  OMNI_CHECK(patch_weight_.defined(), "transformer root parameters are not loaded (or not gathered)");
  // Inputs may arrive on the host (latents, scheduler timesteps); everything runs where the weights are.
  const auto device = patch_weight_.device();

  WanTransformerState st;
  st.batch = batch;
  st.grid = {gf, gh, gw};
  st.rope = rope_.forward(gf, gh, gw, device);

  st.tokens =
      wan::embed_patches(hidden_states.to(device, dtype_), patch_weight_, patch_bias_, c.patch_size);  // [B, S, D]

  // The timesteps go to the device inside (their runs are found where they arrive, usually the host).
  st.cond =
      condition_embedder_->forward(timestep, encoder_hidden_states.to(device), dtype_, encoder_hidden_states_image);
  st.runs = st.cond.runs;
  return st;
}

at::Tensor WanTransformer3DModel::head(const at::Tensor& x, const WanTransformerState& st) const {
  const auto& c = config_;
  // [B, D], or [B, R', D]: the rows of this rank's runs (st.runs) of st.cond.runs
  const auto& runs = st.runs;
  const auto temb = runs.empty() ? st.cond.temb : st.cond.temb.narrow(1, st.first_run, runs.size());
  // Output modulation from the raw temb (not SiLU'd, not time_proj): shift first, then scale.
  const auto mod = scale_shift_table_.unsqueeze(0) + (runs.empty() ? temb.unsqueeze(1) : temb).unsqueeze(2);
  // mod: [B, R, 2, D] float32 (R = 1 without runs)
  const at::Tensor none;
  // Each batch row alone (wan::each_batch_row), through the norm, its modulation and proj_out.
  auto h = wan::each_batch_row(st.batch, [&](int64_t b) {
    const auto xb = x.narrow(0, b, 1), mb = mod.narrow(0, b, 1);    // [1, S, D], [1, R, 2, D]
    const auto norm = wan::layer_norm_fp32(xb, none, none, c.eps);  // [1, S, D] float32
    at::Tensor hb;
    if (runs.empty()) {
      hb = (norm * (1 + mb.select(2, 1)) + mb.select(2, 0)).to(dtype_);  // [1, 1, D] scale and shift
    } else {
      hb = at::empty(xb.sizes(), xb.options().dtype(dtype_));  // [1, S, D]
      for (int64_t r = 0; r < runs.size(); ++r) {
        const int64_t begin = runs.start(r), n = runs.length(r);
        const auto shift = mb.select(2, 0).narrow(1, r, 1), scale = mb.select(2, 1).narrow(1, r, 1);  // [1, 1, D]
        hb.narrow(1, begin, n).copy_(norm.narrow(1, begin, n) * (1 + scale) + shift);
      }
    }
    return proj_out_->forward(hb);  // [1, S', pt*ph*pw*C_out]
  });
  return h;  // [B, S', pt*ph*pw*C_out]
}

at::Tensor WanTransformer3DModel::unpatchify(const at::Tensor& h, const WanTransformerState& st) const {
  const auto& c = config_;
  const int64_t pt = c.patch_size[0], ph = c.patch_size[1], pw = c.patch_size[2];
  const auto [gf, gh, gw] = st.grid;
  auto v = h.reshape({st.batch, gf, gh, gw, pt, ph, pw, c.out_channels});   // [B, F', H', W', pt, ph, pw, C]
  v = v.permute({0, 7, 1, 4, 2, 5, 3, 6});                                  // [B, C, F', pt, H', ph, W', pw]
  return v.reshape({st.batch, c.out_channels, gf * pt, gh * ph, gw * pw});  // [B, C, F, H, W]
}

void WanTransformer3DModel::add_pose(const at::Tensor& pose, WanTransformerState& st) const {
  const auto& c = config_;
  const auto [gf, gh, gw] = st.grid;
  OMNI_CHECK_USAGE(pose.dim() == 5 && pose.size(0) == st.batch && pose.size(1) == c.latent_channels &&
                       pose.size(2) == (gf - 1) * c.patch_size[0] && pose.size(3) == gh * c.patch_size[1] &&
                       pose.size(4) == gw * c.patch_size[2],
                   "Animate: the pose latents must be [", st.batch, ", ", c.latent_channels, ", ",
                   (gf - 1) * c.patch_size[0], ", ", gh * c.patch_size[1], ", ", gw * c.patch_size[2],
                   "] (one latent frame fewer than the video's: the first is the reference's), got ", pose.sizes());
  OMNI_CHECK(pose_patch_weight_->defined(), "transformer root parameters are not loaded (or not gathered)");
  const at::Tensor tokens = wan::embed_patches(pose.to(pose_patch_weight_->device(), dtype_), *pose_patch_weight_,
                                               *pose_patch_bias_, c.patch_size);  // [B, (F' - 1) H' W', D]
  // diffusers: hidden_states[:, :, 1:] += pose (frame-major tokens: all but the first frame's).
  st.tokens.narrow(1, gh * gw, tokens.size(1)).add_(tokens);
}

at::Tensor WanTransformer3DModel::encode_face(const at::Tensor& face_pixels, int64_t motion_batch,
                                              const WanTransformerState& st) const {
  const auto& c = config_;
  const int64_t size = c.motion_encoder_size;
  OMNI_CHECK_USAGE(face_pixels.dim() == 5 && face_pixels.size(0) == st.batch && face_pixels.size(1) == 3 &&
                       face_pixels.size(3) == size && face_pixels.size(4) == size,
                   "Animate: the face crops must be [", st.batch, ", 3, T, ", size, ", ", size, "], got ",
                   face_pixels.sizes());
  const int64_t frames = face_pixels.size(2), reduced = WanAnimateFaceEncoder::reduced_frames(frames);
  OMNI_CHECK_USAGE(reduced + 1 == st.grid[0], "Animate: ", frames, " face frames give ", reduced + 1,
                   " latent frames with the reference's; the video has ", st.grid[0]);
  const auto device = pose_patch_weight_->device();
  // [B, 3, T, s, s] -> [B * T, 3, s, s], batch-major, through the motion encoder motion_batch crops at a time
  // (diffusers' torch.split: the same groups, so the same convolution batches).
  const at::Tensor crops =
      face_pixels.to(device, dtype_).permute({0, 2, 1, 3, 4}).reshape({-1, 3, size, size});  // [B * T, 3, s, s]
  const int64_t group = motion_batch > 0 ? motion_batch : c.motion_encoder_batch_size;
  std::vector<at::Tensor> motion;
  for (int64_t begin = 0; begin < crops.size(0); begin += group)
    motion.push_back(motion_encoder_->forward(crops.narrow(0, begin, std::min(group, crops.size(0) - begin))));
  const at::Tensor vectors = at::cat(motion).view({st.batch, frames, -1});  // [B, T, motion_encoder_dim]
  const at::Tensor face = face_encoder_->forward(vectors);                  // [B, T', N, D]
  // A zero frame first: the reference's latent frame has no face.
  return at::cat({at::zeros_like(face.narrow(1, 0, 1)), face}, 1);  // [B, F', N, D]
}

at::Tensor WanTransformer3DModel::embed_control(const at::Tensor& control, const WanTransformerState& st) const {
  const auto& c = config_;
  const auto [gf, gh, gw] = st.grid;
  OMNI_CHECK(control.dim() == 5 && (control.size(0) == st.batch || control.size(0) == 1) &&
                 control.size(1) == c.vace_in_channels && control.size(2) % c.patch_size[0] == 0 &&
                 control.size(2) / c.patch_size[0] <= gf && control.size(3) == gh * c.patch_size[1] &&
                 control.size(4) == gw * c.patch_size[2],
             "VACE context must be [", st.batch, " or 1, ", c.vace_in_channels, ", F' <= ", gf * c.patch_size[0], ", ",
             gh * c.patch_size[1], ", ", gw * c.patch_size[2], "], got ", control.sizes());
  OMNI_CHECK(vace_patch_weight_->defined(), "transformer root parameters are not loaded (or not gathered)");
  at::Tensor tokens = wan::embed_patches(control.to(vace_patch_weight_->device(), dtype_), *vace_patch_weight_,
                                         *vace_patch_bias_, c.patch_size);  // [B, S_c, D]
  // One context for every batch row (the pipeline's cond and uncond share it): embedded once, then a copy per
  // row, since each row's VACE blocks write their own.
  if (tokens.size(0) != st.batch) tokens = tokens.expand({st.batch, tokens.size(1), tokens.size(2)}).contiguous();
  const int64_t seq = st.tokens.size(1);
  // diffusers pads the context's tokens with zeros up to the video's.
  if (tokens.size(1) < seq)
    tokens = at::cat({tokens, tokens.new_zeros({st.batch, seq - tokens.size(1), tokens.size(2)})}, 1);
  return tokens;  // [B, S, D]
}

at::Tensor WanTransformer3DModel::forward(const at::Tensor& hidden_states, const at::Tensor& timestep,
                                          const at::Tensor& encoder_hidden_states, const ForwardHooks& hooks,
                                          const at::Tensor& encoder_hidden_states_image,
                                          const at::Tensor& control_hidden_states,
                                          const std::vector<double>& control_scale,
                                          const AnimateInputs& animate) const {
  OMNI_CHECK_USAGE((animate.pose.defined() && animate.face_pixels.defined()) == config_.is_animate() &&
                       (animate.pose.defined() == animate.face_pixels.defined()),
                   config_.is_animate()
                       ? "this transformer (Animate) takes pose latents and face crops; they were not both given"
                       : "pose latents or face crops were given to a transformer that is not Animate's");
  OMNI_CHECK_USAGE(control_hidden_states.defined() == config_.is_vace(),
                   config_.is_vace() ? "this transformer (VACE) takes a VACE context; none was given"
                                     : "a VACE context was given to a transformer without VACE blocks");
  OMNI_CHECK_USAGE(control_scale.empty() || control_scale.size() == vace_blocks_.size(), "VACE: ", control_scale.size(),
                   " conditioning scales for ", vace_blocks_.size(), " VACE blocks (give one, or one per block)");
  OMNI_CHECK_USAGE(encoder_hidden_states_image.defined() == config_.has_image_branch(),
                   config_.has_image_branch()
                       ? "this transformer (a Wan2.1 image model) conditions on CLIP image states; none were given"
                       : "CLIP image states were given to a transformer without the image branch");
  // A split's usage errors come before any unit is gathered; every rank sees the same inputs and fails alike.
  if (hooks.tokens && hidden_states.dim() == 5) {
    hooks.tokens->check(config_,
                        config_.token_count(hidden_states.size(2), hidden_states.size(3), hidden_states.size(4)));
  }
  if (hooks.units) hooks.units->before(UnitHooks::kRootUnit);
  auto st = prepare(hidden_states, timestep, encoder_hidden_states, encoder_hidden_states_image);
  if (config_.is_vace()) st.control = embed_control(control_hidden_states, st);
  if (config_.is_animate()) {
    add_pose(animate.pose, st);
    st.face = encode_face(animate.face_pixels, animate.motion_batch, st);
  }
  AttentionBackend* backend = hooks.tokens ? hooks.tokens->split(st) : hooks.attention;
  // VACE: its blocks run first, on this rank's tokens, each leaving a hint [B, S', D] for its main block.
  std::vector<at::Tensor> hints;
  std::vector<double> scale = control_scale;
  if (config_.is_vace()) {
    if (scale.empty()) scale.assign(vace_blocks_.size(), 1.0);
    // diffusers passes the scales as a tensor of the transformer's dtype: each rounded to it (0.7 is 0.69921875 in
    // bfloat16).
    for (double& v : scale) v = round_to_dtype(v, dtype_);
    at::Tensor control = st.control;
    for (int k = 0; k < num_vace_blocks(); ++k) {
      if (hooks.units) hooks.units->before(k);
      at::Tensor hint = wan::each_batch_row(st.batch, [&](int64_t b) {
        auto [h, next] = vace_blocks_[k]->forward_vace(
            control.narrow(0, b, 1), st.tokens.narrow(0, b, 1), st.cond.context.narrow(0, b, 1),
            st.cond.timestep_proj.narrow(0, b, 1), st.runs, st.rope, backend);
        control.narrow(0, b, 1).copy_(next);  // the next VACE block's context
        return h;                             // [1, S', D]
      });                                     // [B, S', D]
      hints.push_back(std::move(hint));
      if (hooks.units) hooks.units->after(k);
    }
  }
  const WanBlockRun blocks(*this, st.cond.context, st.cond.context_image, st.cond.timestep_proj, st.runs, st.rope,
                           backend, hooks.units, hooks.tokens, hints, scale, st.face, st.first_token,
                           st.grid[1] * st.grid[2]);
  at::Tensor x = hooks.blocks ? hooks.blocks->run(blocks, st.tokens) : blocks.run(0, num_blocks(), st.tokens);
  at::Tensor h = head(x, st);                     // [B, S', pt*ph*pw*C_out]: this rank's tokens
  if (hooks.tokens) h = hooks.tokens->gather(h);  // [B, S, pt*ph*pw*C_out] on every rank
  auto out = unpatchify(h, st);
  if (hooks.units) hooks.units->after(UnitHooks::kRootUnit);
  return out;
}

WanBlockRun::WanBlockRun(const WanTransformer3DModel& model, const at::Tensor& context, const at::Tensor& context_image,
                         const at::Tensor& timestep_proj, const TokenRuns& runs, const RotaryEmbedding& rope,
                         AttentionBackend* backend, UnitHooks* hooks, TokenSplit* split,
                         const std::vector<at::Tensor>& hints, const std::vector<double>& hint_scale,
                         const at::Tensor& face, int64_t first_token, int64_t frame_tokens)
    : model_(model),
      context_(context),
      context_image_(context_image),
      timestep_proj_(timestep_proj),
      runs_(runs),
      rope_(rope),
      backend_(backend),
      hooks_(hooks),
      split_(split),
      hints_(hints),
      hint_scale_(hint_scale),
      hint_of_block_(model.num_blocks(), -1),
      face_(face),
      first_token_(first_token),
      frame_tokens_(frame_tokens) {
  OMNI_CHECK(face.defined() == (model.num_face_adapters() > 0), "WanBlockRun: face tokens ",
             face.defined() ? "given to" : "missing for", " a model with ", model.num_face_adapters(),
             " face adapters");
  const auto& layers = model.config().vace_layers;
  OMNI_CHECK(hints.empty() || (hints.size() == layers.size() && hint_scale.size() == layers.size()),
             "WanBlockRun: ", hints.size(), " VACE hints and ", hint_scale.size(), " scales for ", layers.size(),
             " VACE layers");
  for (size_t k = 0; k < hints.size(); ++k) hint_of_block_[layers[k]] = static_cast<int>(k);
}

int WanBlockRun::num_blocks() const {
  return model_.num_blocks();
}

at::Tensor WanBlockRun::run(int first, int end, at::Tensor x) const {
  OMNI_CHECK(first >= 0 && first <= end && end <= num_blocks(), "blocks [", first, ", ", end, ") out of [0, ",
             num_blocks(), ")");
  for (int i = first; i < end; ++i) {
    if (hooks_) hooks_->before(model_.block_unit(i));
    // Each batch row alone, under one gather of the block's unit (wan::each_batch_row says why).
    x = wan::each_batch_row(x.size(0), [&](int64_t b) {
      const at::Tensor image = context_image_.defined() ? context_image_.narrow(0, b, 1) : at::Tensor();
      return model_.block(i).forward(x.narrow(0, b, 1), context_.narrow(0, b, 1), timestep_proj_.narrow(0, b, 1), runs_,
                                     rope_, backend_, image);  // [1, S', D]
    });                                                        // [B, S', D]
    // Whole sequences, so that a split run's dumps line up with one rank's: a collective of the split's
    // ranks, which all collect dumps for the video (job::GenerationJob::run).
    if (debug::dumps_enabled()) debug::dump("blocks." + std::to_string(i), split_ ? split_->gather(x) : x);
    // VACE: the paired block's hint, after the block (diffusers' hidden_states + control_hint * scale).
    if (const int k = hint_of_block_[i]; k >= 0) x = x + hints_[k] * hint_scale_[k];
    if (hooks_) hooks_->after(model_.block_unit(i));
    // Animate: the face adapter after the block, a unit of its own (diffusers' face_adapter_output + hidden).
    if (const WanAnimateFaceAdapter* adapter = model_.face_adapter_after(i)) {
      const int unit = model_.face_adapter_unit(i);
      if (hooks_) hooks_->before(unit);
      x = wan::each_batch_row(x.size(0), [&](int64_t b) {
        const at::Tensor xb = x.narrow(0, b, 1);
        return adapter->forward(xb, face_.narrow(0, b, 1), first_token_, frame_tokens_) + xb;  // [1, S', D]
      });
      if (hooks_) hooks_->after(unit);
    }
  }
  return x;
}

void WanBlockRun::pass_over(int first, bool keep_gathers) const {
  if (hooks_ == nullptr || first >= num_blocks()) return;
  if (!keep_gathers) return hooks_->skip(model_.block_unit(first));
  for (int i = first; i < num_blocks(); ++i) {
    for (const int unit : {model_.block_unit(i), model_.face_adapter_unit(i)}) {
      if (unit < 0) continue;
      hooks_->before(unit);
      hooks_->after(unit);
    }
  }
}

}  // namespace omni::models
