// transformers' Wav2Vec2FeatureExtractor as Wan2.2-S2V's AudioEncoder calls it (one unpadded 16 kHz clip,
// return_tensors="pt"): with the folder's do_normalize, each clip scaled to zero mean and unit variance,
// (x - mean) / sqrt(var + 1e-7) (population variance).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace omni::io {

struct Wav2Vec2FeatureExtractorConfig {
  bool do_normalize = true;
  int sampling_rate = 16000;
  // <dir>/preprocessor_config.json (absent: transformers' defaults, as above). A sampling_rate other than a
  // positive integer is an input error naming the file.
  static Wav2Vec2FeatureExtractorConfig from_folder(const std::string& dir);
  // The same of a config already read (`source`: its path; an empty object gives the defaults).
  static Wav2Vec2FeatureExtractorConfig from_json(const nlohmann::json& j, const std::string& source);
};

// The input_values of `samples` (mono, at config.sampling_rate). The mean and variance are summed in double
// (numpy sums float32 pairwise): within 1e-6 of transformers' values relative to their scale.
std::vector<float> wav2vec2_input_values(const std::vector<float>& samples,
                                         const Wav2Vec2FeatureExtractorConfig& config);

}  // namespace omni::io
