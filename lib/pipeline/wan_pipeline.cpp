#include "pipeline/wan_pipeline.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/tensor_dump.h"
#include "dist/device.h"
#include "dist/host_reads.h"
#include "io/clip_image_processor.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "io/video_writer.h"
#include "models/autoencoder_kl_wan.h"
#include "models/hsdp_sharding.h"
#include "models/lora.h"
#include "models/umt5_encoder.h"
#include "models/wan_s2v_transformer.h"
#include "models/wan_transformer.h"
#include "models/wav2vec2_model.h"
#include "pipeline/pipeline_tensors.h"
#include "pipeline/prompt_encoding.h"
#include "pipeline/vace_condition.h"
#include "sched/scheduler.h"
#include "text/umt5_tokenizer.h"

namespace omni::pipeline {
namespace {

const char* const kExpertNames[2] = {"transformer", "transformer_2"};

// "call03", "step05": the two-digit names of the reference fixtures.

// Dumps one transformer call as diffusers' reference records it (callNN.hidden_states / .timestep /
// .encoder_hidden_states / .out), for --dump-tensors.
void dump_call(int index, const at::Tensor& x, const at::Tensor& timestep, const at::Tensor& context,
               const at::Tensor& out) {
  if (!debug::dumps_enabled()) return;
  debug::DumpScope scope(numbered("call", index));
  debug::dump("hidden_states", x);
  debug::dump("timestep", timestep.to(at::kFloat));  // the reference records it as float32
  debug::dump("encoder_hidden_states", context);
  debug::dump("out", out);
}

}  // namespace

const char* task_name(Task task) {
  switch (task) {
    case Task::kTextToVideo:
      return "t2v";
    case Task::kImageToVideo:
      return "i2v";
    case Task::kTextImageToVideo:
      return "ti2v";
    case Task::kFirstLastFrameToVideo:
      return "flf2v";
    case Task::kVideoToVideo:
      return "v2v";
    case Task::kVace:
      return "vace";
    case Task::kAnimate:
      return "animate";
    case Task::kS2V:
      return "s2v";
  }
  return "?";
}

WanPipeline::WanPipeline(const ModelSpec& spec, const PipelineSettings& settings, const dist::DeviceMesh* mesh)
    : index_(spec.index()), settings_(settings), mesh_(mesh) {
  const io::ModelDir& model = *spec.dir;
  pool_ = std::make_shared<hsdp::BufferPool>(settings_.device);
  stats_ = std::make_shared<hsdp::HsdpStats>();
  models::set_fp8_matmul(settings_.fp8_matmul);
  const bool caching = settings_.step_cache != StepCacheMode::kNone;
  bool keep_gathers = false;
  if (mesh_ != nullptr) {
    // Every device group this run uses, made once. The video group: the ranks of this data-parallel group
    // (cfg x ring x ulysses of them), in layout order; group rank 0 writes the video (Layout::writes_video).
    const auto& l = mesh_->layout();
    using dist::GroupKind;
    std::vector<GroupKind> kinds;
    if (settings_.use_hsdp) kinds.push_back(GroupKind::kShard);
    if (l.cfg == 2) kinds.push_back(GroupKind::kCfg);
    if (l.sp() > 1) kinds.insert(kinds.end(), {GroupKind::kUlysses, GroupKind::kRing, GroupKind::kSp});
    if (settings_.vae_parallel || caching || index_.animate || index_.s2v) kinds.push_back(GroupKind::kVideo);
    groups_ = dist::DeviceGroups(*mesh_, settings_.device, kinds);
    shard_group_ = groups_.get(GroupKind::kShard);
    cfg_group_ = groups_.get(GroupKind::kCfg);
    if (l.sp() > 1) sp_ = std::make_unique<SequenceParallel>(SequenceParallel::from_groups(groups_));
    if (settings_.vae_parallel) vae_group_ = groups_.get(GroupKind::kVideo).get();
    if (index_.animate || index_.s2v) video_group_ = groups_.get(GroupKind::kVideo).get();
    // The step cache's decisions agree within the video group (its ranks share every transformer collective).
    // When HSDP shard groups (contiguous blocks of hsdp_shard ranks) span several groups, the groups decide
    // apart (each video as on one rank) and a group that skips still joins every gather of the others.
    agree_group_ = groups_.get(GroupKind::kVideo).get();
    keep_gathers = l.groups_share_shards();
  }

  // The experts' module trees (no weights yet) and their LoRA files, resolved against them first: a LoRA that
  // does not fit fails in seconds, before the text encoder or any expert weight is read.
  std::vector<std::string> expert_names;
  std::vector<std::unique_ptr<models::LoraSet>> loras;
  // Expert e's LoRA files resolved against `model`'s parameters (null: none given).
  auto lora_for = [&](size_t e, const models::Module& model, const std::string& name) {
    return settings_.lora[e].empty()
               ? nullptr
               : std::make_unique<models::LoraSet>(settings_.lora[e], model.parameters(), settings_.lora_label[e], name,
                                                   settings_.lora_strict);
  };
  // Wan2.2-S2V's transformer is its own class (spec.experts[0] only describes its blocks' sizes); its LoRA files
  // resolve against its own (Wan-named) parameters.
  OMNI_CHECK(!spec.s2v || !caching, "Wan2.2-S2V with the step cache (the job refuses it)");
  if (spec.s2v) {
    s2v_ = std::make_unique<models::WanS2VTransformer>(*spec.s2v, settings_.dtype);
    loras.push_back(lora_for(0, *s2v_, "transformer"));
  }
  for (size_t e = 0; e < (spec.s2v ? 0 : spec.experts.size()); ++e) {
    const char* name = ModelSpec::expert_name(static_cast<int>(e));
    expert_names.push_back(name);
    experts_.push_back(std::make_unique<models::WanTransformer3DModel>(spec.experts[e], settings_.dtype));
    loras.push_back(lora_for(e, *experts_.back(), name));
  }
  // The job checked these against the spec: LoRA files only for experts the model has, a boundary between two.
  OMNI_CHECK(spec.experts.size() == 2 || settings_.lora[1].empty(), "a LoRA for transformer_2 of a one-expert model");
  OMNI_CHECK(spec.experts.size() == 1 || settings_.boundary_ratio, "two transformers and no boundary ratio");

  // Text: tokenizer and UMT5, the encoder sharded block by block like the transformers.
  tokenizer_ = std::make_unique<text::Umt5Tokenizer>(text::Umt5Tokenizer::of_model(model));
  {
    const auto& ckpt = model.checkpoint("text_encoder");
    text_encoder_ = std::make_unique<models::Umt5Encoder>(spec.text_encoder, settings_.dtype);
    text_encoder_sharded_ = models::shard_model("text_encoder", *text_encoder_, models::blocks_of(*text_encoder_), ckpt,
                                                shard_group_.get(), settings_.dtype, settings_.device, pool_, stats_,
                                                /*lora=*/nullptr, settings_.text_encoder_weights);
    text_encoder_float8_weights_ = stats_->float8_weights_stored + stats_->float8_weights_quantized;
    param_bytes_total_ += text_encoder_sharded_->full_bytes();
    ckpt.release_pages();  // read: its pages are no longer this process's memory (the memory plan's load phase)
  }

  // Wan2.1's image models: the CLIP image encoder, sharded block by block like the text encoder.
  if (spec.image_encoder) {
    const auto& ckpt = model.checkpoint("image_encoder");
    image_encoder_ = std::make_unique<models::ClipVisionModel>(*spec.image_encoder, settings_.dtype);
    image_encoder_sharded_ =
        models::shard_model("image_encoder", *image_encoder_, models::blocks_of(*image_encoder_), ckpt,
                            shard_group_.get(), settings_.dtype, settings_.device, pool_, stats_);
    param_bytes_total_ += image_encoder_sharded_->full_bytes();
    ckpt.release_pages();
    image_processor_ = spec.image_processor;
  }

  // Wan2.2-S2V: wav2vec2 (float32, as Wan2.2 runs it) sharded layer by layer, then the transformer.
  if (spec.s2v) {
    const auto& audio = model.checkpoint("audio_encoder");
    audio_encoder_ = std::make_unique<models::Wav2Vec2Model>(*spec.audio_encoder, at::kFloat);
    audio_encoder_sharded_ =
        models::shard_model("audio_encoder", *audio_encoder_, models::blocks_of(*audio_encoder_), audio,
                            shard_group_.get(), at::kFloat, settings_.device, pool_, stats_);
    param_bytes_total_ += audio_encoder_sharded_->full_bytes();
    audio.release_pages();
    audio_processor_ = spec.audio_processor;
    const auto& ckpt = model.checkpoint("transformer");
    s2v_sharded_ =
        models::shard_model("transformer", *s2v_, models::blocks_of(*s2v_), ckpt, shard_group_.get(), settings_.dtype,
                            settings_.device, pool_, stats_, loras[0].get(), settings_.transformer_weights);
    param_bytes_total_ += s2v_sharded_->full_bytes();
    ckpt.release_pages();
  }

  // The experts' weights, each rank its own slice, LoRA merged into it as it is read.
  for (size_t e = 0; e < experts_.size(); ++e) {
    const auto& ckpt = model.checkpoint(expert_names[e]);
    experts_sharded_.push_back(models::shard_model(expert_names[e], *experts_[e], models::blocks_of(*experts_[e]), ckpt,
                                                   shard_group_.get(), settings_.dtype, settings_.device, pool_, stats_,
                                                   loras[e].get(), settings_.transformer_weights));
    param_bytes_total_ += experts_sharded_.back()->full_bytes();
    ckpt.release_pages();
  }
  disk_bytes_read_ = stats_->disk_bytes_read;
  if (caching) {
    step_cache_ = std::make_unique<StepCache>(settings_.step_cache, settings_.step_cache_threshold,
                                              experts_[0]->config().inner_dim(), sp_ ? sp_->sp.get() : nullptr,
                                              agree_group_, keep_gathers);
  }

  // The VAE stays whole on every rank.
  vae_ = models::AutoencoderKLWan::load(spec.vae, model.checkpoint("vae"), settings_.vae_dtype, settings_.device);
  model.checkpoint("vae").release_pages();
  param_bytes_total_ += vae_->parameter_bytes();
  disk_bytes_read_ += vae_->parameter_bytes();  // read whole (converted); an upper bound of the stored bytes

  scheduler_source_ = spec.scheduler_source;
  scheduler_config_ = spec.scheduler;
  // Validate the scheduler now, so that a bad config fails before the first prompt.
  sched::make_scheduler(scheduler_config_, settings_.sample_solver, settings_.flow_shift, scheduler_source_);
}

WanPipeline::~WanPipeline() = default;

int WanPipeline::temporal_factor() const {
  return static_cast<int>(vae_->config().scale_factor_temporal);
}

at::Tensor WanPipeline::encode_text(const PromptText& prompt, int max_sequence_length) {
  models::HsdpHooks hooks(text_encoder_sharded_.get());
  return encode_prompts(*tokenizer_, *text_encoder_, std::vector<PromptText>{prompt}, max_sequence_length,
                        settings_.dtype, settings_.device, &hooks);
}

at::Tensor WanPipeline::encode_image_states(const GenerationRequest& req, GenerationResult& result) {
  if (!image_encoder_) return at::Tensor();
  // diffusers: encode_image(image), or encode_image([image, last_image]) for first-last-frame, whose two
  // images' states the FLF2V transformer's position table joins into one sequence (job::check_video has
  // refused the combinations that do not fit).
  const bool two = req.last_image_pixels.defined();
  OMNI_CHECK(req.image_pixels.defined(), "a Wan2.1 image model's request without its image's pixels");
  OMNI_CHECK(two == (experts_.front()->config().pos_embed_seq_len > 0),
             "the image states' count does not fit the transformer's image position table");
  ScopedPhase phase(result.times, "image_encode", settings_.device);
  std::vector<at::Tensor> pixels = {io::clip_preprocess(req.image_pixels, *image_processor_)};  // [1, 3, S, S]
  if (two) pixels.push_back(io::clip_preprocess(req.last_image_pixels, *image_processor_));
  models::HsdpHooks hooks(image_encoder_sharded_.get());
  // Both images in one batch, as diffusers' processor and encoder take the list.
  auto states = image_encoder_->penultimate_hidden_state(at::cat(pixels, 0).to(settings_.device), &hooks);
  if (req.keep_tensors) result.tensors.emplace_back("image_embeds", states.to(at::kCPU, at::kFloat));
  return states;  // [I, N, E]
}

at::Tensor WanPipeline::run_transformer(int expert, const at::Tensor& x, const at::Tensor& timestep,
                                        const at::Tensor& context, const CallState& call, const at::Tensor& branch) {
  if (s2v_) {
    // WanModel_S2V takes one clip per call (Wan2.2 calls it per branch): the batch's rows one after the other,
    // each with its branch's audio.
    models::HsdpHooks units(s2v_sharded_.get());
    std::vector<at::Tensor> out;
    std::optional<SequenceSplit> split;  // tokens split over ulysses x ring
    if (sp_) split.emplace(*sp_);
    for (int64_t b = 0; b < x.size(0); ++b) {
      models::WanS2VInputs in;
      in.latents = x.narrow(0, b, 1);           // [1, z, T, h, w]
      in.timestep = timestep.narrow(0, b, 1);   // [1]
      in.context = context.narrow(0, b, 1);     // [1, L, text_dim]
      in.audio = branch.narrow(0, b, 1);        // [1, 25, A, num_frames]
      in.ref_latents = call.ref_latents;        // [1, z, 1, h, w]
      in.motion_latents = call.motion_latents;  // [1, z, 19, h, w]
      in.cond_states = call.cond_states;        // [1, z, T, h, w]
      in.drop_motion_frames = call.drop_motion;
      in.motion_frames = kS2VMotionFrames;
      out.push_back(s2v_->forward(in, &units, split ? &*split : nullptr));
    }
    return out.size() == 1 ? out[0] : at::cat(out, 0);
  }
  const at::Tensor& face = branch;
  models::HsdpHooks units(experts_sharded_[static_cast<size_t>(expert)].get());
  models::ForwardHooks hooks(&units);
  std::optional<SequenceSplit> split;  // tokens split over ulysses x ring
  if (sp_) hooks.tokens = &split.emplace(*sp_);
  hooks.blocks = step_cache_.get();  // blocks through the step cache
  models::AnimateInputs animate;
  if (call.pose.defined()) {
    // Every batch row the same pose; the face crops per row as guided_prediction made them.
    animate.pose = call.pose.expand({x.size(0), -1, -1, -1, -1});
    animate.face_pixels = face;
  }
  return experts_[static_cast<size_t>(expert)]->forward(x, timestep, context, hooks, call.image_states, call.control,
                                                        call.control_scale, animate);
}

namespace {

// The input that differs between the guidance branches: Animate's face crops (the unconditional branch all -1:
// diffusers' face_pixel_values * 0 - 1, no expression) or S2V's audio slots (the unconditional branch zeros:
// Wan2.2's 0.0 * audio_input). Undefined for other models.
at::Tensor branch_input(const at::Tensor& face, const at::Tensor& audio, bool cond) {
  if (face.defined()) return cond ? face : at::full_like(face, -1.0);
  if (audio.defined()) return cond ? audio : at::zeros_like(audio);
  return at::Tensor();
}

}  // namespace

at::Tensor WanPipeline::guided_prediction(int expert, const ModelInput& input, const at::Tensor& prompt_embeds,
                                          const at::Tensor& negative_embeds, double scale, bool do_cfg,
                                          CallState& state) {
  const at::Tensor& x = input.x;
  const at::Tensor& timestep = input.timestep;
  const at::Tensor& recorded = input.recorded_timestep.defined() ? input.recorded_timestep : timestep;
  // Transformer calls are numbered as diffusers makes them: cond, then uncond, per step.
  const int call = state.calls;
  state.calls += do_cfg ? 2 : 1;
  if (step_cache_) {
    // The CFG branch of each batch row of the call below: cond alone, this rank's branch, or cond then uncond.
    std::vector<int> rows(static_cast<size_t>(x.size(0)), 0);
    if (do_cfg && cfg_group_) std::fill(rows.begin(), rows.end(), cfg_group_->rank() == 0 ? 0 : 1);
    if (do_cfg && !cfg_group_) rows.resize(rows.size() * 2, 1);
    step_cache_->begin_call(expert, state.step, state.num_steps, rows);
  }
  if (!do_cfg) {
    at::Tensor out;
    {
      debug::DumpScope scope(numbered("call", call));
      out = run_transformer(expert, x, timestep, prompt_embeds, state, branch_input(state.face, state.audio, true));
    }
    dump_call(call, x, recorded, prompt_embeds, out);
    return out;
  }
  const int64_t b = x.size(0);
  at::Tensor cond, uncond;
  if (cfg_group_) {
    // cfg group rank 0 runs the conditional branch, rank 1 the unconditional one; both get both.
    const bool is_cond = cfg_group_->rank() == 0;
    at::Tensor mine;
    {
      debug::DumpScope scope(numbered("call", is_cond ? call : call + 1));
      mine = run_transformer(expert, x, timestep, is_cond ? prompt_embeds : negative_embeds, state,
                             branch_input(state.face, state.audio, is_cond))
                 .contiguous();
    }
    dump_call(is_cond ? call : call + 1, x, recorded, is_cond ? prompt_embeds : negative_embeds, mine);
    at::Tensor both = at::empty({2 * mine.numel()}, mine.options());
    cfg_group_->all_gather_into_flat(both, mine.view({-1}))->wait();
    both = both.view({2, mine.numel()});  // [branch, numel]
    cond = both[0].view(mine.sizes());
    uncond = both[1].view(mine.sizes());
  } else {
    // One batch [cond; uncond]: one gather per unit for both branches.
    at::Tensor out;
    {
      debug::DumpScope scope(numbered("call", call) + "_" + numbered("call", call + 1));
      const at::Tensor branch =
          state.face.defined() || state.audio.defined()
              ? at::cat({branch_input(state.face, state.audio, true), branch_input(state.face, state.audio, false)}, 0)
              : at::Tensor();
      out = run_transformer(expert, at::cat({x, x}, 0), at::cat({timestep, timestep}, 0),
                            at::cat({prompt_embeds, negative_embeds}, 0), state, branch);  // [2B, C, F, H, W]
    }
    cond = out.narrow(0, 0, b);
    uncond = out.narrow(0, b, b);
    dump_call(call, x, recorded, prompt_embeds, cond);
    dump_call(call + 1, x, recorded, negative_embeds, uncond);
  }
  return uncond + scale * (cond - uncond);
}

WanPipeline::LatentShape WanPipeline::latent_shape(const VideoParams& video) const {
  const auto& vcfg = vae_->config();
  LatentShape shape;
  // I2V and TI2V denoise the VAE's latent channels; T2V's transformer takes them as its input channels.
  shape.channels = (index_.image_to_video || index_.expand_timesteps || index_.animate || index_.s2v)
                       ? vcfg.z_dim
                       : experts_[0]->config().in_channels;
  shape.frames = video.denoised_latent_frames(temporal_factor());  // VACE's reference frames first
  shape.height = video.height / vcfg.scale_factor_spatial;
  shape.width = video.width / vcfg.scale_factor_spatial;
  return shape;
}

at::Tensor WanPipeline::prepare_latents(const VideoParams& video, const LatentShape& shape) const {
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(video.seed));
  const at::Tensor latents = at::randn({1, shape.channels, shape.frames, shape.height, shape.width}, gen,
                                       at::TensorOptions().dtype(at::kFloat));
  return latents.to(settings_.device);  // [1, z, T, h, w]
}

