// Checkpoint: sharded checkpoints through an index, component folders, index consistency errors, read_flat across
// tensor and file boundaries, and the fixture checkpoints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace omni::io {
namespace {

using testing::expect_input_error;
using testing::TempDir;

// Tensors of mixed stored types and sizes; 1-element and empty ones exercise the boundary arithmetic.
std::vector<std::pair<std::string, at::Tensor>> model_tensors() {
  at::manual_seed(11);
  return {
      {"embed.weight", at::randn({7, 5})},
      {"blocks.0.norm.weight", at::randn({5}).to(at::kHalf)},
      {"blocks.0.attn.q.weight", at::randn({5, 5}).to(at::kBFloat16)},
      {"blocks.0.attn.q.bias", at::randn({1})},
      {"blocks.0.empty", at::zeros({0})},
      {"blocks.1.attn.q.weight", at::randn({3, 5, 2}, at::kDouble)},
      {"head.weight", at::randn({9, 4}).to(at::kHalf)},
      {"head.bias", at::randn({9})},
  };
}

// Float8 weights as fp8_scaled files store them (written by our writer, whose float8 bytes are LibTorch's): one
// scale for the tensor (`scale_weight`, 0-dim), one per row (`weight_scale`), none, and a float32 weight. Read as
// float32 they are byte x scale; float8_row_scales gives each one's scale per row (undefined for the float32 one);
// read as float8 they are the stored bytes; a float32 weight cannot be read as stored float8.
TEST(Checkpoint, Float8RowScalesAndStoredBytes) {
  TempDir dir;
  at::manual_seed(5);
  const at::Tensor q1 = (at::randn({4, 6}) * 50).to(at::kFloat8_e4m3fn);
  const at::Tensor q2 = (at::randn({3, 6}) * 50).to(at::kFloat8_e4m3fn);
  const at::Tensor q3 = (at::randn({2, 6}) * 50).to(at::kFloat8_e4m3fn);
  const at::Tensor s2 = at::tensor({0.5f, 0.25f, 3.0f});
  const std::string path = dir / "fp8.safetensors";
  write_safetensors(path, {{"a.weight", q1},
                           {"a.scale_weight", at::scalar_tensor(0.125, at::kFloat)},
                           {"b.weight", q2},
                           {"b.weight_scale", s2},
                           {"c.weight", q3},
                           {"d.weight", at::randn({2, 2})},
                           {"scaled_fp8", at::empty({0}, at::kFloat8_e4m3fn)}});
  const Checkpoint ck = Checkpoint::open(path);
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"a.weight", "b.weight", "c.weight", "d.weight"}));
  EXPECT_TRUE(at::equal(ck.float8_row_scales("a.weight"), at::full({4}, 0.125f)));
  EXPECT_TRUE(at::equal(ck.float8_row_scales("b.weight"), s2));
  EXPECT_TRUE(at::equal(ck.float8_row_scales("c.weight"), at::ones({2})));
  EXPECT_FALSE(ck.float8_row_scales("d.weight").defined());
  EXPECT_TRUE(at::equal(ck.read("a.weight", at::kFloat), q1.to(at::kFloat) * 0.125f));
  EXPECT_TRUE(at::equal(ck.read("b.weight", at::kFloat), q2.to(at::kFloat) * s2.unsqueeze(1)));
  for (const auto& [name, q] : {std::pair{"a.weight", q1}, std::pair{"b.weight", q2}, std::pair{"c.weight", q3}}) {
    const at::Tensor raw = ck.read_range(name, 1, q.numel() - 2, at::kFloat8_e4m3fn);
    ASSERT_EQ(raw.scalar_type(), at::kFloat8_e4m3fn) << name;
    EXPECT_TRUE(at::equal(raw.view(at::kByte), q.reshape({-1}).narrow(0, 1, q.numel() - 2).view(at::kByte))) << name;
  }
  // Across tensor boundaries, as HSDP reads a run of stored weights: a's tail, then b's head.
  const at::Tensor flat = ck.read_flat({"a.weight", "b.weight"}, 20, 10, at::kFloat8_e4m3fn);
  const at::Tensor want =
      at::cat({q1.reshape({-1}).view(at::kByte), q2.reshape({-1}).view(at::kByte)}).narrow(0, 20, 10);
  EXPECT_TRUE(at::equal(flat.view(at::kByte), want));
  EXPECT_THROW(ck.read_range("d.weight", 0, 4, at::kFloat8_e4m3fn), std::exception);
}

