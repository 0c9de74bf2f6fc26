// Wan2.2-S2V's conditioning geometry (wan/speech2video.py): the video size chosen from the reference image.
// docs/s2v-reference.md section 7.
#pragma once

#include <cstdint>
#include <utility>

namespace omni::pipeline {

// WanS2V.get_size_less_than_area(height, width, target_area=max_area, divisor=64): the largest scale of the
// image whose sides, each rounded up to a multiple of 64, fit in max_area pixels (tried from the scale that
// fills the area, or 1 for a smaller image, down in 100 steps to a lower bound), else the aspect-kept size
// floored to multiples of `divisor`, no larger than the image. {height, width}.
std::pair<int64_t, int64_t> s2v_video_size(int64_t height, int64_t width, int64_t max_area, int64_t divisor = 64);

}  // namespace omni::pipeline