WanPipeline::ImageCondition WanPipeline::prepare_image_condition(const GenerationRequest& req, const LatentShape& shape,
                                                                 GenerationResult& result) const {
  const at::Device dev = settings_.device;
  const VideoParams& video = req.video;
  const bool expand = index_.expand_timesteps;
  ImageCondition out;
  if (req.image.defined()) {
    ScopedPhase phase(result.times, "image_encode", dev);
    OMNI_CHECK(req.image.dim() == 4 && req.image.size(2) == video.height && req.image.size(3) == video.width,
               "conditioning image of shape ", req.image.sizes(), " is not [1, 3, ", video.height, ", ", video.width,
               "]");
    at::Tensor image = req.image.to(dev).to(at::kFloat).unsqueeze(2);  // [1, 3, 1, H, W] in [-1, 1]
    at::Tensor clip = image;
    const bool last = req.last_image.defined();
    if (!expand) {
      // I2V-A14B: the image then num_frames - 1 zero frames; first-last-frame: the image, num_frames - 2 zero
      // frames, the last image.
      const int num_frames = video.rounded_num_frames(temporal_factor());
      std::vector<at::Tensor> frames = {
          image, at::zeros({1, 3, num_frames - (last ? 2 : 1), video.height, video.width}, image.options())};
      if (last) {
        OMNI_CHECK(req.last_image.sizes() == req.image.sizes(), "last image of shape ", req.last_image.sizes(),
                   " is not the first image's ", req.image.sizes());
        frames.push_back(req.last_image.to(dev).to(at::kFloat).unsqueeze(2));  // [1, 3, 1, H, W]
      }
      clip = at::cat(frames, 2);  // [1, 3, num_frames, H, W]
    }
    const at::Tensor z = encode_normalized(clip, req.keep_tensors ? "image_latents" : nullptr, result);
    if (expand) {
      out.condition = z;
    } else {
      // diffusers' mask_lat_size: a mask over the pixel frames (1 on the given ones), the first frame repeated
      // temporal_factor times, each latent frame's temporal_factor pixel frames as its channels. So latent frame
      // 0 (the image) is 1 on every channel, and with a last image the last latent frame is 1 on its last
      // channel alone (the last of its frames). [1, tf, T, h, w]
      const int tf = temporal_factor();
      at::Tensor mask = at::zeros({1, tf, shape.frames, shape.height, shape.width}, z.options());
      mask.narrow(2, 0, 1).fill_(1.0);
      if (last) mask.narrow(1, tf - 1, 1).narrow(2, shape.frames - 1, 1).fill_(1.0);
      out.condition = at::cat({mask, z}, 1);  // [1, 4 + z, T, h, w]
    }
  }
  if (expand) {
    // Made on the host: the per-token timesteps are too, so the loop never reads the device for their runs.
    const at::Tensor mask = at::ones({1, 1, shape.frames, shape.height, shape.width}, at::kFloat);  // [1, 1, T, h, w]
    if (req.image.defined()) mask.narrow(2, 0, 1).fill_(0.0);
    out.first_frame_mask = mask.to(dev);
    const auto& pcfg = experts_[0]->config();
    out.token_mask = mask[0][0]
                         .slice(1, 0, shape.height, pcfg.patch_size[1])
                         .slice(2, 0, shape.width, pcfg.patch_size[2])
                         .flatten()
                         .unsqueeze(0);  // [1, S]
  }
  return out;
}

