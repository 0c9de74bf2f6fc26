// The inputs of each video checked against the model before any weight is read, in the CLI's words (docs/DESIGN.md
// section 2, "adding a pipeline"): which task the checkpoint runs with the inputs given, and the video's sizes
// against what the model needs. Every error is a usage error naming the flag (the prompts-file line is added by
// the caller's with_origin).
#pragma once

#include "config/options.h"
#include "io/model_dir.h"
#include "pipeline/model_spec.h"
#include "pipeline/pipeline_settings.h"
#include "pipeline/video_params.h"

namespace omni::job {

// The task a checkpoint runs given whether an image is supplied (and --task): its model_index.json's class
// decides (WanImageToVideoPipeline: i2v; expand_timesteps: TI2V-5B's ti2v, image mode with --image; else t2v);
// --task only confirms it. One error naming the flag when they do not fit (an I2V checkpoint without --image, ...).
pipeline::Task choose_task(const io::ModelIndex& index, config::TaskChoice task, bool has_image);

// A video's sizes against the model: height and width multiples of its spatial multiple (usage error), and
// with --vae-parallel at least one latent row per rank of `decode_ranks`. Warns, as diffusers does, when
// num_frames is not of the form 4k+1 (the video then has rounded_num_frames()).
void check_video(const pipeline::ModelSpec& model, const pipeline::VideoParams& video, int decode_ranks);

}  // namespace omni::job
