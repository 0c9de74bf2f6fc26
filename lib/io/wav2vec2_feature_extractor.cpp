#include "io/wav2vec2_feature_extractor.h"

#include <sys/stat.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"

namespace omni::io {

Wav2Vec2FeatureExtractorConfig Wav2Vec2FeatureExtractorConfig::from_folder(const std::string& dir) {
  const std::string path = dir + "/preprocessor_config.json";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Wav2Vec2FeatureExtractorConfig();
  return from_json(read_json(path), path);
}

Wav2Vec2FeatureExtractorConfig Wav2Vec2FeatureExtractorConfig::from_json(const nlohmann::json& j,
                                                                         const std::string& source) {
  Wav2Vec2FeatureExtractorConfig c;
  ConfigFile file(j, source, "transformers' Wav2Vec2FeatureExtractor");
  c.do_normalize = file.bool_or("do_normalize", true);
  c.sampling_rate = static_cast<int>(file.positive_int_or("sampling_rate", 16000));
  // Settings of padding and batching that one unpadded clip never meets.
  file.known({"feature_extractor_type", "feature_size", "padding_side", "padding_value", "return_attention_mask",
              "processor_class"});
  file.warn_unknown();
  return c;
}

std::vector<float> wav2vec2_input_values(const std::vector<float>& samples,
                                         const Wav2Vec2FeatureExtractorConfig& config) {
  if (!config.do_normalize || samples.empty()) return samples;
  double sum = 0;
  for (float v : samples) sum += v;
  const double mean = sum / static_cast<double>(samples.size());
  double squares = 0;
  for (float v : samples) squares += (v - mean) * (v - mean);
  const double scale = 1.0 / std::sqrt(squares / static_cast<double>(samples.size()) + 1e-7);
  std::vector<float> out(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) out[i] = static_cast<float>((samples[i] - mean) * scale);
  return out;
}

}  // namespace omni::io
