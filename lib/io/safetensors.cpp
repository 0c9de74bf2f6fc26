// One safetensors file: header validation, memory mapping and (ranged) reads with dtype conversion.
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"
#include "io/pth_file.h"

namespace omni::io {

namespace {

// The official implementation refuses headers above 100 MB; a larger value means a corrupt or hostile file.
constexpr int64_t kMaxHeaderBytes = 100'000'000;

struct DTypeEntry {
  DType dtype;
  const char* name;
  int64_t size;
};

constexpr std::array<DTypeEntry, 12> kDTypes = {{
    {DType::F64, "F64", 8},
    {DType::F32, "F32", 4},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8},
    {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},
    {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
    {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::F8_E5M2, "F8_E5M2", 1},
}};

const DTypeEntry& entry(DType dtype) {
  for (const auto& e : kDTypes)
    if (e.dtype == dtype) return e;
  OMNI_FAIL("unknown safetensors dtype enum value ", static_cast<int>(dtype));
}

bool host_is_little_endian() {
  const uint16_t probe = 1;
  uint8_t first = 0;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

// float8 e4m3fn (no infinities; S.1111.111 is NaN; exponent bias 7, subnormals below exponent 1).
float f8_e4m3_to_float(uint8_t b) {
  const int sign = b >> 7;
  const int exp = (b >> 3) & 0xF;
  const int mant = b & 0x7;
  float v;
  if (exp == 0xF && mant == 0x7) {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant) / 8.0f, -6);
  } else {
    v = std::ldexp(1.0f + static_cast<float>(mant) / 8.0f, exp - 7);
  }
  return sign ? -v : v;
}

// float8 e5m2 is IEEE-like (bias 15, infinities and NaNs), i.e. the high byte of a float16.
float f8_e5m2_to_float(uint8_t b) {
  const int sign = b >> 7;
  const int exp = (b >> 2) & 0x1F;
  const int mant = b & 0x3;
  float v;
  if (exp == 0x1F) {
    v = mant == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant) / 4.0f, -14);
  } else {
    v = std::ldexp(1.0f + static_cast<float>(mant) / 4.0f, exp - 15);
  }
  return sign ? -v : v;
}

const std::array<float, 256>& f8_table(DType dtype) {
  static const std::array<float, 256> e4m3 = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = f8_e4m3_to_float(static_cast<uint8_t>(i));
    return t;
  }();
  static const std::array<float, 256> e5m2 = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = f8_e5m2_to_float(static_cast<uint8_t>(i));
    return t;
  }();
  return dtype == DType::F8_E4M3 ? e4m3 : e5m2;
}

// Reads a non-negative integer from a JSON value; false if it is not one.
bool json_non_negative_int(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    if (i < 0) return false;
    *out = i;
    return true;
  }
  return false;
}

}  // namespace

bool parse_dtype(const std::string& name, DType* out) {
  for (const auto& e : kDTypes) {
    if (name == e.name) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

const char* dtype_name(DType dtype) {
  return entry(dtype).name;
}
int64_t dtype_size(DType dtype) {
  return entry(dtype).size;
}

at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return at::kDouble;
    case DType::F32:
      return at::kFloat;
    case DType::F16:
      return at::kHalf;
    case DType::BF16:
      return at::kBFloat16;
    case DType::I64:
      return at::kLong;
    case DType::I32:
      return at::kInt;
    case DType::I16:
      return at::kShort;
    case DType::I8:
      return at::kChar;
    case DType::U8:
      return at::kByte;
    case DType::BOOL:
      return at::kBool;
    // float8 reads as float32 unless its own float8 type is asked for (TensorFile::read_range).
    case DType::F8_E4M3:
    case DType::F8_E5M2:
      return at::kFloat;
  }
  OMNI_FAIL("unknown safetensors dtype enum value ", static_cast<int>(dtype));
}

