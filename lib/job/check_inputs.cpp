#include "job/check_inputs.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/log.h"
#include "io/image_reader.h"
#include "io/image_resize.h"
#include "io/video_reader.h"

namespace omni::job {

pipeline::Task choose_task(const io::ModelIndex& index, config::TaskChoice task, const pipeline::VideoParams& in) {
  using config::TaskChoice;
  const char* flag = config::name_of(task);
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
  const int m = model.spatial_multiple();
  OMNI_CHECK_USAGE(v.height % m == 0 && v.width % m == 0, "--height and --width must be multiples of ", m,
                   " for this model (VAE factor ", model.vae.scale_factor_spatial, " x patch size), got ", v.height,
                   "x", v.width);
  const int64_t latent_rows = v.height / model.vae.scale_factor_spatial;
  OMNI_CHECK_USAGE(latent_rows >= decode_ranks, "--vae-parallel: ", decode_ranks,
                   " ranks per data-parallel group cannot split a ", v.height, "-pixel height (", latent_rows,
                   " latent rows, at least one each); use a larger --height or leave --vae-parallel off");
  if (v.rounded_num_frames(tf) != v.num_frames) {
    OMNI_WARN("--num-frames ", v.num_frames, " is not of the form ", tf, "k+1; using ", v.rounded_num_frames(tf),
              " (as diffusers)");
  }
}

namespace {

// The files a list's videos read, each checked once: its path, the first video naming it (for messages) and, for a
// video-to-video clip, the most frames any video takes from it.
struct InputFile {
  int index = 0;  // among the distinct files: which rank decodes it at prepare
  std::string origin;
  int64_t frames = 0;  // 0: an image
};

}  // namespace

std::vector<pipeline::Task> check_inputs(VideoQueue& queue, const pipeline::ModelSpec& model, int decode_ranks,
                                         const dist::Communicator& world) {
  std::vector<pipeline::Task> tasks;
  std::map<std::string, InputFile> distinct;
  auto add = [&](const std::string& path, const std::string& origin, int64_t frames) {
    auto it = distinct.emplace(path, InputFile{static_cast<int>(distinct.size()), origin, 0}).first;
    it->second.frames = std::max(it->second.frames, frames);
  };
  std::map<std::string, std::pair<int64_t, int64_t>> sizes;  // image or clip path -> [H, W] from its header
  for (int i = 0; i < static_cast<int>(queue.size()); ++i) {
    VideoSpec& v = queue.video(i);
    auto& o = v.opts;
    with_origin(v.origin, [&] {
      tasks.push_back(choose_task(model.index(), o.task, v.params()));
      // The file whose picture decides the size when none was given: the image, or the clip.
      const std::string& sized = o.video.empty() ? o.image : o.video;
      if (sized.empty()) return;
      // Each file's header read once over the list; names the file: missing, unreadable, not an image or a video.
      auto header = [&](const std::string& path, bool video) {
        auto it = sizes.find(path);
        if (it == sizes.end()) it = sizes.emplace(path, video ? io::video_size(path) : io::image_size(path)).first;
        return it;
      };
      const auto known = header(sized, !o.video.empty());
      if (!o.video.empty()) add(o.video, v.origin, v.params().rounded_num_frames(model.temporal_factor()));
      if (!o.image.empty()) add(o.image, v.origin, 0);
      if (!o.last_image.empty()) {
        (void)header(o.last_image, false);
        add(o.last_image, v.origin, 0);
      }
      // Without explicit sizes the picture decides them.
      if (config::set_by_user(o, "height") || config::set_by_user(o, "width")) return;
      const auto [ih, iw] = known->second;
      const auto hw = io::derive_size(ih, iw, static_cast<int64_t>(o.height) * o.width, model.spatial_multiple());
      o.height = static_cast<int>(hw.first);
      o.width = static_cast<int>(hw.second);
      if (world.rank() == 0)
        OMNI_INFO("size ", o.height, "x", o.width, " from the ", o.video.empty() ? "image" : "video", " (", ih, "x", iw,
                  ")", queue.size() > 1 ? " for " + v.output : "");
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
        (void)io::read_clip_frames(path, file.frames);
      }
    });
  }
  for (int i = 0; i < static_cast<int>(queue.size()); ++i) {
    if (queue.status(i) != VideoStatus::kPending) continue;
    with_origin(queue.video(i).origin, [&] { check_video(model, queue.video(i).params(), decode_ranks); });
  }
  return tasks;
}

}  // namespace omni::job