at::Tensor WanPipeline::encode_normalized(const at::Tensor& clip, const char* keep_as, GenerationResult& result) const {
  at::Tensor z = vae_->encode(clip.to(settings_.vae_dtype)).to(at::kFloat);  // [1, z, T, h, w]
  debug::dump("vae_encode.in", clip);
  debug::dump("vae_encode.mean", z);
  z = vae_->normalize_latents(z);
  if (keep_as != nullptr) result.tensors.emplace_back(keep_as, to_float_cpu(z));  // the normalized VAE mean
  return z;
}

at::Tensor WanPipeline::encode_clip(const GenerationRequest& req, const LatentShape& shape,
                                    GenerationResult& result) const {
  // The conditioning encode's phase (the report's image_encode: what the VAE encoder spends before the loop).
  ScopedPhase phase(result.times, "image_encode", settings_.device);
  const VideoParams& video = req.video;
  const int num_frames = video.rounded_num_frames(temporal_factor());
  OMNI_CHECK(req.clip.dim() == 5 && req.clip.size(2) == num_frames && req.clip.size(3) == video.height &&
                 req.clip.size(4) == video.width,
             "clip of shape ", req.clip.sizes(), " is not [1, 3, ", num_frames, ", ", video.height, ", ", video.width,
             "]");
  const at::Tensor clip = req.clip.to(settings_.device).to(at::kFloat);  // [1, 3, F, H, W] in [-1, 1]
  const at::Tensor z = encode_normalized(clip, req.keep_tensors ? "video_latents" : nullptr, result);
  OMNI_CHECK(
      z.size(1) == shape.channels && z.size(2) == shape.frames && z.size(3) == shape.height && z.size(4) == shape.width,
      "the clip's latents ", z.sizes(), " are not the video's [1, ", shape.channels, ", ", shape.frames, ", ",
      shape.height, ", ", shape.width, "]");
  return z;
}

