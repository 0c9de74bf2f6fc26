// Helpers for the media tests: running programs, folder listings, test clips and PSNR, plus the common ones
// (tests/common/test_util.h: temporary folders, file reads and writes, error expectations).
#pragma once

#include <ATen/ATen.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_util.h"

namespace omni::media_test {

using test_util::expect_error;
using test_util::read_file;
using test_util::TempDir;
using test_util::write_file;

// Every entry of a folder (hidden ones included), without "." and "..".
inline std::set<std::string> list_dir(const std::string& dir) {
  std::set<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.insert(n);
  }
  ::closedir(d);
  return out;
}

// Runs a shell command; returns its exit status and stdout (stderr goes to stdout when `merge`).
inline int run_command(const std::string& cmd, std::string* out, bool merge = true) {
  std::string full = cmd + (merge ? " 2>&1" : "");
  FILE* p = ::popen(full.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// PSNR in dB of two [H, W, 3] frames in [0, 1].
// How two byte buffers of `n` bytes differ: how many bytes, by how much at most, and where first (-1: equal).
struct ByteDiff {
  int64_t differing = 0, max_diff = 0, first = -1;
};
inline ByteDiff byte_diff(const uint8_t* a, const uint8_t* b, int64_t n) {
  ByteDiff d;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = std::abs(int{a[i]} - int{b[i]});
    if (v == 0) continue;
    if (d.first < 0) d.first = i;
    ++d.differing;
    d.max_diff = std::max(d.max_diff, v);
  }
  return d;
}

inline double psnr(const at::Tensor& a, const at::Tensor& b) {
  const double mse = (a.to(at::kDouble) - b.to(at::kDouble)).pow(2).mean().item<double>();
  return mse == 0 ? INFINITY : 10.0 * std::log10(1.0 / mse);
}

// A clip of smooth gradients that move from frame to frame: [F, H, W, 3] float in [0, 1].
inline at::Tensor gradient_clip(int64_t frames, int64_t height, int64_t width) {
  at::Tensor out = at::empty({frames, height, width, 3}, at::kFloat);
  auto a = out.accessor<float, 4>();
  const double pi = 3.14159265358979323846;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        const double u = static_cast<double>(x) / width, v = static_cast<double>(y) / height;
        const double t = static_cast<double>(f) / frames;
        a[f][y][x][0] = static_cast<float>(0.5 + 0.4 * std::sin(pi * (u + 0.5 * v + t)));
        a[f][y][x][1] = static_cast<float>(0.15 + 0.7 * v);
        a[f][y][x][2] = static_cast<float>(0.5 + 0.35 * std::cos(pi * (0.5 * u + v - t)));
      }
  return out;
}

// The SSIM column (third) of omni-compare's frame table, frame 0 onwards.
inline std::vector<double> ssim_column(const std::string& out) {
  std::vector<double> v;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream cols(line);
    std::string frame, psnr, ssim;
    if ((cols >> frame >> psnr >> ssim) && frame == std::to_string(v.size())) v.push_back(std::stod(ssim));
  }
  return v;
}

}  // namespace omni::media_test