DType from_scalar_type(at::ScalarType type) {
  switch (type) {
    case at::kDouble:
      return DType::F64;
    case at::kFloat:
      return DType::F32;
    case at::kHalf:
      return DType::F16;
    case at::kBFloat16:
      return DType::BF16;
    case at::kLong:
      return DType::I64;
    case at::kInt:
      return DType::I32;
    case at::kShort:
      return DType::I16;
    case at::kChar:
      return DType::I8;
    case at::kByte:
      return DType::U8;
    case at::kBool:
      return DType::BOOL;
    case at::kFloat8_e4m3fn:
      return DType::F8_E4M3;
    case at::kFloat8_e5m2:
      return DType::F8_E5M2;
    default:
      break;
  }
  OMNI_FAIL("tensor type ", c10::toString(type), " cannot be stored in safetensors");
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

TensorFile::~TensorFile() {
  release();
}

void TensorFile::release() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), static_cast<size_t>(file_size_));
  if (fd_ >= 0) ::close(fd_);
  map_ = nullptr;
  fd_ = -1;
}

void TensorFile::release_pages() const {
  if (map_) ::madvise(const_cast<uint8_t*>(map_), static_cast<size_t>(file_size_), MADV_DONTNEED);
}

void TensorFile::map_file(const char* what) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  OMNI_CHECK_INPUT(fd_ >= 0, path_, ": cannot open ", what, ": ", std::strerror(errno));
  struct stat st {};
  OMNI_CHECK_INPUT(::fstat(fd_, &st) == 0, path_, ": cannot stat: ", std::strerror(errno));
  OMNI_CHECK_INPUT(S_ISREG(st.st_mode), path_, ": not a regular file (expected ", what, ")");
  file_size_ = static_cast<int64_t>(st.st_size);
  if (file_size_ == 0) return;  // nothing to map; the subclass reports the file as truncated
  void* m = ::mmap(nullptr, static_cast<size_t>(file_size_), PROT_READ, MAP_PRIVATE, fd_, 0);
  OMNI_CHECK_INPUT(m != MAP_FAILED, path_, ": cannot mmap: ", std::strerror(errno));
  map_ = static_cast<const uint8_t*>(m);
}

void TensorFile::add_tensor(TensorInfo info) {
  info.file = path_;
  OMNI_CHECK_INPUT(infos_.count(info.name) == 0, path_, ": tensor '", info.name, "' is stored twice");
  infos_.emplace(info.name, std::move(info));
}

void TensorFile::finish_tensors() {
  std::vector<const TensorInfo*> by_offset;
  for (const auto& kv : infos_) by_offset.push_back(&kv.second);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->data_begin != b->data_begin ? a->data_begin < b->data_begin : a->data_end < b->data_end;
  });
  names_.clear();
  for (const TensorInfo* t : by_offset) names_.push_back(t->name);
}

bool TensorFile::contains(const std::string& name) const {
  return infos_.count(name) != 0;
}

const TensorInfo& TensorFile::info(const std::string& name) const {
  auto it = infos_.find(name);
  OMNI_CHECK_INPUT(it != infos_.end(), path_, ": no tensor named '", name, "'");
  return it->second;
}

at::Tensor TensorFile::read(const std::string& name, at::ScalarType dtype) const {
  const TensorInfo& ti = info(name);
  return read_range(name, 0, ti.numel(), dtype).view(ti.shape);
}