at::Tensor WanPipeline::prepare_vace_condition(const GenerationRequest& req, const LatentShape& shape,
                                               GenerationResult& result) const {
  if (!index_.vace) return at::Tensor();
  ScopedPhase phase(result.times, "image_encode", settings_.device);
  const at::Device dev = settings_.device;
  const VideoParams& video = req.video;
  const int tf = temporal_factor();
  const int64_t num_frames = video.rounded_num_frames(tf), refs = video.reference_images;
  const std::vector<int64_t> clip_shape = {1, 3, num_frames, video.height, video.width};
  for (const at::Tensor* t : {&req.control_video, &req.mask_video})
    OMNI_CHECK(!t->defined() || t->sizes() == at::IntArrayRef(clip_shape), "VACE clip of shape ", t->sizes(),
               " is not ", at::IntArrayRef(clip_shape));
  OMNI_CHECK(static_cast<int64_t>(req.reference_images.size()) == refs,
             "GenerationRequest: ", req.reference_images.size(), " reference images but video.reference_images is ",
             refs);
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(dev);
  // preprocess_conditions' defaults: no video, zeros (mid-grey); no mask, ones (every pixel generated).
  const at::Tensor control =
      req.control_video.defined() ? req.control_video.to(dev, at::kFloat) : at::zeros(clip_shape, f32);
  const at::Tensor mask = req.mask_video.defined() ? req.mask_video.to(dev, at::kFloat) : at::ones(clip_shape, f32);
  // prepare_video_latents: the clip and the thresholded mask in the VAE's dtype, the part to keep (inactive) and
  // the part to generate (reactive) encoded apart, each normalized and rounded to the VAE's dtype.
  const auto vae_dtype = settings_.vae_dtype;
  const at::Tensor binary = vace_binary_mask(mask).to(vae_dtype);
  const at::Tensor clip = control.to(vae_dtype);
  auto encoded = [&](const at::Tensor& pixels, const char* keep_as) {
    return encode_normalized(pixels, req.keep_tensors ? keep_as : nullptr, result).to(vae_dtype).to(at::kFloat);
  };
  const at::Tensor inactive = encoded(clip * (1 - binary), "vace_inactive_latents");
  at::Tensor reactive;
  if (req.control_video.defined()) {
    reactive = encoded(clip * binary, "vace_reactive_latents");
  } else {
    // No control video: both halves are diffusers' zero clip (the mask is all ones), so one encode serves both.
    reactive = inactive;
    if (req.keep_tensors) {
      const at::Tensor kept = result.tensors.back().second;  // the inactive half's, just kept
      result.tensors.emplace_back("vace_reactive_latents", kept);
    }
  }
  at::Tensor z = at::cat({inactive, reactive}, 1);  // [1, 2z, T, h, w]
  // Each reference image's latents (and zeros for its reactive half) put in front of what is there: diffusers'
  // loop, so with several the last given comes first.
  for (const at::Tensor& ref : req.reference_images) {
    OMNI_CHECK(ref.dim() == 3 && ref.size(1) == video.height && ref.size(2) == video.width, "reference image of shape ",
               ref.sizes(), " is not [3, ", video.height, ", ", video.width, "]");
    const at::Tensor r = encoded(ref.to(dev, at::kFloat).unsqueeze(0).unsqueeze(2), nullptr);  // [1, z, 1, h, w]
    z = at::cat({at::cat({r, at::zeros_like(r)}, 1), z}, 2);                                   // [1, 2z, +1, h, w]
  }
  const at::Tensor m = vace_latent_mask(mask, tf, vae_->config().scale_factor_spatial, static_cast<int>(refs));
  at::Tensor context = at::cat({z, m}, 1);  // [1, 2z + sf^2, R + T, h, w]
  OMNI_CHECK(context.size(2) == shape.frames && context.size(3) == shape.height && context.size(4) == shape.width,
             "VACE context ", context.sizes(), " does not fit the latents [", shape.frames, ", ", shape.height, ", ",
             shape.width, "]");
  if (req.keep_tensors) result.tensors.emplace_back("vace_context", to_float_cpu(context));
  return context.to(settings_.dtype);
}

