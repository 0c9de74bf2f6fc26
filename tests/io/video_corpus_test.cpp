// io::read_video_levels (kAsFfmpeg) on the corpus tools/reference/video_corpus.py makes with the ffmpeg program:
// every clip decodes to exactly the frames diffusers.utils.load_video gives (imageio's FFmpeg, PIL for GIF), which
// the script stored beside it, at the frame rate it reports. One line per container and codec says how many were
// equal.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/video_reader.h"
#include "media_test_util.h"

namespace omni::media_test {
namespace {

TEST(VideoCorpus, EveryClipEqualsLoadVideo) {
  const char* env = std::getenv("OMNI_VIDEO_CORPUS");
  const std::string dir = env && *env ? env : "";
  ASSERT_FALSE(dir.empty()) << "OMNI_VIDEO_CORPUS is not set: make the corpus with "
                               "tools/reference/.venv/bin/python tools/reference/video_corpus.py DIR";
  const std::string text = read_file(dir + "/corpus.json");
  ASSERT_FALSE(text.empty()) << dir << "/corpus.json is missing or empty";
  const nlohmann::json corpus = nlohmann::json::parse(text);
  ASSERT_GE(corpus["cases"].size(), 17u) << "the corpus is smaller than video_corpus.py writes";
  std::map<std::string, std::pair<int, int>> per_codec;  // codec in container -> (equal, total)
  for (const nlohmann::json& c : corpus["cases"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file + " (" + std::string(c["encode"]) + ")");
    io::VideoLevels ours;
    try {
      ours = io::read_video_levels(dir + "/" + file, -1, io::RgbConversion::kAsFfmpeg);
    } catch (const Error& e) {
      ADD_FAILURE() << "read_video_levels failed: " << e.what();
      continue;
    }
    const std::string kind = ours.info.codec + " in ." + file.substr(file.rfind('.') + 1);
    ++per_codec[kind].second;
    const int64_t f = c["frames"], h = c["height"], w = c["width"];
    ASSERT_EQ(ours.frames.sizes(), (at::IntArrayRef{f, h, w, 3}));
    EXPECT_EQ(io::video_size(dir + "/" + file), std::make_pair(h, w));
    // The frame rate as load_video reports it (imageio's, FFmpeg's guess); a GIF's is PIL's first frame duration
    // (1000 / 60 ms here), where FFmpeg averages the frames' delays: not compared (a video-to-video run takes
    // its frames, not its rate).
    if (!c["fps"].is_null() && ours.info.codec != "gif") EXPECT_NEAR(ours.info.fps(), c["fps"].get<double>(), 1e-9);
    const std::string expected = read_file(dir + "/" + std::string(c["expected"]));
    ASSERT_EQ(expected.size(), static_cast<size_t>(f * h * w * 3));
    const uint8_t* a = ours.frames.contiguous().data_ptr<uint8_t>();
    const auto* b = reinterpret_cast<const uint8_t*>(expected.data());
    const ByteDiff d = byte_diff(a, b, f * h * w * 3);
    EXPECT_EQ(d.differing, 0) << d.differing << " of " << f * h * w * 3 << " bytes differ, by up to " << d.max_diff
                              << "; first in frame " << d.first / (h * w * 3);
    if (d.differing == 0) ++per_codec[kind].first;
  }
  std::cout << "video_corpus: load_video through imageio-ffmpeg " << std::string(corpus["imageio_ffmpeg"])
            << " (FFmpeg " << std::string(corpus["ffmpeg"]) << ")\n";
  for (const auto& [kind, counts] : per_codec)
    std::cout << "video_corpus: " << kind << " " << counts.first << "/" << counts.second << " equal to load_video\n";
}

}  // namespace
}  // namespace omni::media_test
