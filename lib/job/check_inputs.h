// The inputs of each video checked against the model before any weight is read, in the CLI's words (docs/DESIGN.md
// section 2, "adding a pipeline"): which task the checkpoint runs with the inputs given, and the video's sizes
// against what the model needs. Every error is a usage error naming the flag (the prompts-file line is added by
// the caller's with_origin).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "config/options.h"
#include "dist/communicator.h"
#include "io/model_dir.h"
#include "job/video_queue.h"
#include "pipeline/model_spec.h"
#include "pipeline/pipeline_settings.h"
#include "pipeline/video_params.h"

namespace omni::job {

// The task a checkpoint runs given the conditioning inputs a video has (`in`: image, last image, video) and
// --task: its model_index.json's class decides (WanImageToVideoPipeline: i2v, flf2v with --last-image;
// expand_timesteps: TI2V-5B's ti2v, image mode with --image; else t2v; v2v with --video on T2V and TI2V-5B);
// --task only confirms it. One error naming the flag when they do not fit (an I2V checkpoint without --image,
// --last-image on TI2V-5B, --video on I2V, ...).
pipeline::Task choose_task(const io::ModelIndex& index, config::TaskChoice task, const pipeline::VideoParams& in);

// A video's sizes against the model: height and width multiples of its spatial multiple (usage error), with
// --last-image at least two latent frames, and
// with --vae-parallel at least one latent row per rank of `decode_ranks`. Warns, as diffusers does, when
// num_frames is not of the form 4k+1 (the video then has rounded_num_frames()).
void check_video(const pipeline::ModelSpec& model, const pipeline::VideoParams& video, int decode_ranks);

// The size diffusers' WanVACEPipeline.preprocess_conditions gives a control video of video_h x video_w at a
// height x width video: its size floored to `vae_factor`, scaled by min(width / w, height / h) when its area is
// the larger (each side truncated), floored to `multiple` (VAE factor x patch). {height, width}.
std::pair<int64_t, int64_t> vace_control_size(int64_t video_h, int64_t video_w, int64_t height, int64_t width,
                                              int64_t vae_factor, int64_t multiple);

// Every video of `queue` against the model, before any weight is read (call it agreed: an error is one line on
// every rank): its task (choose_task), its image's size from the file's header (io::image_size; no pixels),
// the sizes an image decides when none were given (its aspect ratio within the preset's area, snapped to the
// model's multiple: Wan2.2's rule, written into the video's options), and each pending video's sizes
// (check_video). Each distinct image and clip is decoded once over `world` (by one rank; a clip its first
// frames), so that a file broken past its header or a clip too short is an agreed error now, not an abort
// mid-run. A clip's picture decides the sizes as an image's does. `lockstep_ranks` > 0: the data-parallel groups
// share HSDP shard groups of that many ranks, so they make the same transformer calls: every Animate or S2V video
// of the run must make as many segments or clips (0: the groups run apart). Returns each video's task.
std::vector<pipeline::Task> check_inputs(VideoQueue& queue, const pipeline::ModelSpec& model, int decode_ranks,
                                         const dist::Communicator& world, int lockstep_ranks = 0);

}  // namespace omni::job