WanPipeline::ModelInput WanPipeline::model_input(const at::Tensor& latents, const ImageCondition& image, int64_t t,
                                                 const LatentShape& shape, const VideoParams& video) const {
  const at::Device dev = settings_.device;
  const auto& pcfg = experts_[0]->config();
  ModelInput in;
  if (index_.expand_timesteps && image.condition.defined()) {
    const at::Tensor& mask = image.first_frame_mask;
    in.x = (1 - mask) * image.condition + mask * latents;
    // Per-token timesteps: t on every token, 0 on the conditioning frame's tokens. [1, S] on the host
    in.timestep = image.token_mask * static_cast<double>(t);
  } else if (index_.expand_timesteps) {
    // TI2V text mode: diffusers expands t over every token ([1, S], all equal). One timestep per batch row
    // is the same arithmetic without the per-token tables: temb [B, S, D], its projection [B, S, 6, D] and
    // each block's [B, S, 6, D] float32 modulation (gigabytes at 720p). The dumps record diffusers' [1, S]
    // (WanPipeline's; WanVideoToVideoPipeline passes [1] as we do).
    in.x = latents;
    in.timestep = at::full({1}, t, at::TensorOptions().dtype(at::kLong).device(dev));
    if (debug::dumps_enabled() && !video.video) {
      const int64_t tokens = pcfg.token_count(shape.frames, shape.height, shape.width);
      in.recorded_timestep = at::full({1, tokens}, static_cast<double>(t), at::TensorOptions().dtype(at::kFloat));
    }
  } else {
    in.x = index_.image_to_video ? at::cat({latents, image.condition}, 1) : latents;
    in.timestep = at::full({1}, t, at::TensorOptions().dtype(at::kLong).device(dev));
  }
  in.x = in.x.to(settings_.dtype);
  return in;
}

