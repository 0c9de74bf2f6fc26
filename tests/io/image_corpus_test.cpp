// io::read_image on the corpus tools/reference/image_corpus.py makes with Pillow: every image decodes to exactly
// the bytes diffusers.utils.load_image gives (Image.open, exif_transpose, convert("RGB")), which the script stored
// beside it. One line per format says how many were equal.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/image_reader.h"
#include "media_test_util.h"

namespace omni::media_test {
namespace {

// The corpus folder, from $OMNI_IMAGE_CORPUS. Unset is a failure, not a skip.
std::string corpus_dir() {
  const char* dir = std::getenv("OMNI_IMAGE_CORPUS");
  return dir && *dir ? dir : "";
}

TEST(ImageCorpus, EveryImageEqualsLoadImage) {
  const std::string dir = corpus_dir();
  ASSERT_FALSE(dir.empty()) << "OMNI_IMAGE_CORPUS is not set: make the corpus with "
                               "tools/reference/.venv/bin/python tools/reference/image_corpus.py DIR";
  const std::string text = read_file(dir + "/corpus.json");
  ASSERT_FALSE(text.empty()) << dir << "/corpus.json is missing or empty";
  const nlohmann::json corpus = nlohmann::json::parse(text);
  ASSERT_GE(corpus["cases"].size(), 60u) << "the corpus is smaller than image_corpus.py writes";
  std::map<std::string, std::pair<int, int>> per_format;  // format -> (equal, total)
  for (const nlohmann::json& c : corpus["cases"]) {
    const std::string file = c["file"], format = c["format"];
    SCOPED_TRACE(file + " (" + std::string(c["mode"]) + ")");
    ++per_format[format].second;
    at::Tensor ours;
    try {
      ours = io::read_image(dir + "/" + file);
    } catch (const Error& e) {
      ADD_FAILURE() << "read_image failed: " << e.what();
      continue;
    }
    const int64_t h = c["height"], w = c["width"];
    ASSERT_EQ(ours.sizes(), (at::IntArrayRef{h, w, 3}));
    const std::string expected = read_file(dir + "/" + std::string(c["expected"]));
    ASSERT_EQ(expected.size(), static_cast<size_t>(h * w * 3));
    const uint8_t* a = ours.contiguous().data_ptr<uint8_t>();
    const auto* b = reinterpret_cast<const uint8_t*>(expected.data());
    const ByteDiff d = byte_diff(a, b, h * w * 3);
    EXPECT_EQ(d.differing, 0) << d.differing << " of " << h * w * 3 << " bytes differ, by up to " << d.max_diff
                              << "; first at row " << d.first / (w * 3) << ", column " << d.first / 3 % w
                              << ", channel " << d.first % 3;
    if (d.differing == 0) ++per_format[format].first;
  }
  std::cout << "image_corpus: Pillow " << std::string(corpus["pillow"]) << " (libjpeg-turbo "
            << std::string(corpus["libjpeg_turbo"]) << ", libwebp " << std::string(corpus["libwebp"]) << ")\n";
  for (const auto& [format, counts] : per_format)
    std::cout << "image_corpus: " << format << " " << counts.first << "/" << counts.second << " equal to load_image\n";
  for (const char* format : {"JPEG", "WebP", "PNG", "BMP", "TGA", "PNM", "GIF"})
    EXPECT_TRUE(per_format.count(format)) << "the corpus has no " << format << " image";
}

}  // namespace
}  // namespace omni::media_test