// A NameMap's layout hooks, as a CLIP in Wan's or open_clip's names needs them: a fused [3R, C] tensor listed as
// three [R, C] blocks (each reading only its rows, float8 per-row scales following them), a [1, 1, D] tensor
// listed as [D], another model's tensors skipped, and a fused tensor whose rows do not split refused by name.
TEST(Checkpoint, NameMapSplitsSkipsAndSqueezes) {
  TempDir dir;
  at::manual_seed(9);
  const at::Tensor qkv = at::randn({6, 4});
  const at::Tensor bias = at::randn({6}).to(at::kHalf);
  const at::Tensor cls = at::randn({1, 1, 4});
  const at::Tensor q8 = (at::randn({6, 4}) * 50).to(at::kFloat8_e4m3fn);
  const at::Tensor s8 = at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  const std::string path = dir / "clip.safetensors";
  write_safetensors(path, {{"qkv.weight", qkv},
                           {"qkv.bias", bias},
                           {"f8.weight", q8},
                           {"f8.weight_scale", s8},
                           {"cls", cls},
                           {"text.embed", at::randn({3, 2})}});
  NameMap m;
  m.table = "a test table";
  m.rename = [](const std::string& n) -> std::optional<std::string> {
    if (n == "cls") return "class_embedding";
    return std::nullopt;
  };
  m.split = [](const std::string& n) -> std::vector<std::string> {
    if (n.rfind("qkv.", 0) == 0) return {"q." + n.substr(4), "k." + n.substr(4), "v." + n.substr(4)};
    if (n == "f8.weight") return {"f8_a.weight", "f8_b.weight"};
    return {};
  };
  m.skip = [](const std::string& n) { return n.rfind("text.", 0) == 0; };
  m.squeeze_leading = [](const std::string& n) { return n == "class_embedding"; };
  const Checkpoint ck = Checkpoint::open(path, &m);
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"class_embedding", "f8_a.weight", "f8_b.weight", "k.bias", "k.weight",
                                                  "q.bias", "q.weight", "v.bias", "v.weight"}));
  const char* parts[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string p = parts[i];
    EXPECT_EQ(ck.info(p + ".weight").shape, (std::vector<int64_t>{2, 4})) << p;
    EXPECT_TRUE(at::equal(ck.read(p + ".weight"), qkv.narrow(0, 2 * i, 2))) << p;
    EXPECT_TRUE(at::equal(ck.read(p + ".bias"), bias.narrow(0, 2 * i, 2))) << p;
    EXPECT_TRUE(at::equal(ck.read_range(p + ".weight", 3, 4), qkv.narrow(0, 2 * i, 2).reshape({-1}).narrow(0, 3, 4)));
  }
  // HSDP reads runs across our tensors: k's tail then v's head are rows 3 and 4 of the stored tensor.
  EXPECT_TRUE(at::equal(ck.read_flat({"k.weight", "v.weight"}, 4, 8, at::kFloat), qkv.narrow(0, 3, 2).reshape({-1})));
  EXPECT_TRUE(at::equal(ck.float8_row_scales("f8_b.weight"), s8.narrow(0, 3, 3)));
  EXPECT_TRUE(at::equal(ck.read("f8_b.weight", at::kFloat),
                        q8.narrow(0, 3, 3).to(at::kFloat) * s8.narrow(0, 3, 3).unsqueeze(1)));
  EXPECT_EQ(ck.info("class_embedding").shape, (std::vector<int64_t>{4}));
  EXPECT_TRUE(at::equal(ck.read("class_embedding"), cls.reshape({4})));
  EXPECT_EQ(ck.info("q.weight").data_end - ck.info("q.weight").data_begin, 2 * 4 * 4);

  const std::string odd = dir / "odd.safetensors";
  write_safetensors(odd, {{"qkv.weight", at::randn({4, 4})}});
  expect_input_error([&] { Checkpoint::open(odd, &m); }, {"odd.safetensors", "qkv.weight", "3 equal blocks"});
  const std::string stray = dir / "stray.safetensors";
  write_safetensors(stray, {{"other.weight", at::randn({2})}});
  expect_input_error([&] { Checkpoint::open(stray, &m); }, {"stray.safetensors", "other.weight", "a test table"});
}

