// PthFile on the archives tools/reference/pth_cases.py writes with PyPI torch: every good archive reads the same
// tensors as its safetensors twin (ranged reads touching only their slice), every broken or hostile one is an
// input error naming the file and the fault, and the os.system payload never runs.
#include "io/pth_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "io_test_util.h"

namespace omni::io {
namespace {

using testing::expect_input_error;
using testing::TempDir;
using testing::write_file;

// The folder of cases, from $OMNI_PTH_CASES. Unset is a failure, not a skip: a skipped test proves nothing.
std::string cases_dir() {
  const char* dir = std::getenv("OMNI_PTH_CASES");
  return dir && *dir ? dir : "";
}

nlohmann::json load_cases() {
  const std::string dir = cases_dir();
  if (dir.empty()) {
    ADD_FAILURE() << "OMNI_PTH_CASES is not set: make the cases with "
                     "tools/reference/.venv/bin/python tools/reference/pth_cases.py DIR and set OMNI_PTH_CASES=DIR";
    return nlohmann::json::array();
  }
  const std::string text = testing::read_file(dir + "/cases.json");
  if (text.empty()) {
    ADD_FAILURE() << dir << "/cases.json is missing or empty";
    return nlohmann::json::array();
  }
  return nlohmann::json::parse(text).at("cases");
}

std::set<std::string> name_set(const TensorFile& f) {
  return std::set<std::string>(f.names().begin(), f.names().end());
}

TEST(PthFile, GoodArchivesMatchTheirSafetensorsTwins) {
  const nlohmann::json cases = load_cases();
  int checked = 0;
  for (const auto& c : cases) {
    if (c.at("kind") != "good") continue;
    const std::string path = cases_dir() + "/" + c.at("file").get<std::string>();
    SCOPED_TRACE(path);
    PthFile pth(path);
    SafetensorsFile twin(cases_dir() + "/" + c.at("twin").get<std::string>());
    ASSERT_EQ(name_set(pth), name_set(twin));
    for (const std::string& name : twin.names()) {
      SCOPED_TRACE(name);
      const TensorInfo& a = pth.info(name);
      const TensorInfo& b = twin.info(name);
      EXPECT_EQ(a.dtype, b.dtype);
      EXPECT_EQ(a.shape, b.shape);
      EXPECT_EQ(a.file, path);
      EXPECT_EQ(a.data_end - a.data_begin, a.numel() * dtype_size(a.dtype));
      // float8 reads decode to float32 on both sides, so one comparison covers every dtype.
      const at::Tensor full = pth.read(name);
      EXPECT_TRUE(at::equal(full, twin.read(name)));
      const int64_t n = a.numel();
      if (n >= 3) {
        const at::Tensor slice = pth.read_range(name, n / 3, n / 3);
        EXPECT_TRUE(at::equal(slice, full.reshape({-1}).slice(0, n / 3, n / 3 + n / 3)));
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 5) << "too few good cases in " << cases_dir();
}

TEST(PthFile, RangedReadTouchesOnlyItsSlice) {
  const nlohmann::json cases = load_cases();
  int checked = 0;
  for (const auto& c : cases) {
    if (c.at("kind") != "good" || c.at("big").is_null()) continue;
    const std::string path = cases_dir() + "/" + c.at("file").get<std::string>();
    SCOPED_TRACE(path);
    PthFile pth(path);
    const std::string big = c.at("big");
    ASSERT_GT(pth.info(big).numel() * dtype_size(pth.info(big).dtype), 1 << 20);
    EXPECT_EQ(pth.bytes_read(), 0);
    const at::Tensor part = pth.read_range(big, 1000, 500);
    EXPECT_EQ(pth.bytes_read(), 500 * dtype_size(pth.info(big).dtype));
    EXPECT_EQ(part.numel(), 500);
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(PthFile, ViewsShareTheirStorage) {
  ASSERT_FALSE(cases_dir().empty()) << "OMNI_PTH_CASES is not set";
  PthFile pth(cases_dir() + "/good_state_dict.pth");
  const TensorInfo& a = pth.info("extra.view_a");
  const TensorInfo& b = pth.info("extra.view_b");
  // Both views point into the one saved 100-float storage, 40 floats apart.
  EXPECT_EQ(b.data_begin - a.data_begin, 40 * 4);
  EXPECT_EQ(a.data_end - a.data_begin, 20 * 4);
}

TEST(PthFile, OpenTensorFileDispatchesOnExtension) {
  ASSERT_FALSE(cases_dir().empty()) << "OMNI_PTH_CASES is not set";
  auto f = open_tensor_file(cases_dir() + "/good_plain_dict.pth");
  EXPECT_NE(dynamic_cast<PthFile*>(f.get()), nullptr);
  EXPECT_TRUE(f->contains("a"));
}

TEST(PthFile, BadArchivesAreInputErrors) {
  const nlohmann::json cases = load_cases();
  int checked = 0;
  for (const auto& c : cases) {
    if (c.at("kind") != "bad") continue;
    const std::string path = cases_dir() + "/" + c.at("file").get<std::string>();
    SCOPED_TRACE(path);
    std::string marker;
    if (c.contains("marker")) {
      marker = c.at("marker");
      ::unlink(marker.c_str());
    }
    try {
      PthFile pth(path);
      ADD_FAILURE() << "opened without an error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.exit_code(), 3) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
      EXPECT_NE(msg.find(path), std::string::npos) << "path not in: " << msg;
      for (const auto& part : c.at("errors")) {
        EXPECT_NE(msg.find(part.get<std::string>()), std::string::npos) << "'" << part << "' not in: " << msg;
      }
      std::cout << "[ message  ] " << msg << "\n";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected an omni::Error, got: " << e.what();
    }
    // Nothing from the file ran: the payload would have created the marker.
    if (!marker.empty()) {
      EXPECT_NE(::access(marker.c_str(), F_OK), 0) << marker << " exists: the payload ran";
    }
    ++checked;
  }
  EXPECT_GE(checked, 10) << "too few bad cases in " << cases_dir();
}

// Cases that need no Python: a few starts of a file that are not a zip archive.
TEST(PthFile, NotAnArchive) {
  TempDir dir;
  const std::string legacy = dir / "old.pth";
  write_file(legacy, std::string("\x80\x02\x8a\x0a", 4) + std::string(40, '\0'));
  expect_input_error(
      [&] { PthFile f(legacy); },
      {legacy, "legacy (pre-1.6, non-zip)", "torch.load('" + legacy + "', weights_only=True)", dir / "old.zip.pth"});
  const std::string text = dir / "text.pth";
  write_file(text, "just some text, long enough to be looked at");
  expect_input_error([&] { PthFile f(text); }, {text, "not a torch.save archive", "expected a zip"});
  const std::string tiny = dir / "tiny.pth";
  write_file(tiny, "PK");
  expect_input_error([&] { PthFile f(tiny); }, {tiny, "truncated or corrupt zip"});
  // A zip local header and nothing else: no end-of-central-directory record.
  const std::string cut = dir / "cut.pth";
  write_file(cut, std::string("PK\x03\x04", 4) + std::string(100, '\0'));
  expect_input_error([&] { PthFile f(cut); }, {cut, "truncated or corrupt zip", "no end-of-central-directory"});
  expect_input_error([&] { PthFile f(dir / "absent.pth"); }, {dir / "absent.pth", "cannot open"});
}

}  // namespace
}  // namespace omni::io
