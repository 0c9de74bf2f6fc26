// SafetensorsFile: round trips in every dtype, ranged reads, dtype conversion, float8 decoding, and every kind of
// malformed file giving its own input error without crashing.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "io_test_util.h"

namespace omni::io {
namespace {

using testing::expect_input_error;
using testing::safetensors_bytes;
using testing::TempDir;
using testing::write_file;

// One tensor of each storable type, with varied shapes (scalar, empty, 1-D .. 4-D).
std::vector<std::pair<std::string, at::Tensor>> all_dtype_tensors() {
  at::manual_seed(7);
  std::vector<std::pair<std::string, at::Tensor>> t;
  t.emplace_back("f64", at::randn({3, 5}, at::kDouble));
  t.emplace_back("f32", at::randn({2, 3, 4, 5}));
  t.emplace_back("f16", at::randn({37}).to(at::kHalf));
  t.emplace_back("bf16", at::randn({6, 7}).to(at::kBFloat16));
  t.emplace_back("i64", at::randint(-1000000000000LL, 1000000000000LL, {11}, at::kLong));
  t.emplace_back("i32", at::randint(-100000, 100000, {4, 9}, at::kInt));
  t.emplace_back("i16", at::randint(-30000, 30000, {13}, at::kShort));
  t.emplace_back("i8", at::randint(-128, 128, {3, 3}, at::kChar));
  t.emplace_back("u8", at::randint(0, 256, {2, 17}, at::kByte));
  t.emplace_back("bool", at::randint(0, 2, {19}, at::kByte).to(at::kBool));
  t.emplace_back("scalar", at::scalar_tensor(3.5, at::kFloat));
  t.emplace_back("empty", at::zeros({0, 4}, at::kFloat));
  // A non-contiguous view: the writer must store its logical row-major order.
  t.emplace_back("transposed", at::arange(12, at::kFloat).view({3, 4}).t());
  return t;
}

TEST(Safetensors, RoundTripEveryDtype) {
  TempDir dir;
  const std::string path = dir / "all.safetensors";
  auto tensors = all_dtype_tensors();
  write_safetensors(path, tensors, {{"format", "pt"}, {"note", "round trip"}});

  // Header padded like the official writer: the data section starts 8-byte aligned.
  const std::string raw = testing::read_file(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(raw[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(raw[8 + n - 1] == ' ' || raw[8 + n - 1] == '}', true);

  SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("note"), "round trip");
  ASSERT_EQ(f.names().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    EXPECT_EQ(f.names()[i], name) << "names() must follow data order";
    at::Tensor r = f.read(name);
    EXPECT_EQ(r.scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(r.sizes(), t.sizes()) << name;
    EXPECT_TRUE(at::equal(r, t.contiguous())) << name;
    EXPECT_EQ(f.info(name).dtype, from_scalar_type(t.scalar_type()));
  }
  EXPECT_EQ(f.info("f16").file, path);
  EXPECT_EQ(f.info("f16").data_end - f.info("f16").data_begin, 37 * 2);
}

TEST(Safetensors, ReadRangeEqualsSliceOfFullRead) {
  TempDir dir;
  const std::string path = dir / "all.safetensors";
  auto tensors = all_dtype_tensors();
  write_safetensors(path, tensors);
  SafetensorsFile f(path);
  int64_t expected_bytes = 0;  // what the full reads and every range read together must have copied
  for (const auto& [name, t] : tensors) {
    at::Tensor full = f.read(name).reshape({-1});
    expected_bytes += t.numel() * t.element_size();
    // Independently of the file: the full read equals what was written.
    EXPECT_TRUE(at::equal(full, t.reshape({-1}))) << name;
    const int64_t numel = full.numel();
    const int64_t esize = t.element_size();
    for (int64_t b = 0; b <= numel; b += std::max<int64_t>(1, numel / 5)) {
      for (int64_t c : {int64_t(0), int64_t(1), int64_t(3), numel - b}) {
        if (c < 0 || b + c > numel) continue;
        const int64_t before = f.bytes_read();
        at::Tensor r = f.read_range(name, b, c);
        EXPECT_EQ(f.bytes_read() - before, c * esize) << name << " only the covered bytes are copied";
        expected_bytes += c * esize;
        ASSERT_EQ(r.dim(), 1);
        EXPECT_EQ(r.scalar_type(), t.scalar_type());
        EXPECT_TRUE(at::equal(r, full.narrow(0, b, c))) << name << " [" << b << ", " << b + c << ")";
      }
    }
  }
  EXPECT_EQ(f.bytes_read(), expected_bytes) << "the file's byte counter over all reads";
  // Out-of-range element ranges are a caller bug (exit 1), not a crash.
  testing::expect_error([&] { f.read_range("f16", 30, 8); }, ExitCode::kFailure, {"f16", "outside"});
  testing::expect_error([&] { f.read_range("f16", -1, 2); }, ExitCode::kFailure, {"f16"});
  expect_input_error([&] { f.read("nope"); }, {path, "nope"});
}

TEST(Safetensors, ConvertsOnRead) {
  TempDir dir;
  const std::string path = dir / "conv.safetensors";
  at::Tensor h = at::randn({64}).to(at::kHalf);
  at::Tensor b = at::randn({64}).to(at::kBFloat16);
  at::Tensor i = at::arange(-5, 5, at::kInt);
  write_safetensors(path, {{"h", h}, {"b", b}, {"i", i}});
  SafetensorsFile f(path);
  // Conversion of exactly representable values is exact: compare with torch's own conversion.
  EXPECT_TRUE(at::equal(f.read("h", at::kFloat), h.to(at::kFloat)));
  EXPECT_TRUE(at::equal(f.read("b", at::kFloat), b.to(at::kFloat)));
  EXPECT_TRUE(at::equal(f.read("b", at::kDouble), b.to(at::kDouble)));
  EXPECT_TRUE(at::equal(f.read("i", at::kFloat), at::arange(-5, 5, at::kFloat)));
  EXPECT_TRUE(at::equal(f.read_range("h", 10, 20, at::kFloat), h.to(at::kFloat).narrow(0, 10, 20)));
  EXPECT_EQ(f.read("h", at::kBFloat16).scalar_type(), at::kBFloat16);
}

TEST(Safetensors, Float8DecodedByHand) {
  TempDir dir;
  const std::string path = dir / "f8.safetensors";
  std::string data;
  for (int v = 0; v < 256; ++v) data.push_back(static_cast<char>(v));  // e4m3: every byte value
  for (int v = 0; v < 256; ++v) data.push_back(static_cast<char>(v));  // e5m2: every byte value
  const std::string header = R"({"a":{"dtype":"F8_E4M3","shape":[256],"data_offsets":[0,256]},)"
                             R"("b":{"dtype":"F8_E5M2","shape":[16,16],"data_offsets":[256,512]}})";
  write_file(path, safetensors_bytes(header, data));
  SafetensorsFile f(path);
  at::Tensor a = f.read("a");
  ASSERT_EQ(a.scalar_type(), at::kFloat);
  const float* av = a.data_ptr<float>();
  // Known e4m3fn values (OCP FP8 spec): bias 7, max 448, NaN only at S.1111.111, subnormal step 2^-9.
  EXPECT_EQ(av[0x00], 0.0f);
  EXPECT_EQ(av[0x38], 1.0f);
  EXPECT_EQ(av[0x40], 2.0f);
  EXPECT_EQ(av[0xB8], -1.0f);
  EXPECT_EQ(av[0x7E], 448.0f);
  EXPECT_EQ(av[0x01], std::ldexp(1.0f, -9));
  EXPECT_EQ(av[0x08], std::ldexp(1.0f, -6));
  EXPECT_EQ(av[0x3C], 1.5f);
  EXPECT_TRUE(std::isnan(av[0x7F]));
  EXPECT_TRUE(std::isnan(av[0xFF]));

  // e5m2 is the top byte of an IEEE half: compare all 256 values with torch's half -> float conversion.
  at::Tensor b = f.read("b").reshape({-1});
  EXPECT_EQ(f.read("b").sizes(), (std::vector<int64_t>{16, 16}));
  at::Tensor as_half = (at::arange(256, at::kShort) * 256).view(at::kHalf).to(at::kFloat);
  EXPECT_TRUE(at::allclose(b, as_half, 0.0, 0.0, /*equal_nan=*/true));
  EXPECT_TRUE(std::isinf(b.data_ptr<float>()[0x7C]));

  EXPECT_TRUE(at::equal(f.read_range("a", 0x38, 9, at::kDouble), a.narrow(0, 0x38, 9).to(at::kDouble)));
  EXPECT_EQ(f.bytes_read(), 256 + 256 + 256 + 9);

  // Asked for its own float8 type, a float8 tensor is its stored bytes (HSDP holds fp8_scaled weights so);
  // LibTorch's own float8 -> float32 conversion of them agrees with the table above.
  at::Tensor raw = f.read_range("a", 16, 200, at::kFloat8_e4m3fn);
  ASSERT_EQ(raw.scalar_type(), at::kFloat8_e4m3fn);
  ASSERT_EQ(raw.numel(), 200);
  const auto* bytes = reinterpret_cast<const uint8_t*>(raw.const_data_ptr());
  for (int i = 0; i < 200; ++i) EXPECT_EQ(bytes[i], 16 + i);
  EXPECT_TRUE(at::allclose(raw.to(at::kFloat), a.narrow(0, 16, 200), 0.0, 0.0, /*equal_nan=*/true));
  at::Tensor raw_b = f.read("b", at::kFloat8_e5m2);
  EXPECT_EQ(raw_b.scalar_type(), at::kFloat8_e5m2);
  EXPECT_TRUE(at::allclose(raw_b.to(at::kFloat).reshape({-1}), b, 0.0, 0.0, /*equal_nan=*/true));
}

// --- malformed files -------------------------------------------------------------------------------------------

struct Malformed {
  const char* what;
  std::string bytes;
  std::vector<std::string> message;
};

std::vector<Malformed> malformed_cases() {
  const std::string data(16, '\0');
  auto ok_entry = [](const std::string& name, const std::string& rest) { return "\"" + name + "\":{" + rest + "}"; };
  std::vector<Malformed> c;
  c.push_back({"empty file", "", {"truncated", "0 bytes"}});
  c.push_back({"5-byte file", "abcde", {"truncated", "5 bytes"}});
  c.push_back({"header length past the end",
               safetensors_bytes(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data, 4096),
               {"header length 4096", "past the end of the file"}});
  c.push_back({"header length over 100 MB", safetensors_bytes("{}", "", 200'000'000), {"100 MB"}});
  c.push_back({"header length ~2^64", safetensors_bytes("{}", "", std::numeric_limits<int64_t>::max()), {"100 MB"}});
  c.push_back({"bad JSON", safetensors_bytes(R"({"t":{"dtype":"F32","shape":[4],)", data), {"not valid JSON"}});
  c.push_back({"header not an object", safetensors_bytes("[1,2]", data), {"not a JSON object"}});
  c.push_back({"entry not an object", safetensors_bytes(R"({"t":[1]})", data), {"'t'", "JSON object"}});
  c.push_back({"unknown dtype",
               safetensors_bytes("{" + ok_entry("w", R"("dtype":"F31","shape":[4],"data_offsets":[0,16])") + "}", data),
               {"'w'", "unknown dtype 'F31'"}});
  c.push_back({"missing dtype",
               safetensors_bytes("{" + ok_entry("w", R"("shape":[4],"data_offsets":[0,16])") + "}", data),
               {"'w'", "dtype"}});
  c.push_back(
      {"negative shape",
       safetensors_bytes("{" + ok_entry("w", R"("dtype":"F32","shape":[-4],"data_offsets":[0,16])") + "}", data),
       {"'w'", "non-negative integers"}});
  c.push_back(
      {"fractional shape",
       safetensors_bytes("{" + ok_entry("w", R"("dtype":"F32","shape":[2.5],"data_offsets":[0,16])") + "}", data),
       {"'w'", "non-negative integers"}});
  c.push_back({"shape/size mismatch",
               safetensors_bytes("{" + ok_entry("w", R"("dtype":"F32","shape":[3],"data_offsets":[0,16])") + "}", data),
               {"'w'", "needs 12 bytes", "span 16"}});
  c.push_back({"huge shape overflowing",
               safetensors_bytes("{" +
                                     ok_entry("w", R"("dtype":"F32","shape":[4294967296,4294967296,16],)"
                                                   R"("data_offsets":[0,16])") +
                                     "}",
                                 data),
               {"'w'", "too large"}});
  c.push_back({"offsets past the data section",
               safetensors_bytes("{" + ok_entry("w", R"("dtype":"F32","shape":[4],"data_offsets":[8,24])") + "}", data),
               {"'w'", "past the end of the data section", "16 bytes"}});
  c.push_back({"begin > end",
               safetensors_bytes("{" + ok_entry("w", R"("dtype":"U8","shape":[0],"data_offsets":[8,4])") + "}", data),
               {"'w'", "begin > end"}});
  c.push_back({"offsets not a pair",
               safetensors_bytes("{" + ok_entry("w", R"("dtype":"F32","shape":[4],"data_offsets":[0])") + "}", data),
               {"'w'", "data_offsets"}});
  c.push_back({"overlapping offsets",
               safetensors_bytes("{" + ok_entry("a", R"("dtype":"F32","shape":[3],"data_offsets":[0,12])") + "," +
                                     ok_entry("b", R"("dtype":"F32","shape":[2],"data_offsets":[8,16])") + "}",
                                 data),
               {"'a'", "'b'", "overlapping"}});
  c.push_back({"metadata not strings",
               safetensors_bytes(R"({"__metadata__":{"format":1}})", data),
               {"__metadata__", "format"}});
  return c;
}

TEST(Safetensors, MalformedFilesGiveSpecificErrors) {
  TempDir dir;
  int i = 0;
  for (const auto& m : malformed_cases()) {
    SCOPED_TRACE(m.what);
    const std::string path = dir / ("bad" + std::to_string(i++) + ".safetensors");
    write_file(path, m.bytes);
    try {
      SafetensorsFile f(path);
      ADD_FAILURE() << "no error for " << m.what;
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 3) << e.what();
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      for (const auto& p : m.message) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    }
  }
  expect_input_error([&] { SafetensorsFile f(dir / "missing.safetensors"); }, {"missing.safetensors", "cannot open"});
  expect_input_error([&] { SafetensorsFile f(dir.path()); }, {dir.path(), "not a regular file"});
}

// Every prefix of a valid file is rejected with an input error (truncated downloads), never a crash.
TEST(Safetensors, EveryTruncationIsAnInputError) {
  TempDir dir;
  const std::string good = dir / "good.safetensors";
  write_safetensors(good, {{"a", at::randn({5})}, {"b", at::randn({3}).to(at::kHalf)}});
  const std::string bytes = testing::read_file(good);
  SafetensorsFile ok(good);  // the full file is fine
  for (size_t len = 0; len < bytes.size(); ++len) {
    const std::string path = dir / "cut.safetensors";
    write_file(path, bytes.substr(0, len));
    try {
      SafetensorsFile f(path);
      ADD_FAILURE() << "truncation to " << len << " of " << bytes.size() << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 3) << len << ": " << e.what();
    }
  }
}

// Random byte corruption of the header: either a valid file or an input error, never a crash or another exception.
TEST(Safetensors, CorruptHeadersNeverCrash) {
  TempDir dir;
  const std::string good = dir / "good.safetensors";
  write_safetensors(good, {{"a", at::randn({5})}, {"bb", at::randn({3, 2}).to(at::kBFloat16)}});
  const std::string bytes = testing::read_file(good);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  std::mt19937 rng(1234);
  int accepted = 0, rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string b = bytes;
    const int flips = 1 + trial % 3;
    for (int k = 0; k < flips; ++k) b[8 + rng() % n] = static_cast<char>(rng() % 256);
    const std::string path = dir / "fuzz.safetensors";
    write_file(path, b);
    try {
      SafetensorsFile f(path);
      for (const auto& name : f.names()) f.read(name, at::kFloat);  // whatever it accepted must be readable
      ++accepted;
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 3) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  std::cout << "corrupt headers: " << accepted << " accepted, " << rejected << " rejected\n";
}

TEST(Safetensors, DtypeTables) {
  for (const char* n : {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"}) {
    DType d;
    ASSERT_TRUE(parse_dtype(n, &d)) << n;
    EXPECT_STREQ(dtype_name(d), n);
  }
  DType d;
  EXPECT_FALSE(parse_dtype("f32", &d));
  EXPECT_FALSE(parse_dtype("F8_E4M3FN", &d));
  EXPECT_EQ(dtype_size(DType::BF16), 2);
  EXPECT_EQ(dtype_size(DType::I64), 8);
  EXPECT_EQ(dtype_size(DType::F8_E5M2), 1);
  EXPECT_EQ(to_scalar_type(DType::BF16), at::kBFloat16);
  EXPECT_EQ(from_scalar_type(at::kBool), DType::BOOL);
  testing::expect_error([] { from_scalar_type(at::kComplexFloat); }, ExitCode::kFailure, {"cannot be stored"});
}

}  // namespace
}  // namespace omni::io