// Sharded at 100 bytes: several shards, tensors never split (as Hugging Face's writer does).
std::string write_sharded(const TempDir& dir) {
  return write_sharded_safetensors(dir.path(), "diffusion_pytorch_model", model_tensors(), 100);
}

TEST(Checkpoint, ShardedRoundTrip) {
  TempDir dir;
  const std::string index_path = write_sharded(dir);
  EXPECT_EQ(index_path, dir / "diffusion_pytorch_model.safetensors.index.json");
  const nlohmann::json index = read_json(index_path);
  std::set<std::string> shard_files;
  for (auto& kv : index["weight_map"].items()) shard_files.insert(kv.value().get<std::string>());
  EXPECT_GE(shard_files.size(), 4u) << "the test needs tensors spread over several files";
  EXPECT_EQ(*shard_files.begin(),
            "diffusion_pytorch_model-00001-of-0000" + std::to_string(shard_files.size()) + ".safetensors");

  int64_t total = 0;
  for (const auto& [n, t] : model_tensors()) total += t.numel() * t.element_size();
  EXPECT_EQ(index["metadata"]["total_size"].get<int64_t>(), total);

  // The same checkpoint through the index file and through its component folder.
  for (const std::string& path : {index_path, dir.path()}) {
    Checkpoint ck = Checkpoint::open(path);
    EXPECT_EQ(ck.total_bytes(), total);
    std::vector<std::string> expected_names;
    for (const auto& [n, t] : model_tensors()) expected_names.push_back(n);
    std::sort(expected_names.begin(), expected_names.end());
    EXPECT_EQ(ck.names(), expected_names);
    for (const auto& [n, t] : model_tensors()) {
      EXPECT_TRUE(ck.contains(n));
      EXPECT_TRUE(at::equal(ck.read(n), t)) << n;
      EXPECT_EQ(ck.info(n).file, dir / index["weight_map"][n].get<std::string>());
      EXPECT_TRUE(at::equal(ck.read_range(n, 0, t.numel() / 2, at::kFloat),
                            t.reshape({-1}).narrow(0, 0, t.numel() / 2).to(at::kFloat)));
    }
    EXPECT_FALSE(ck.contains("nope"));
    expect_input_error([&] { ck.read("nope"); }, {"nope"});
  }
}

TEST(Checkpoint, SingleFileAndComponentFolders) {
  TempDir dir;
  testing::make_dirs(dir / "te");
  write_safetensors(dir / "te/model.safetensors", {{"x", at::ones({2})}});
  Checkpoint a = Checkpoint::open(dir / "te");
  EXPECT_EQ(a.names(), std::vector<std::string>{"x"});
  Checkpoint b = Checkpoint::open(dir / "te/model.safetensors");
  EXPECT_TRUE(at::equal(b.read("x"), at::ones({2})));

  testing::make_dirs(dir / "empty");
  expect_input_error([&] { Checkpoint::open(dir / "empty"); },
                     {dir / "empty", "no checkpoint found", "diffusion_pytorch_model.safetensors"});
  testing::make_dirs(dir / "both");
  write_safetensors(dir / "both/model.safetensors", {{"x", at::ones({2})}});
  write_safetensors(dir / "both/diffusion_pytorch_model.safetensors", {{"x", at::ones({2})}});
  expect_input_error([&] { Checkpoint::open(dir / "both"); }, {dir / "both", "ambiguous", "model.safetensors"});
  expect_input_error([&] { Checkpoint::open(dir / "absent.safetensors"); }, {"absent.safetensors", "not found"});
}

