// Writing safetensors files (tensor dumps, test and tiny-model checkpoints), single or sharded with an index.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/files.h"
#include "io/safetensors.h"

namespace omni::io {

namespace {

bool host_is_little_endian() {
  const uint16_t probe = 1;
  uint8_t first = 0;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  OMNI_CHECK(host_is_little_endian(), "safetensors writing needs a little-endian host");
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> host;  // contiguous CPU copies, kept alive until written
  host.reserve(tensors.size());
  std::set<std::string> seen;
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    OMNI_CHECK(name != "__metadata__", path, ": '__metadata__' is reserved and cannot name a tensor");
    OMNI_CHECK(seen.insert(name).second, path, ": tensor '", name, "' given twice");
    OMNI_CHECK(t.defined(), path, ": tensor '", name, "' is undefined");
    const DType dtype = from_scalar_type(t.scalar_type());
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    const int64_t bytes = c.numel() * dtype_size(dtype);
    header[name] = {
        {"dtype", dtype_name(dtype)}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    host.push_back(std::move(c));
  }
  std::string text = header.dump();
  // Like the official writer: pad the header with spaces so that the data section starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t len_bytes[8];
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<uint8_t>(len >> (8 * i));  // little-endian u64

  std::vector<std::pair<const void*, size_t>> chunks;
  chunks.emplace_back(len_bytes, 8);
  chunks.emplace_back(text.data(), text.size());
  for (const auto& c : host) chunks.emplace_back(c.data_ptr(), static_cast<size_t>(c.numel() * c.element_size()));
  write_file_atomically(path, chunks, /*overwrite=*/true);  // callers check the path up front
}

std::string write_sharded_safetensors(const std::string& dir, const std::string& stem,
                                      const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                      int64_t max_shard_bytes) {
  OMNI_CHECK(max_shard_bytes > 0, "write_sharded_safetensors: max_shard_bytes must be positive");
  // Greedy packing in the given order: a new shard starts when the next tensor would overflow the current one.
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> shards(1);
  int64_t current = 0;
  int64_t total = 0;
  for (const auto& nt : tensors) {
    const int64_t bytes = nt.second.numel() * nt.second.element_size();
    if (!shards.back().empty() && current + bytes > max_shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(nt);
    current += bytes;
    total += bytes;
  }
  const size_t n = shards.size();
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < n; ++i) {
    std::ostringstream name;
    name << stem << "-" << std::setw(5) << std::setfill('0') << (i + 1) << "-of-" << std::setw(5) << std::setfill('0')
         << n << ".safetensors";
    write_safetensors(dir + "/" + name.str(), shards[i]);
    for (const auto& nt : shards[i]) weight_map[nt.first] = name.str();
  }
  nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  const std::string text = index.dump(2) + "\n";
  const std::string index_path = dir + "/" + stem + ".safetensors.index.json";
  write_file_atomically(index_path, text, /*overwrite=*/true);
  return index_path;
}

}  // namespace omni::io