at::Tensor TensorFile::read_range(const std::string& name, int64_t elem_begin, int64_t count,
                                  at::ScalarType dtype) const {
  const TensorInfo& ti = info(name);
  const int64_t numel = ti.numel();
  OMNI_CHECK(elem_begin >= 0 && count >= 0 && elem_begin <= numel && count <= numel - elem_begin, path_, ": tensor '",
             name, "': element range [", elem_begin, ", ", elem_begin + count, ") is outside its ", numel, " elements");
  // Stored bytes are little-endian; a big-endian host would need byte swapping, which we do not implement.
  OMNI_CHECK(host_is_little_endian(), "tensor file reading needs a little-endian host");
  const int64_t esize = dtype_size(ti.dtype);
  const uint8_t* src = map_ + data_offset_ + ti.data_begin + elem_begin * esize;
  const auto cpu = at::TensorOptions().device(at::kCPU);
  at::Tensor out;
  const bool float8 = ti.dtype == DType::F8_E4M3 || ti.dtype == DType::F8_E5M2;
  const at::ScalarType float8_type = ti.dtype == DType::F8_E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
  if (float8 && dtype == float8_type) {
    // The stored float8 bytes as they are (HSDP keeps fp8_scaled files' weights in float8).
    out = at::empty({count}, cpu.dtype(float8_type));
    if (count > 0) std::memcpy(out.data_ptr(), src, static_cast<size_t>(count));
  } else if (float8) {
    // Decoded by table to float32 (exact), the type every other request converts from.
    out = at::empty({count}, cpu.dtype(at::kFloat));
    const auto& table = f8_table(ti.dtype);
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < count; ++i) dst[i] = table[src[i]];
  } else if (ti.dtype == DType::BOOL) {
    // Any non-zero byte is true; copying raw bytes into a bool tensor could create invalid bool values.
    at::Tensor bytes = at::empty({count}, cpu.dtype(at::kByte));
    if (count > 0) std::memcpy(bytes.data_ptr(), src, static_cast<size_t>(count));
    out = bytes.ne(0);
  } else {
    out = at::empty({count}, cpu.dtype(to_scalar_type(ti.dtype)));
    if (count > 0) std::memcpy(out.data_ptr(), src, static_cast<size_t>(count * esize));
  }
  bytes_read_ += count * esize;
  if (dtype != at::ScalarType::Undefined && dtype != out.scalar_type()) out = out.to(dtype);
  return out;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : TensorFile(path) {
  try {
    map_file("a .safetensors file");
    const int64_t size = file_size();
    const uint8_t* bytes = map();
    OMNI_CHECK_INPUT(size >= 8, path, ": truncated safetensors file: ", size,
                     " bytes, shorter than the 8-byte header length");

    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian u64
    OMNI_CHECK_INPUT(header_len < static_cast<uint64_t>(kMaxHeaderBytes), path, ": header length ", header_len,
                     " bytes exceeds the 100 MB limit (corrupt or not a safetensors file)");
    OMNI_CHECK_INPUT(static_cast<int64_t>(header_len) <= size - 8, path, ": header length ", header_len,
                     " runs past the end of the file (", size, " bytes): truncated or corrupt file");
    set_data_offset(8 + static_cast<int64_t>(header_len));
    const int64_t data_size = size - data_offset();
    const char* hbegin = reinterpret_cast<const char*>(bytes + 8);
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(hbegin, hbegin + header_len);
    } catch (const nlohmann::json::exception& e) {
      OMNI_FAIL_INPUT(path, ": header is not valid JSON: ", json_error_text(e));
    }
    OMNI_CHECK_INPUT(header.is_object(), path, ": header is not a JSON object but ", header.type_name());

    std::vector<const TensorInfo*> by_offset;
    for (auto it = header.begin(); it != header.end(); ++it) {
      const std::string& name = it.key();
      const nlohmann::json& v = it.value();
      if (name == "__metadata__") {
        OMNI_CHECK_INPUT(v.is_object(), path, ": \"__metadata__\" must be a map of strings, found ", v.type_name());
        for (auto m_it = v.begin(); m_it != v.end(); ++m_it) {
          OMNI_CHECK_INPUT(m_it.value().is_string(), path, ": \"__metadata__\" entry '", m_it.key(),
                           "' must be a string, found ", m_it.value().type_name());
          metadata_[m_it.key()] = m_it.value().get<std::string>();
        }
        continue;
      }
      OMNI_CHECK_INPUT(v.is_object(), path, ": tensor '", name, "': entry must be a JSON object, found ",
                       v.type_name());
      TensorInfo info;
      info.name = name;
      info.file = path;

      auto dt = v.find("dtype");
      OMNI_CHECK_INPUT(dt != v.end() && dt->is_string(), path, ": tensor '", name, "': missing string \"dtype\"");
      OMNI_CHECK_INPUT(parse_dtype(dt->get<std::string>(), &info.dtype), path, ": tensor '", name, "': unknown dtype '",
                       dt->get<std::string>(), "' (known: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL F8_E4M3 F8_E5M2)");

      auto sh = v.find("shape");
      OMNI_CHECK_INPUT(sh != v.end() && sh->is_array(), path, ": tensor '", name, "': missing list \"shape\"");
      // numel with an overflow guard: a hostile shape must not wrap around to a small byte count.
      int64_t numel = 1;
      bool overflow = false;
      for (const auto& d : *sh) {
        int64_t dim = 0;
        OMNI_CHECK_INPUT(json_non_negative_int(d, &dim), path, ": tensor '", name,
                         "': shape must be a list of non-negative integers, found ", sh->dump());
        info.shape.push_back(dim);
        if (dim != 0 && numel > std::numeric_limits<int64_t>::max() / 8 / dim) overflow = true;
        if (!overflow) numel *= dim;  // past the guard the product is never formed (it would overflow)
      }
      bool has_zero = std::find(info.shape.begin(), info.shape.end(), 0) != info.shape.end();
      OMNI_CHECK_INPUT(!overflow || has_zero, path, ": tensor '", name, "': shape ", sh->dump(), " is too large");
      if (has_zero) numel = 0;

      auto off = v.find("data_offsets");
      OMNI_CHECK_INPUT(off != v.end() && off->is_array() && off->size() == 2 &&
                           json_non_negative_int((*off)[0], &info.data_begin) &&
                           json_non_negative_int((*off)[1], &info.data_end),
                       path, ": tensor '", name, "': \"data_offsets\" must be [begin, end] of non-negative integers");
      OMNI_CHECK_INPUT(info.data_begin <= info.data_end, path, ": tensor '", name, "': data_offsets [", info.data_begin,
                       ", ", info.data_end, "] have begin > end");
      OMNI_CHECK_INPUT(info.data_end <= data_size, path, ": tensor '", name, "': data_offsets [", info.data_begin, ", ",
                       info.data_end, "] run past the end of the data section (", data_size,
                       " bytes): truncated or corrupt file");
      const int64_t expected = numel * dtype_size(info.dtype);
      OMNI_CHECK_INPUT(info.data_end - info.data_begin == expected, path, ": tensor '", name, "': shape ", sh->dump(),
                       " x ", dtype_name(info.dtype), " needs ", expected, " bytes but data_offsets [", info.data_begin,
                       ", ", info.data_end, "] span ", info.data_end - info.data_begin);
      add_tensor(std::move(info));
    }
    finish_tensors();
    // No two byte ranges overlap (each tensor owns its bytes). Empty tensors occupy none and overlap nothing.
    const TensorInfo* prev = nullptr;
    for (const auto& n : names()) {
      const TensorInfo* t = &this->info(n);
      if (t->data_begin == t->data_end) continue;
      OMNI_CHECK_INPUT(prev == nullptr || t->data_begin >= prev->data_end, path, ": tensors '", prev ? prev->name : "",
                       "' [", prev ? prev->data_begin : 0, ", ", prev ? prev->data_end : 0, ") and '", t->name, "' [",
                       t->data_begin, ", ", t->data_end, ") have overlapping data_offsets");
      prev = t;
    }
  } catch (...) {
    release();
    throw;
  }
}

std::shared_ptr<TensorFile> open_tensor_file(const std::string& path) {
  auto ends = [&](const char* suffix) {
    const std::string s(suffix);
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".pth") || ends(".pt") || ends(".bin") || ends(".ckpt")) return std::make_shared<PthFile>(path);
  return std::make_shared<SafetensorsFile>(path);
}

}  // namespace omni::io