// Rewrites the index JSON of a sharded checkpoint through `edit`.
void edit_index(const std::string& index_path, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = read_json(index_path);
  edit(j);
  testing::write_file(index_path, j.dump(2));
}

TEST(Checkpoint, IndexConsistencyErrors) {
  {
    TempDir dir;
    const std::string index = write_sharded(dir);
    const std::string shard = read_json(index)["weight_map"]["head.bias"].get<std::string>();
    std::remove((dir / shard).c_str());
    expect_input_error([&] { Checkpoint::open(index); }, {index, dir / shard, "does not exist", "head.bias"});
  }
  {
    TempDir dir;
    const std::string index = write_sharded(dir);
    std::string shard;
    edit_index(index, [&](nlohmann::json& j) {
      shard = j["weight_map"]["embed.weight"].get<std::string>();
      j["weight_map"]["ghost.weight"] = shard;
    });
    expect_input_error([&] { Checkpoint::open(index); }, {"ghost.weight", dir / shard, "does not contain"});
  }
  {
    TempDir dir;
    const std::string index = write_sharded(dir);
    std::string shard;
    edit_index(index, [&](nlohmann::json& j) {
      shard = j["weight_map"]["blocks.0.attn.q.bias"].get<std::string>();
      j["weight_map"].erase("blocks.0.attn.q.bias");  // its shard holds other tensors too
    });
    expect_input_error([&] { Checkpoint::open(index); }, {"blocks.0.attn.q.bias", dir / shard, "not in the index"});
  }
  {
    TempDir dir;
    const std::string index = write_sharded(dir);
    edit_index(index, [&](nlohmann::json& j) { j.erase("weight_map"); });
    expect_input_error([&] { Checkpoint::open(index); }, {index, "weight_map"});
  }
  {
    TempDir dir;
    const std::string index = write_sharded(dir);
    testing::write_file(index, "{\"weight_map\": {\"a\": ");
    expect_input_error([&] { Checkpoint::open(index); }, {index, "invalid JSON"});
  }
}