namespace {

// The denoising loop's step times from device marks (CUDA events on a GPU, where host clocks read only the
// queueing). Step i is reported once step i + 1 is queued: reading its end mark then waits for the GPU to
// finish step i while step i + 1 is already queued, so the report never leaves the GPU idle.
class StepReporter {
 public:
  StepReporter(const at::Device& device, const std::vector<int64_t>& timesteps, const StepCallback& on_step)
      : device_(device), clock_(device), timesteps_(timesteps), on_step_(on_step) {
    marks_.push_back(clock_.mark());
  }
  // Step `step` is queued (the CPU: done).
  void step_queued(int step, const char* expert, bool cached) {
    marks_.push_back(clock_.mark());
    experts_.push_back(expert);
    cached_.push_back(cached);
    if (device_.is_cpu()) {
      report_through(step);
    } else if (step > 0) {
      report_through(step - 1);
    }
  }
  void finish() {
    if (!timesteps_.empty()) report_through(static_cast<int>(timesteps_.size()) - 1);
  }

 private:
  void report_through(int last) {
    for (; reported_ <= last && static_cast<size_t>(reported_) + 1 < marks_.size(); ++reported_) {
      if (!on_step_) continue;
      const auto r = static_cast<size_t>(reported_);
      on_step_({reported_, static_cast<int>(timesteps_.size()), timesteps_[r], experts_[r],
                DeviceClock::seconds(marks_[r], marks_[r + 1]), cached_[r]});
    }
  }

  at::Device device_;
  DeviceClock clock_;
  const std::vector<int64_t>& timesteps_;
  const StepCallback& on_step_;
  std::vector<DeviceClock::MarkPtr> marks_;
  std::vector<const char*> experts_;
  std::vector<bool> cached_;
  int reported_ = 0;
};

}  // namespace

WanPipeline::Embeds WanPipeline::encode_prompt_embeds(const GenerationRequest& req, GenerationResult& result) {
  const VideoParams& video = req.video;
  const bool do_cfg = video.guidance_on();
  // Each prompt cleaned and tokenized once; the negative one only with guidance.
  result.prompt = describe_prompt(*tokenizer_, req.prompt, video.max_sequence_length);
  if (do_cfg) result.negative_prompt = describe_prompt(*tokenizer_, req.negative_prompt, video.max_sequence_length);
  Embeds embeds;
  {
    ScopedPhase phase(result.times, "text_encode", settings_.device);
    {
      debug::DumpScope scope("prompt");
      embeds.prompt = encode_text(result.prompt, video.max_sequence_length);
    }
    if (do_cfg) {
      debug::DumpScope scope("negative");
      embeds.negative = encode_text(result.negative_prompt, video.max_sequence_length);
    }
    if (text_encoder_sharded_) text_encoder_sharded_->settle_timings();
    pool_->clear();  // UMT5's gathered root (the 256k-row embedding) must not sit in the pool while denoising
  }
  if (req.keep_tensors) {
    result.tensors.emplace_back("prompt_embeds", to_float_cpu(embeds.prompt));
    if (do_cfg) result.tensors.emplace_back("negative_prompt_embeds", to_float_cpu(embeds.negative));
  }
  return embeds;
}

