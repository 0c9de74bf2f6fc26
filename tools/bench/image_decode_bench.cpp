// io::read_image on the files named on the command line: the fastest of RUNS decodes (after one warm-up), in
// milliseconds, one line per file: "image_decode FILE HxW: best X ms, median Y ms over N runs". The whole read
// is timed (file read, decode, RGB conversion, EXIF transpose), as a run pays it.
//   image_decode_bench [--runs N] FILE...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/image_reader.h"

int main(int argc, char** argv) {
  int runs = 10;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: image_decode_bench [--runs N] FILE...\n");
    return 2;
  }
  try {
    for (const std::string& f : files) {
      at::Tensor img = omni::io::read_image(f);  // warm-up: page cache, allocator
      std::vector<double> ms;
      for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        img = omni::io::read_image(f);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      std::printf("image_decode %s %lldx%lld: best %.1f ms, median %.1f ms over %d runs\n", f.c_str(),
                  static_cast<long long>(img.size(0)), static_cast<long long>(img.size(1)), ms.front(),
                  ms[ms.size() / 2], runs);
    }
  } catch (const omni::Error& e) {
    std::fprintf(stderr, "image_decode_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
