// SHA-256 (FIPS 180-4) of a file, as `sha256sum` prints it: what the sidecar and the MP4 metadata record of
// every LoRA file, so that a video names the exact adapter bytes it was made with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace omni {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  std::string hex_digest();  // 64 lowercase hex digits; the object is spent afterwards

 private:
  void block(const uint8_t* p);  // one 64-byte block into state_
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// The digest of a whole file, read in 1 MiB pieces; an input error (exit 3) naming it when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace omni