// read_flat over any range equals the same range of the concatenated full reads followed by zeros.
TEST(Checkpoint, ReadFlatCrossesTensorAndFileBoundaries) {
  TempDir dir;
  Checkpoint ck = Checkpoint::open(write_sharded(dir));
  // An order different from both name order and file order, as a module's parameter order would be.
  const std::vector<std::string> order = {
      "head.weight",          "blocks.0.attn.q.bias",   "embed.weight", "blocks.0.empty", "blocks.1.attn.q.weight",
      "blocks.0.norm.weight", "blocks.0.attn.q.weight", "head.bias"};
  std::vector<at::Tensor> parts;
  std::vector<int64_t> stored_size;  // bytes per element as stored in the files
  for (const auto& n : order) {
    parts.push_back(ck.read(n, at::kFloat).reshape({-1}));
    stored_size.push_back(ck.read(n).element_size());
  }
  const int64_t total = at::cat(parts).numel();
  // Bytes a range must copy from the files: its overlap with each tensor times that tensor's stored element
  // size (the zero padding past the end reads nothing).
  auto covered_bytes = [&](int64_t begin, int64_t count) {
    int64_t bytes = 0, offset = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t lo = std::max(begin, offset), hi = std::min(begin + count, offset + parts[i].numel());
      if (hi > lo) bytes += (hi - lo) * stored_size[i];
      offset += parts[i].numel();
    }
    return bytes;
  };
  const int64_t padded = total + 13;
  at::Tensor reference = at::cat({at::cat(parts), at::zeros({padded - total})});  // [padded]

  int checked = 0;
  for (int64_t begin = 0; begin <= padded; begin += 3) {
    for (int64_t count : {int64_t(0), int64_t(1), int64_t(7), int64_t(29), padded - begin}) {
      if (begin + count > padded) continue;
      const int64_t before = ck.bytes_read();
      at::Tensor got = ck.read_flat(order, begin, count, at::kFloat);
      ASSERT_EQ(got.sizes(), (std::vector<int64_t>{count}));
      EXPECT_EQ(got.scalar_type(), at::kFloat);
      const double err = count ? (got - reference.narrow(0, begin, count)).abs().max().item<double>() : 0.0;
      EXPECT_EQ(err, 0.0) << "range [" << begin << ", " << begin + count << ")";
      EXPECT_EQ(ck.bytes_read() - before, covered_bytes(begin, count))
          << "range [" << begin << ", " << begin + count << ")";
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);

  // Only covered bytes are read: a range inside head.weight (F16, first in order) reads 2 bytes per element.
  const int64_t before = ck.bytes_read();
  ck.read_flat(order, 3, 10, at::kFloat);
  EXPECT_EQ(ck.bytes_read() - before, 10 * 2);
  // A range entirely in the padding reads nothing.
  const int64_t before2 = ck.bytes_read();
  EXPECT_EQ(ck.read_flat(order, total + 2, 5, at::kFloat).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(ck.bytes_read() - before2, 0);
  // Bit-exact in another dtype too (every stored value is exactly representable in double).
  at::Tensor d = ck.read_flat(order, 0, padded, at::kDouble);
  EXPECT_TRUE(at::equal(d.to(at::kFloat), reference));
}

TEST(Checkpoint, FixtureCheckpoints) {
  const std::string ref = std::string(OMNI_TEST_DATA_DIR) + "/reference/";
  Checkpoint tr = Checkpoint::open(ref + "t2v-a14b-tiny/model/transformer");
  EXPECT_EQ(tr.names().size(), 69u);
  EXPECT_EQ(tr.names().front(), "blocks.0.attn1.norm_k.weight");
  EXPECT_EQ(tr.info("scale_shift_table").shape, (std::vector<int64_t>{1, 2, 24}));
  EXPECT_EQ(tr.info("scale_shift_table").dtype, DType::F32);
  // Values computed independently with Python's struct module from the raw file bytes.
  at::Tensor sst = tr.read("scale_shift_table");
  EXPECT_NEAR(sst.sum().item<double>(), 0.8544693610165268, 1e-5);
  EXPECT_FLOAT_EQ(sst.reshape({-1})[0].item<float>(), -0.1565556675195694f);

  Checkpoint te = Checkpoint::open(ref + "t2v-a14b-tiny/model/text_encoder");
  EXPECT_EQ(te.names().size(), 22u);
  EXPECT_EQ(te.info("shared.weight").shape, (std::vector<int64_t>{160, 32}));
  at::Tensor shared = te.read("shared.weight", at::kDouble);
  EXPECT_NEAR(shared.sum().item<double>(), -79.6071536729778, 1e-6);
  EXPECT_NEAR(shared.abs().sum().item<double>(), 4072.149998290368, 1e-6);
  EXPECT_EQ(te.bytes_read(), 160 * 32 * 4);

  Checkpoint vae = Checkpoint::open(ref + "ti2v-5b-tiny/model/vae");
  EXPECT_EQ(vae.names().size(), 140u);
  EXPECT_EQ(vae.info("quant_conv.weight").shape, (std::vector<int64_t>{96, 96, 1, 1, 1}));
  Checkpoint vae21 = Checkpoint::open(ref + "i2v-a14b-tiny/model/vae/diffusion_pytorch_model.safetensors");
  EXPECT_EQ(vae21.names().size(), 146u);
}

}  // namespace
}  // namespace omni::io