at::Tensor WanPipeline::denoise(at::Tensor latents, const std::vector<int64_t>& timesteps, sched::Scheduler& scheduler,
                                const InputFn& input, const Embeds& embeds, CallState& state,
                                const GenerationRequest& req, const StepCallback& on_step, StepInfo segment,
                                GenerationResult& result) {
  const at::Device dev = settings_.device;
  const VideoParams& video = req.video;
  const bool do_cfg = video.guidance_on();
  // The expert by boundary_ratio (the second takes the low-noise steps, with its own scale).
  const std::optional<double> ratio = boundary_ratio();
  const double boundary = ratio ? *ratio * scheduler.config().num_train_timesteps : 0.0;
  ScopedPhase phase(result.times, "denoise", dev);
  // Each step reported with its segment (Animate's; one for the other videos).
  const StepCallback report = [&](const StepInfo& s) {
    if (!on_step) return;
    StepInfo r = s;
    r.segment = segment.segment;
    r.num_segments = segment.num_segments;
    on_step(r);
  };
  StepReporter reporter(dev, timesteps, report);
  state.num_steps = static_cast<int>(timesteps.size());
  // The loop never waits for the device: OMNI_COUNT_HOST_READS counts the host's reads of device data per step
  // (dist/host_reads.h), which the report carries.
  dist::HostReadCounter host_reads(dev);
  for (size_t i = 0; i < timesteps.size(); ++i) {
    const int64_t t = timesteps[i];  // step i of those that run (diffusers' callback numbers them so)
    const int64_t received_before = stats_->received_bytes_total;
    const int64_t reads_before = host_reads.count();
    const int expert = experts_.size() == 2 && ratio && static_cast<double>(t) < boundary ? 1 : 0;
    const double scale = expert == 1 ? video.guidance_scale_2.value_or(video.guidance_scale) : video.guidance_scale;
    state.step = static_cast<int>(i);
    const at::Tensor noise_pred =
        guided_prediction(expert, input(latents, t), embeds.prompt, embeds.negative, scale, do_cfg, state);
    latents = scheduler.step(noise_pred, t, latents);
    if (req.keep_tensors)
      result.tensors.emplace_back(numbered("step", state.step_base + static_cast<int>(i)) + ".latents",
                                  to_float_cpu(latents));
    gathered_last_step_ = stats_->received_bytes_total - received_before;
    reporter.step_queued(static_cast<int>(i), kExpertNames[expert], step_cache_ && step_cache_->last_skipped());
    if (host_reads.active()) result.host_reads_per_step.push_back(host_reads.count() - reads_before);
  }
  reporter.finish();
  for (auto& e : experts_sharded_)
    if (e) e->settle_timings();
  if (s2v_sharded_) s2v_sharded_->settle_timings();
  return latents;
}

