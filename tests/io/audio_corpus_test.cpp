// io::load_audio on the corpus tools/reference/audio_corpus.py makes with the ffmpeg program: every file and span
// decodes to the samples librosa.load(path, sr=16000, offset, duration) gives (Wan2.2's S2V audio loading), which
// the script stored beside it. Sample-exact where both read the same bits the same way (PCM, FLAC, float WAV, and
// everything librosa reads through the ffmpeg program); within a stated bound where libsndfile's decoder differs
// from libav's (MP3: mpg123, Vorbis: libvorbis, Opus: libopus). One line per codec gives the largest difference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/audio_reader.h"
#include "media_test_util.h"

namespace omni::media_test {
namespace {

// The bound on |ours - librosa's| for a codec that libsndfile decodes with another library than libav (the
// samples peak near 0.5). Measured on this corpus (AMX Xeon): MP3 1.1e-6, Vorbis 2.1e-7, Opus 1.3e-7 (7.5e-5 on
// other signals, before resampling). The bounds leave room for the decoders' SIMD paths on other CPUs and stay
// below a third of a 16-bit step (3e-5) but for Opus. Everything else must be equal.
double bound(const std::string& codec, const std::string& reader) {
  if (reader == "soundfile") {
    if (codec == "mp3") return 1e-5;
    if (codec == "vorbis") return 2e-6;
    if (codec == "opus") return 2e-4;
  }
  return 0.0;
}

TEST(AudioCorpus, EveryFileEqualsLibrosaLoad) {
  const char* env = std::getenv("OMNI_AUDIO_CORPUS");
  const std::string dir = env && *env ? env : "";
  ASSERT_FALSE(dir.empty()) << "OMNI_AUDIO_CORPUS is not set: make the corpus with "
                               "tools/reference/.venv/bin/python tools/reference/audio_corpus.py DIR";
  const std::string text = read_file(dir + "/corpus.json");
  ASSERT_FALSE(text.empty()) << dir << "/corpus.json is missing or empty";
  const nlohmann::json corpus = nlohmann::json::parse(text);
  ASSERT_GE(corpus["cases"].size(), 20u) << "the corpus is smaller than audio_corpus.py writes";
  std::map<std::string, std::pair<int, double>> per_codec;  // codec (reader) -> (cases, largest difference)
  for (const nlohmann::json& c : corpus["cases"]) {
    const std::string file = c["file"];
    io::AudioSpan span;
    if (!c["offset"].is_null()) span.start = c["offset"];
    if (!c["duration"].is_null()) span.duration = c["duration"];
    SCOPED_TRACE(file + " (" + std::string(c["encode"]) + ") from " + std::to_string(span.start) + " s for " +
                 std::to_string(span.duration) + " s");
    io::Audio ours;
    try {
      ours = io::load_audio(dir + "/" + file, 16000, span);
    } catch (const Error& e) {
      ADD_FAILURE() << "load_audio failed: " << e.what();
      continue;
    }
    EXPECT_EQ(ours.sample_rate, 16000);
    EXPECT_EQ(ours.info.sample_rate, c["rate"].get<int>());
    EXPECT_EQ(ours.info.channels, c["channels"].get<int>());
    const std::string reader = c["reader"];
    EXPECT_EQ(ours.info.as_16_bit, reader == "audioread") << "librosa read it through " << reader;
    const std::string expected = read_file(dir + "/" + std::string(c["expected"]));
    const int64_t n = c["samples"];
    ASSERT_EQ(expected.size(), static_cast<size_t>(n) * 4);
    ASSERT_EQ(static_cast<int64_t>(ours.samples.size()), n);
    std::vector<float> want(n);
    std::memcpy(want.data(), expected.data(), expected.size());
    double worst = 0.0;
    int64_t differing = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = std::fabs(static_cast<double>(ours.samples[i]) - want[i]);
      worst = std::max(worst, d);
      differing += d > 0;
    }
    const double allowed = bound(ours.info.codec, reader);
    EXPECT_LE(worst, allowed) << differing << " of " << n << " samples differ";
    auto& entry = per_codec[ours.info.codec + " (" + reader + ")"];
    ++entry.first;
    entry.second = std::max(entry.second, worst);
  }
  std::cout << "audio_corpus: librosa " << std::string(corpus["librosa"]) << ", libsndfile "
            << std::string(corpus["libsndfile"]) << ", libsoxr " << std::string(corpus["libsoxr"]) << "\n";
  for (const auto& [kind, entry] : per_codec)
    std::cout << "audio_corpus: " << kind << ": " << entry.first << " cases, largest difference " << entry.second
              << "\n";
}

}  // namespace
}  // namespace omni::media_test
