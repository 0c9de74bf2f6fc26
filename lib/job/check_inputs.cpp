#include "job/check_inputs.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/log.h"
#include "io/audio_reader.h"
#include "io/image_reader.h"
#include "io/image_resize.h"
#include "io/video_reader.h"
#include "job/video_list.h"
#include "pipeline/s2v_audio_encoder.h"
#include "pipeline/s2v_condition.h"

namespace omni::job {

pipeline::Task choose_task(const io::ModelIndex& index, config::TaskChoice task, const pipeline::VideoParams& in) {
  using config::TaskChoice;
  const char* flag = config::name_of(task);
  const bool vace_inputs = in.control_video || in.mask_video || in.reference_images > 0;
  if (index.s2v) {
    // Wan2.2-S2V: the reference image and the recording (and an optional pose video), nothing else.
    OMNI_CHECK_USAGE(task == TaskChoice::kAuto || task == TaskChoice::kS2V, "--task ", flag,
                     " does not fit this model: it is Wan2.2-S2V (speech to video); use --task s2v");
    OMNI_CHECK_USAGE(in.speech && in.image,
                     "this model is Wan2.2-S2V (speech to video): give --image (the reference: who speaks or "
                     "sings) and --audio (the recording), and optionally --pose-video");
    OMNI_CHECK_USAGE(!in.video && !in.last_image && !vace_inputs,
                     in.video        ? "--video"
                     : in.last_image ? "--last-image"
                                     : "--control-video / --mask-video / --reference-image",
                     ": this model is Wan2.2-S2V; it takes --image, --audio and --pose-video");
    return pipeline::Task::kS2V;
  }
  // Speech to video is Wan2.2-S2V-14B's.
  OMNI_CHECK_USAGE(task != TaskChoice::kS2V,
                   "--task s2v needs Wan2.2-S2V-14B (its original folder Wan-AI/Wan2.2-S2V-14B, or ComfyUI's S2V "
                   "file with --audio-encoder); this model is ",
                   index.class_name);
  OMNI_CHECK_USAGE(!in.speech, "--audio: this model (", index.class_name,
                   ") is not Wan2.2-S2V; speech to video needs Wan2.2-S2V-14B (its original folder "
                   "Wan-AI/Wan2.2-S2V-14B, or ComfyUI's S2V file with --audio-encoder)");
  if (index.animate) {
    // WanAnimatePipeline: the character image, the pose and face videos (and replace mode's background and mask).
    OMNI_CHECK_USAGE(task == TaskChoice::kAuto || task == TaskChoice::kAnimate, "--task ", flag,
                     " does not fit this model: its model_index.json names WanAnimatePipeline; use --task animate");
    OMNI_CHECK_USAGE(in.animate && in.image,
                     "this model is Wan2.2-Animate (WanAnimatePipeline): give --image (the character), --pose-video "
                     "and --face-video, or --animate-inputs DIR (what Wan2.2's preprocess_data.py writes)");
    OMNI_CHECK_USAGE(!in.video && !in.last_image && !vace_inputs,
                     in.video        ? "--video"
                     : in.last_image ? "--last-image"
                                     : "--control-video / --reference-image",
                     ": this model is Wan2.2-Animate (WanAnimatePipeline); it takes --image, --pose-video, "
                     "--face-video (and with --animate-mode replace --background-video, --mask-video)");
    return pipeline::Task::kAnimate;
  }
  OMNI_CHECK_USAGE(task != TaskChoice::kAnimate,
                   "--task animate needs a Wan2.2-Animate model (WanAnimatePipeline); "
                   "this one is ",
                   index.class_name);
  OMNI_CHECK_USAGE(!in.animate, "--pose-video / --face-video / --animate-inputs: this model (", index.class_name,
                   ") is not Wan2.2-Animate; animating a character needs WanAnimatePipeline (Wan2.2-Animate-14B)");
  if (index.vace) {
    // WanVACEPipeline conditions through its control video, mask and reference images (each optional: none is
    // text-to-video through the VACE blocks); it takes no image or clip of the other pipelines.
    OMNI_CHECK_USAGE(task == TaskChoice::kAuto || task == TaskChoice::kVace, "--task ", flag,
                     " does not fit this model: its model_index.json names WanVACEPipeline; use --task vace");
    OMNI_CHECK_USAGE(!in.image && !in.video, in.image ? "--image" : "--video",
                     ": this model is VACE (WanVACEPipeline); give the picture as --reference-image, or the clip as "
                     "--control-video (with --mask-video: black where it is kept)");
    return pipeline::Task::kVace;
  }
  OMNI_CHECK_USAGE(task != TaskChoice::kVace, "--task vace needs a VACE model (WanVACEPipeline); this one is ",
                   index.class_name);
  OMNI_CHECK_USAGE(!vace_inputs,
                   in.control_video ? "--control-video"
                   : in.mask_video  ? "--mask-video"
                                    : "--reference-image",
                   ": this model (", index.class_name,
                   ") has no VACE blocks; control videos, masks and reference images need a VACE model "
                   "(Wan2.1-VACE, Wan2.2-VACE-Fun: WanVACEPipeline)");
  if (index.image_to_video) {
    OMNI_CHECK_USAGE(task == TaskChoice::kAuto || task == TaskChoice::kI2V, "--task ", flag,
                     " does not fit this model: its "
                     "model_index.json names WanImageToVideoPipeline (image-to-video); use --task i2v");
    OMNI_CHECK_USAGE(!in.video,
                     "--video: this model is image-to-video (WanImageToVideoPipeline); video-to-video needs a "
                     "text-to-video model (T2V-A14B, TI2V-5B)");
    OMNI_CHECK_USAGE(in.image, "this model is image-to-video (WanImageToVideoPipeline) and needs --image");
    return in.last_image ? pipeline::Task::kFirstLastFrameToVideo : pipeline::Task::kImageToVideo;
  }
  // The last frame is conditioned through I2V's mask channels, which the other models' transformers do not take.
  // (diffusers' WanImageToVideoPipeline ignores last_image on TI2V-5B without a word.)
  OMNI_CHECK_USAGE(!in.last_image, "--last-image: this model (", index.class_name,
                   index.expand_timesteps ? " with expand_timesteps: TI2V-5B" : ", text-to-video",
                   ") has no last-frame conditioning; first-last-frame video needs an image-to-video model "
                   "(WanImageToVideoPipeline: I2V-A14B)");
  if (index.expand_timesteps) {
    // TI2V-5B: image mode with --image, text mode without; video-to-video in text mode.
    OMNI_CHECK_USAGE(!(task == TaskChoice::kI2V && !in.image), "--task i2v needs --image");
    OMNI_CHECK_USAGE(!(task == TaskChoice::kT2V && in.image), "--task t2v takes no --image (drop one of them)");
    return in.video ? pipeline::Task::kVideoToVideo : pipeline::Task::kTextImageToVideo;
  }
  OMNI_CHECK_USAGE(task == TaskChoice::kAuto || task == TaskChoice::kT2V, "--task ", flag,
                   " does not fit this model: it is "
                   "text-to-video (WanPipeline without expand_timesteps); use --task t2v");
  OMNI_CHECK_USAGE(!in.image,
                   "this model is text-to-video and takes no --image (image-to-video needs an I2V or "
                   "TI2V checkpoint)");
  return in.video ? pipeline::Task::kVideoToVideo : pipeline::Task::kTextToVideo;
}

void check_video(const pipeline::ModelSpec& model, const pipeline::VideoParams& v, int decode_ranks) {
  const int tf = model.temporal_factor();
  // The last image is the last frame of the last latent frame, after the first one's: two latent frames at least.
  OMNI_CHECK_USAGE(!v.last_image || v.latent_frames(tf) >= 2, "--last-image needs at least ", tf + 1,
                   " frames (the first and the last frame in latent frames of their own); --num-frames ", v.num_frames,
                   " makes ", v.rounded_num_frames(tf));
  // Wan2.1's CLIP models: the FLF2V transformer's image position table holds two images' states, the I2V one's
  // image branch takes one (diffusers fails on the other combinations, deep in the transformer).
  if (model.image_encoder) {
    const bool table = model.experts.front().pos_embed_seq_len > 0;
    OMNI_CHECK_USAGE(!v.last_image || table,
                     "--last-image: this Wan2.1 image-to-video model conditions its CLIP branch on one image (its "
                     "transformer has no pos_embed for two); first-last-frame needs a first-last-frame model "
                     "(Wan2.1-FLF2V-14B-720P) or Wan2.2 I2V-A14B");
    OMNI_CHECK_USAGE(v.last_image || !table,
                     "this first-last-frame model (its transformer's pos_embed holds two "
                     "images' CLIP states) needs --last-image");
  }
  // VACE: every reference image is one more latent frame, and the rotary tables hold rope_max_seq_len of them.
  const auto& tc = model.experts.front();
  OMNI_CHECK_USAGE(v.denoised_latent_frames(tf) <= tc.rope_max_seq_len, v.reference_images,
                   " --reference-image and --num-frames ", v.num_frames, " make ", v.denoised_latent_frames(tf),
                   " latent frames; this model's position tables hold ", tc.rope_max_seq_len);
  const int m = model.spatial_multiple();
  OMNI_CHECK_USAGE(v.height % m == 0 && v.width % m == 0, "--height and --width must be multiples of ", m,
                   " for this model (VAE factor ", model.vae.scale_factor_spatial, " x patch size), got ", v.height,
                   "x", v.width);
  const int64_t latent_rows = v.height / model.vae.scale_factor_spatial;
  OMNI_CHECK_USAGE(latent_rows >= decode_ranks, "--vae-parallel: ", decode_ranks,
                   " ranks per data-parallel group cannot split a ", v.height, "-pixel height (", latent_rows,
                   " latent rows, at least one each); use a larger --height or leave --vae-parallel off");
  if (!v.speech && v.rounded_num_frames(tf) != v.num_frames) {
    OMNI_WARN(v.animate ? "--segment-frames " : "--num-frames ", v.num_frames, " is not of the form ", tf,
              "k+1; using ", v.rounded_num_frames(tf), " (as diffusers)");
  }
}

std::pair<int64_t, int64_t> vace_control_size(int64_t video_h, int64_t video_w, int64_t height, int64_t width,
                                              int64_t vae_factor, int64_t multiple) {
  // get_default_height_width: the first frame's size floored to the VAE's factor.
  int64_t h = video_h - video_h % vae_factor, w = video_w - video_w % vae_factor;
  if (h * w > height * width) {
    // Python's min(width / w, height / h) and int(h * scale), in doubles.
    const double scale = std::min(static_cast<double>(width) / static_cast<double>(w),
                                  static_cast<double>(height) / static_cast<double>(h));
    h = static_cast<int64_t>(static_cast<double>(h) * scale);
    w = static_cast<int64_t>(static_cast<double>(w) * scale);
  }
  return {h - h % multiple, w - w % multiple};
}

namespace {

// The files a list's videos read, each checked once: its path, the first video naming it (for messages) and, for a
// clip, the most frames any video takes from it.
struct InputFile {
  int index = 0;  // among the distinct files: which rank decodes it at prepare
  std::string origin;
  int64_t frames = 0;  // 0: an image
  bool mask = false;   // a VACE mask: grey-scale
};

// A VACE mask's frames ([F, H, W, 3] uint8) are grey: diffusers takes the red channel for the context's mask
// and every channel for the kept / generated split, which a coloured mask would make disagree. A codec's chroma
// noise (a level or two) passes.
void check_grey(const at::Tensor& frames, const std::string& path) {
  const at::Tensor f = frames.to(at::kShort);
  const at::Tensor spread = at::amax(f, 3) - at::amin(f, 3);  // [F, H, W]
  const int64_t worst = at::argmax(spread.flatten()).item<int64_t>();
  const int64_t level = spread.flatten()[worst].item<int64_t>();
  const int64_t per_frame = frames.size(1) * frames.size(2);
  OMNI_CHECK_USAGE(level <= 16, "--mask-video '", path, "' is not grey-scale: frame ", worst / per_frame, " at (x ",
                   worst % frames.size(2), ", y ", worst % per_frame / frames.size(2), ") has channels ", level,
                   " levels apart; a VACE mask is white where the video is generated and black where the "
                   "control video is kept");
}

}  // namespace

// Wan2.2-Animate's files of one video: the pose video sets its length (and, without --height / --width, its size,
// floored to the model's multiple, as Wan2.2 takes the pose video's); the face, background and mask videos are as
// long. Their frames are decoded whole by the check below.
template <typename Header, typename Packets, typename Add>
void check_animate_files(VideoSpec& v, const pipeline::ModelSpec& model, Header& header, Packets& packets, Add& add,
                         bool log_size, const std::string& for_video) {
  auto& o = v.opts;
  const int64_t frames = packets(o.pose_video);
  OMNI_CHECK_USAGE(frames > 0, "--pose-video '", o.pose_video, "' has no frames");
  o.animate_frames = frames;
  auto same_length = [&](const std::string& path, const char* flag) {
    if (path.empty()) return;
    (void)header(path, true);
    const int64_t n = packets(path);
    OMNI_CHECK_USAGE(n == frames, flag, " '", path, "' has ", n, " frames but --pose-video '", o.pose_video, "' has ",
                     frames,
                     ": Wan2.2-Animate's videos are frame for frame the same performance (as "
                     "preprocess_data.py writes them)");
    add(path, v.origin, frames);
  };
  const auto [ph, pw] = header(o.pose_video, true);
  add(o.pose_video, v.origin, frames);
  same_length(o.face_video, "--face-video");
  if (o.animate_mode == config::AnimateMode::kReplace) {
    same_length(o.background_video, "--background-video");
    same_length(o.mask_video, "--mask-video");
  }
  (void)header(o.image, false);
  add(o.image, v.origin, 0);
  if (!config::set_by_user(o, "height") && !config::set_by_user(o, "width")) {
    const int64_t m = model.spatial_multiple();
    OMNI_CHECK_USAGE(ph >= m && pw >= m, "--pose-video '", o.pose_video, "' is ", pw, "x", ph, ", smaller than ", m,
                     " pixels: give --height and --width");
    o.height = static_cast<int>(ph - ph % m);
    o.width = static_cast<int>(pw - pw % m);
    if (log_size) OMNI_INFO("size ", o.height, "x", o.width, " from the pose video (", ph, "x", pw, ")", for_video);
  }
}

// Wan2.2-S2V's files of one video: the recording decides the clips (as many as its wav2vec2 features fill, one
// more, or --num-clips of them when fewer), the reference image the size (Wan2.2's get_size_less_than_area within
// --height x --width pixels); an optional pose video. The recording is decoded whole here, once per video.
template <typename Header, typename Packets, typename Add>
void check_speech_files(VideoSpec& v, const pipeline::ModelSpec& model, Header& header, Packets& packets, Add& add,
                        bool log, const std::string& for_video) {
  auto& o = v.opts;
  const int64_t tf = model.temporal_factor();
  OMNI_CHECK_USAGE(o.num_frames > 0 && o.num_frames % tf == 0, "--num-frames ", o.num_frames,
                   ": Wan2.2-S2V makes clips of a multiple of ", tf, " frames (its infer_frames; 80 by default)");
  OMNI_CHECK_USAGE(o.fps == pipeline::kS2VFps, "--fps ", o.fps, ": Wan2.2-S2V makes one frame per 1/",
                   pipeline::kS2VFps, " s of the recording; its video is written at ", pipeline::kS2VFps,
                   " fps, in step with the sound (leave --fps out)");
  OMNI_CHECK_USAGE(o.max_sequence_length <= model.s2v->text_len, "--max-sequence-length ", o.max_sequence_length,
                   ": Wan2.2-S2V's transformer takes at most ", model.s2v->text_len, " text tokens (text_len)");
  const io::Audio audio = io::load_audio(o.audio, 16000, speech_span(o));
  const auto samples = static_cast<int64_t>(audio.samples.size());
  const int64_t whole = pipeline::speech_clips(model.audio_encoder->frames_for(samples), o.num_frames,
                                               static_cast<double>(pipeline::kS2VFps));
  OMNI_CHECK_USAGE(whole > 0, "--audio '", o.audio, "': ", static_cast<double>(samples) / 16000.0,
                   " s of audio make no video frame; Wan2.2-S2V needs at least 0.06 s (two wav2vec2 frames)");
  o.speech_clips = o.num_clips > 0 ? std::min<int64_t>(o.num_clips, whole) : whole;
  if (o.num_clips > whole && log)
    OMNI_WARN("--num-clips ", o.num_clips, ": the recording makes ", whole, " clips", for_video);
  const auto [ih, iw] = header(o.image, false);
  add(o.image, v.origin, 0);
  const int64_t area = static_cast<int64_t>(o.height) * o.width;
  const auto [hh, ww] = pipeline::s2v_video_size(ih, iw, area);
  o.height = static_cast<int>(hh);
  o.width = static_cast<int>(ww);
  if (!o.pose_video.empty()) {
    (void)header(o.pose_video, true);
    OMNI_CHECK_USAGE(packets(o.pose_video) > 0, "--pose-video '", o.pose_video, "' has no frames");
  }
  if (log)
    OMNI_INFO("size ", o.height, "x", o.width, " from the image (", ih, "x", iw, ") within ", area, " pixels; ",
              o.speech_clips, " clips of ", o.num_frames, " frames for ", samples / 16000.0, " s of audio", for_video);
}

std::vector<pipeline::Task> check_inputs(VideoQueue& queue, const pipeline::ModelSpec& model, int decode_ranks,
                                         const dist::Communicator& world, int lockstep_ranks) {
  std::vector<pipeline::Task> tasks;
  std::map<std::string, InputFile> distinct;
  auto add = [&](const std::string& path, const std::string& origin, int64_t frames, bool mask = false) {
    auto it = distinct.emplace(path, InputFile{static_cast<int>(distinct.size()), origin, 0, mask}).first;
    it->second.frames = std::max(it->second.frames, frames);
    it->second.mask = it->second.mask || mask;
  };
  std::map<std::string, std::pair<int64_t, int64_t>> sizes;  // image or clip path -> [H, W] from its header
  // Each file's header read once over the list; names the file: missing, unreadable, not an image or a video.
  auto header = [&](const std::string& path, bool video) {
    auto it = sizes.find(path);
    if (it == sizes.end()) it = sizes.emplace(path, video ? io::video_size(path) : io::image_size(path)).first;
    return it->second;
  };
  std::map<std::string, int64_t> packet_counts;  // a clip's frame count, read once over the list
  auto packets = [&](const std::string& path) {
    auto it = packet_counts.find(path);
    if (it == packet_counts.end()) it = packet_counts.emplace(path, io::video_packet_count(path)).first;
    return it->second;
  };
  const int64_t tf = model.temporal_factor();
  for (int i = 0; i < static_cast<int>(queue.size()); ++i) {
    VideoSpec& v = queue.video(i);
    auto& o = v.opts;
    with_origin(v.origin, [&] {
      tasks.push_back(choose_task(model.index(), o.task, v.params()));
      const int64_t frames = v.params().rounded_num_frames(tf);
      // VACE's conditioning scale: one, or one per VACE layer (as diffusers takes a float or a list).
      const auto& layers = model.experts.front().vace_layers;
      OMNI_CHECK_USAGE(model.index().vace || !config::set_by_user(o, "conditioning-scale"),
                       "--conditioning-scale: this model (", model.index().class_name,
                       ") has no VACE blocks; it weighs a VACE model's control signal");
      OMNI_CHECK_USAGE(
          !model.index().vace || o.conditioning_scale.size() == 1 || o.conditioning_scale.size() == layers.size(),
          "--conditioning-scale: ", o.conditioning_scale.size(), " values for this model's ", layers.size(),
          " VACE layers (give one for all, or one per layer)");
      if (model.index().s2v) {
        check_speech_files(v, model, header, packets, add, world.rank() == 0,
                           queue.size() > 1 ? " for " + v.output : "");
        return;
      }
      if (model.index().animate && !o.pose_video.empty()) {
        check_animate_files(v, model, header, packets, add, world.rank() == 0,
                            queue.size() > 1 ? " for " + v.output : "");
        return;
      }
      // The file whose picture decides the size when none was given: the image, or the clip.
      const std::string& sized = !o.control_video.empty() ? o.control_video : o.video.empty() ? o.image : o.video;
      const bool clip = !o.control_video.empty() || !o.video.empty();
      if (!o.video.empty()) add(o.video, v.origin, frames);
      if (!o.control_video.empty()) add(o.control_video, v.origin, frames);
      if (!o.image.empty()) add(o.image, v.origin, 0);
      if (!o.last_image.empty()) {
        (void)header(o.last_image, false);
        add(o.last_image, v.origin, 0);
      }
      for (const std::string& path : o.reference_images) {
        (void)header(path, false);
        add(path, v.origin, 0);
      }
      if (!o.mask_video.empty()) {
        // diffusers resizes the mask to the video's size and takes as many frames: the same clip's shape.
        const auto control = header(o.control_video, true), mask = header(o.mask_video, true);
        OMNI_CHECK_USAGE(control == mask, "--mask-video '", o.mask_video, "' is ", mask.second, "x", mask.first,
                         " but --control-video '", o.control_video, "' is ", control.second, "x", control.first,
                         ": a mask has its video's size");
        const int64_t nc = packets(o.control_video), nm = packets(o.mask_video);
        OMNI_CHECK_USAGE(nc == nm, "--mask-video '", o.mask_video, "' has ", nm, " frames but --control-video '",
                         o.control_video, "' has ", nc, ": a mask has its video's length (diffusers refuses the pair)");
        add(o.mask_video, v.origin, frames, /*mask=*/true);
      }
      if (sized.empty()) return;
      const auto [ih, iw] = header(sized, clip);
      const bool given = config::set_by_user(o, "height") || config::set_by_user(o, "width");
      if (!given) {
        // Without explicit sizes the picture decides them.
        const auto hw = io::derive_size(ih, iw, static_cast<int64_t>(o.height) * o.width, model.spatial_multiple());
        o.height = static_cast<int>(hw.first);
        o.width = static_cast<int>(hw.second);
      }
      if (!o.control_video.empty()) {
        // WanVACEPipeline sizes the control video itself (preprocess_conditions), from its own size within the
        // video's: the two must agree, or its latents would not fit the video's. Without explicit sizes, the
        // largest that does (each pass only shrinks).
        const int64_t vf = model.vae.scale_factor_spatial, m = model.spatial_multiple();
        auto resolved = vace_control_size(ih, iw, o.height, o.width, vf, m);
        auto fits = [&] { return resolved.first == o.height && resolved.second == o.width; };
        while (!given && !fits() && resolved.first > 0 && resolved.second > 0) {
          o.height = static_cast<int>(resolved.first);
          o.width = static_cast<int>(resolved.second);
          resolved = vace_control_size(ih, iw, o.height, o.width, vf, m);
        }
        OMNI_CHECK_USAGE(fits(), "--control-video '", o.control_video, "' (", iw, "x", ih, ") becomes ",
                         resolved.second, "x", resolved.first, " in diffusers' WanVACEPipeline at a ", o.width, "x",
                         o.height, " video, whose latents it must fit: give --width ", resolved.second, " --height ",
                         resolved.first, ", or a clip of the video's aspect ratio");
      }
      if (!given && world.rank() == 0)
        OMNI_INFO("size ", o.height, "x", o.width, " from the ", clip ? "video" : "image", " (", ih, "x", iw, ")",
                  queue.size() > 1 ? " for " + v.output : "");
    });
  }
  // Each file decoded whole once, by one rank: a file broken past its header, or a clip shorter than a video
  // needs, is an agreed error now, not an abort mid-run.
  for (const auto& [path, file] : distinct) {
    if (file.index % world.size() != world.rank()) continue;
    with_origin(file.origin, [&] {
      if (file.frames == 0) {
        (void)io::read_image(path);
      } else {
        const io::VideoLevels clip = io::read_clip_frames(path, file.frames);
        if (file.mask) check_grey(clip.frames, path);
      }
    });
  }
  for (int i = 0; i < static_cast<int>(queue.size()); ++i) {
    if (queue.status(i) != VideoStatus::kPending) continue;
    with_origin(queue.video(i).origin, [&] { check_video(model, queue.video(i).params(), decode_ranks); });
  }
  // Animate and S2V: data-parallel groups that share HSDP shard groups run in lockstep (the same transformer calls,
  // each block's gather a collective of them all), so every video of the run makes as many segments. Groups that
  // hold their own shards run apart: any lengths.
  if ((model.index().animate || model.index().s2v) && lockstep_ranks > 0 && queue.size() > 1) {
    const VideoSpec& first = queue.video(0);
    const int64_t segments = first.params().segments(tf);
    for (int i = 1; i < static_cast<int>(queue.size()); ++i) {
      const VideoSpec& v = queue.video(i);
      const bool speech = model.index().s2v;
      const std::string& mine = speech ? v.opts.audio : v.opts.pose_video;
      const std::string& theirs = speech ? first.opts.audio : first.opts.pose_video;
      OMNI_CHECK_USAGE(v.params().segments(tf) == segments, v.origin, ": ", mine, " makes ", v.params().segments(tf),
                       speech ? " clips but " : " segments but ", theirs, " (", first.output, ") makes ", segments,
                       "; the data-parallel groups share HSDP shard groups of ", lockstep_ranks,
                       " ranks, so they run in lockstep and every video makes as many: give --hsdp-shard-size "
                       "at most a video's ranks, or ",
                       speech ? "recordings of similar length, or --num-clips" : "performances of similar length");
    }
  }
  return tasks;
}

}  // namespace omni::job