// diffusers' WanPipeline.__call__ / WanImageToVideoPipeline.__call__, section by section.
GenerationResult WanPipeline::generate(const GenerationRequest& req, const StepCallback& on_step) {
  const VideoParams& video = req.video;
  OMNI_CHECK(video.animate == index_.animate, "GenerationRequest: video.animate is ", video.animate,
             " for a model whose pipeline is ", index_.class_name);
  OMNI_CHECK(video.speech == index_.s2v, "GenerationRequest: video.speech is ", video.speech,
             " for a model whose pipeline is ", index_.class_name);
  if (video.animate) return generate_animate(req, on_step);
  if (video.speech) return generate_s2v(req, on_step);
  GenerationResult result;
  const at::Device dev = settings_.device;
  OMNI_CHECK(video.image == req.image.defined(), "GenerationRequest: video.image is ", video.image,
             " but the image tensor is ", req.image.defined() ? "given" : "missing");
  OMNI_CHECK(video.video == req.clip.defined() && (!video.video || (!index_.image_to_video && !video.image)),
             "GenerationRequest: video.video is ", video.video, " but the clip is ",
             req.clip.defined() ? "given" : "missing", " (text-to-video models, without an image)");
  OMNI_CHECK(index_.vace || (!req.control_video.defined() && !req.mask_video.defined() &&
                             req.reference_images.empty() && video.reference_images == 0),
             "GenerationRequest: VACE inputs for a model that is not VACE");
  OMNI_CHECK(video.last_image == req.last_image.defined() && (!video.last_image || index_.image_to_video),
             "GenerationRequest: video.last_image is ", video.last_image, " but the last image tensor is ",
             req.last_image.defined() ? "given" : "missing", " (image-to-video models only)");
  if (step_cache_) step_cache_->reset();
  auto keep = [&](const std::string& name, const at::Tensor& t) {
    if (req.keep_tensors) result.tensors.emplace_back(name, to_float_cpu(t));
  };

  // The encoders' and the loop's peak (denoise_peak_bytes): counted from here, without the load's or an earlier
  // video's decode.
  dist::reset_peak_device_bytes(dev);
  reset_peak_rss();

  // 1. Encode the prompts (the negative one only with guidance).
  const Embeds embeds = encode_prompt_embeds(req, result);

  // 2. Prepare the latents: the noise; video-to-video (WanVideoToVideoPipeline.prepare_latents): the clip's
  // latents noised to the first timestep that runs (get_timesteps: the last int(steps x strength) of them).
  const LatentShape shape = latent_shape(video);
  at::Tensor latents = prepare_latents(video, shape);
  keep("init_latents", latents);
  auto scheduler =
      sched::make_scheduler(scheduler_config_, settings_.sample_solver, settings_.flow_shift, scheduler_source_);
  scheduler->set_timesteps(video.num_inference_steps, dev);
  const std::vector<int64_t> timesteps(scheduler->timestep_values().begin() + video.first_step(),
                                       scheduler->timestep_values().end());  // the steps that run
  if (req.clip.defined()) latents = scheduler->add_noise(encode_clip(req, shape, result), latents, timesteps[0]);

  // 3. Image conditioning (I2V; TI2V with an image), on Wan2.1's image models the CLIP states, VACE's context.
  const ImageCondition image = prepare_image_condition(req, shape, result);
  CallState state;
  state.image_states = encode_image_states(req, result);
  state.control = prepare_vace_condition(req, shape, result);
  if (image_encoder_sharded_) image_encoder_sharded_->settle_timings();
  if (state.control.defined()) {
    // One scale for every VACE layer, as diffusers repeats a float; else one per layer (the model checks).
    state.control_scale = req.conditioning_scale;
    if (state.control_scale.size() == 1)
      state.control_scale.assign(experts_.front()->config().vace_layers.size(), req.conditioning_scale.front());
  }

  // 4. Denoise.
  latents = denoise(
      latents, timesteps, *scheduler,
      [&](const at::Tensor& x, int64_t t) { return model_input(x, image, t, shape, video); }, embeds, state, req,
      on_step, StepInfo{}, result);
  result.denoise_peak_bytes = peak_since_reset(dev);
  if (index_.expand_timesteps && image.condition.defined()) {
    latents = (1 - image.first_frame_mask) * image.condition + image.first_frame_mask * latents;
  }
  keep("latents", latents);
  // VACE: the reference images' latent frames are not the video's.
  if (video.reference_images > 0)
    latents = latents.narrow(2, video.reference_images, shape.frames - video.reference_images);
  if (step_cache_)
    for (int e = 0; e < 2; ++e) result.step_cache[e] = step_cache_->counts(e);

  // 5. Decode.
  decode(req, latents, result);
  return result;
}

void WanPipeline::decode(const GenerationRequest& req, const at::Tensor& latents, GenerationResult& result) {
  // The transformer's gathered buffers wait in the pool for the next video; the decode needs the memory more
  // (the next video gathers them again: three allocations).
  pool_->clear();
  at::Tensor video = decode_video(req, latents, result);
  if (req.decode) keep_frames(req, std::move(video), result);
}

at::Tensor WanPipeline::decode_video(const GenerationRequest& req, const at::Tensor& latents,
                                     GenerationResult& result) {
  // The writing rank alone, or with --vae-parallel every rank of the group its band of rows, the writing rank
  // (group rank 0) getting the whole video.
  const at::Device dev = settings_.device;
  const bool banded = vae_group_ != nullptr && req.decode_band;
  if (!req.decode && !banded) return at::Tensor();
  ScopedPhase phase(result.times, "decode", dev);
  dist::reset_peak_device_bytes(dev);
  reset_peak_rss();
  const int64_t device_before = dist::allocated_device_bytes(dev), host_before = current_rss_bytes();
  at::Tensor z = vae_->denormalize_latents(latents.to(settings_.vae_dtype));
  at::Tensor video;  // [1, 3, F, H, W] in [-1, 1]
  if (banded) {
    models::VaeBands bands(vae_group_, z.size(3));
    video = vae_->decode(z, &bands, /*root=*/0);
  } else {
    video = vae_->decode(z);
  }
  if (req.decode) {
    OMNI_CHECK(video.defined(), "--vae-parallel: the writing rank is not rank 0 of its decode group");
    debug::dump("vae_decode.in", z);
    debug::dump("vae_decode.out", video);
  }
  const int64_t peak = dev.is_cpu() ? std::max<int64_t>(0, peak_rss_since_reset_bytes() - host_before)
                                    : dist::peak_device_bytes_since_reset(dev) - device_before;
  result.vae_peak_bytes = std::max(result.vae_peak_bytes, peak);
  return req.decode ? video : at::Tensor();
}

void WanPipeline::keep_frames(const GenerationRequest& req, at::Tensor video, GenerationResult& result) const {
  // In place: the decoded video becomes the frames (the same operations, one video-sized tensor fewer).
  at::Tensor frames = video.mul_(0.5).add_(0.5).clamp_(0.0, 1.0).permute({0, 2, 3, 4, 1});  // [1, F, H, W, 3]
  // The writer's uint8 levels, made on the device so that one byte per sample crosses to the host.
  at::Tensor levels = io::frames_to_uint8(frames).to(at::kCPU);  // [1, F, H, W, 3] uint8
  result.frames = result.frames.defined() ? at::cat({result.frames, levels}, 1) : levels;
  if (!req.keep_tensors) return;
  at::Tensor f = to_float_cpu(frames);  // diffusers' "np" output
  auto it = std::find_if(result.tensors.begin(), result.tensors.end(),
                         [](const auto& kept) { return kept.first == "frames"; });
  if (it == result.tensors.end()) {
    result.tensors.emplace_back("frames", f);
  } else {
    it->second = at::cat({it->second, f}, 1);
  }
}

}  // namespace omni::pipeline
