// LoraSet: every update of a parameter, added over any element range (what one HSDP slice or one read piece
// covers), equals scale * (alpha / rank) * B @ A (and full deltas) computed here in double from the same
// numbers; and each bad file is an input error naming the file and the key.
#include "models/lora.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "test_util.h"

namespace omni::models {
namespace {

using test_util::TempDir;
using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

// The parameters of a small Wan-like model (names and shapes only; LoraSet reads nothing else).
std::vector<ParamRef> model_params() {
  static const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"blocks.0.attn1.to_q.weight", {6, 5}},
      {"blocks.0.attn1.to_q.bias", {6}},
      {"blocks.0.ffn.net.0.proj.weight", {7, 5}},
      {"blocks.0.ffn.net.0.proj.bias", {7}},
      {"blocks.0.scale_shift_table", {1, 6, 5}},
      {"patch_embedding.weight", {5, 16, 1, 2, 2}},
      {"proj_out.weight", {4, 5}}};
  std::vector<ParamRef> out;
  for (const auto& [name, shape] : shapes) out.push_back({name, shape, ParamDtype::kModel, nullptr});
  return out;
}

at::Tensor randn(std::vector<int64_t> shape, int seed) {
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(seed));
  return at::randn(shape, gen, at::kFloat);
}

// Every element range [begin, begin + count) of `param` through add_to against the same range of `expected`.
void expect_all_ranges(const LoraSet& set, const std::string& param, const at::Tensor& expected) {
  const at::Tensor flat = expected.reshape({-1});
  const int64_t n = flat.numel();
  for (int64_t begin = 0; begin < n; ++begin) {
    for (int64_t count : {int64_t{1}, int64_t{3}, n - begin}) {
      if (begin + count > n) continue;
      at::Tensor values = at::zeros({count}, at::kFloat);
      set.add_to(param, begin, values);
      const double err = (values.to(at::kDouble) - flat.narrow(0, begin, count)).abs().max().item<double>();
      ASSERT_LT(err, 1e-5) << param << " [" << begin << ", " << begin + count << ")";
    }
  }
}

TEST(Lora, UpdatesOverAnyRangeMatchTheFormula) {
  TempDir dir;
  // diffusers names with alpha; Kohya names; Wan names (a Conv3d low-rank update, a diff_b and a diff).
  const at::Tensor a_q = randn({3, 5}, 1), b_q = randn({6, 3}, 2);
  const at::Tensor a_f = randn({2, 5}, 3), b_f = randn({7, 2}, 4);
  const at::Tensor a_p = randn({2, 16, 1, 2, 2}, 5), b_p = randn({5, 2, 1, 1, 1}, 6);
  const at::Tensor diff_b = randn({6}, 7), diff_mod = randn({1, 6, 5}, 8), a_o = randn({1, 5}, 9),
                   b_o = randn({4, 1}, 10);
  io::write_safetensors(dir / "one.safetensors", Tensors{{"transformer.blocks.0.attn1.to_q.lora_A.weight", a_q},
                                                         {"transformer.blocks.0.attn1.to_q.lora_B.weight", b_q},
                                                         {"transformer.blocks.0.attn1.to_q.alpha", at::full({}, 6.0)},
                                                         {"lora_unet_blocks_0_ffn_0.lora_down.weight", a_f},
                                                         {"lora_unet_blocks_0_ffn_0.lora_up.weight", b_f},
                                                         {"lora_unet_blocks_0_ffn_0.alpha", at::full({}, 1.0)},
                                                         {"diffusion_model.patch_embedding.lora_down.weight", a_p},
                                                         {"diffusion_model.patch_embedding.lora_up.weight", b_p},
                                                         {"diffusion_model.blocks.0.self_attn.q.diff_b", diff_b},
                                                         {"diffusion_model.blocks.0.modulation.diff", diff_mod}});
  // A second file on the same weight, stacked (head.head: Wan's proj_out).
  io::write_safetensors(dir / "two.safetensors",
                        Tensors{{"diffusion_model.blocks.0.self_attn.q.lora_A.weight", a_o},
                                {"diffusion_model.blocks.0.self_attn.q.lora_B.weight", randn({6, 1}, 11)},
                                {"diffusion_model.head.head.lora_A.weight", a_o},
                                {"diffusion_model.head.head.lora_B.weight", b_o}});
  const LoraSet set({{dir / "one.safetensors", 0.5}, {dir / "two.safetensors", -2.0}}, model_params(), "--lora",
                    "transformer");
  ASSERT_EQ(set.files().size(), 2u);
  EXPECT_EQ(set.files()[0].modules, 4);  // to_q, ffn.net.0.proj, patch_embedding, scale_shift_table
  EXPECT_EQ(set.files()[1].modules, 2);
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  const at::Tensor b_q2 = randn({6, 1}, 11);
  expect_all_ranges(set, "blocks.0.attn1.to_q.weight",
                    0.5 * (6.0 / 3.0) * d(b_q).matmul(d(a_q)) - 2.0 * d(b_q2).matmul(d(a_o)));
  expect_all_ranges(set, "blocks.0.attn1.to_q.bias", 0.5 * d(diff_b));
  expect_all_ranges(set, "blocks.0.ffn.net.0.proj.weight", 0.5 * (1.0 / 2.0) * d(b_f).matmul(d(a_f)));
  expect_all_ranges(set, "patch_embedding.weight",
                    (0.5 * d(b_p).reshape({5, 2}).matmul(d(a_p).reshape({2, -1}))).reshape({5, 16, 1, 2, 2}));
  expect_all_ranges(set, "blocks.0.scale_shift_table", 0.5 * d(diff_mod));
  expect_all_ranges(set, "proj_out.weight", -2.0 * d(b_o).matmul(d(a_o)));
  EXPECT_FALSE(set.touches("blocks.0.ffn.net.0.proj.bias"));
}

TEST(Lora, OriginalWanNames) {
  EXPECT_EQ(wan_original_module_name("blocks.12.attn1.to_out.0"), "blocks.12.self_attn.o");
  EXPECT_EQ(wan_original_module_name("blocks.3.attn2.add_k_proj"), "blocks.3.cross_attn.k_img");
  EXPECT_EQ(wan_original_module_name("blocks.0.ffn.net.2"), "blocks.0.ffn.2");
  EXPECT_EQ(wan_original_module_name("blocks.0.norm2"), "blocks.0.norm3");
  EXPECT_EQ(wan_original_module_name("condition_embedder.time_proj"), "time_projection.1");
  EXPECT_EQ(wan_original_module_name("proj_out"), "head.head");
  EXPECT_EQ(wan_original_module_name("rope"), "");
}

// One bad file: an input error (exit 3) whose one-line message names the file and holds every one of `parts`.
void expect_bad(const Tensors& tensors, std::initializer_list<std::string> parts) {
  TempDir dir;
  const std::string path = dir / "bad.safetensors";
  io::write_safetensors(path, tensors);
  try {
    LoraSet({{path, 1.0}}, model_params(), "--lora", "transformer");
    ADD_FAILURE() << "no error for " << tensors.front().first;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.exit_code(), 3) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

TEST(Lora, BadFilesNameTheFileAndTheKey) {
  const at::Tensor a = randn({2, 5}, 1), b = randn({6, 2}, 2);
  expect_bad({{"transformer.blocks.0.attn1.to_qq.lora_A.weight", a},
              {"transformer.blocks.0.attn1.to_q.lora_A.weight", a},
              {"transformer.blocks.0.attn1.to_q.lora_B.weight", b}},
             {"to_qq.lora_A.weight", "name no module of transformer", "closest modules: blocks.0.attn1.to_q"});
  expect_bad({{"transformer.blocks.0.attn1.to_q.lora_A.weight", a},
              {"transformer.blocks.0.attn1.to_q.lora_B.weight", randn({6, 3}, 3)}},
             {"rank mismatch", "rank 2", "rank 3"});
  expect_bad({{"transformer.blocks.0.attn1.to_q.lora_A.weight", a}}, {"to_q.lora_A.weight", "has no matching"});
  expect_bad({{"transformer.blocks.0.attn1.to_q.lora_A.weight", randn({1, 5120}, 4)},
              {"transformer.blocks.0.attn1.to_q.lora_B.weight", randn({5120, 1}, 5)}},
             {"does not fit", "hidden size 5120", "A14B"});
  expect_bad({{"diffusion_model.patch_embedding.lora_down.weight", randn({1, 36, 1, 2, 2}, 6)},
              {"diffusion_model.patch_embedding.lora_up.weight", randn({5, 1, 1, 1, 1}, 7)}},
             {"does not fit", "image-to-video"});
  expect_bad({{"diffusion_model.blocks.0.cross_attn.k_img.lora_down.weight", a},
              {"diffusion_model.blocks.0.cross_attn.k_img.lora_up.weight", b}},
             {"k_img", "image-to-video"});
  expect_bad({{"unet.down_blocks.0.lora_A.weight", a}}, {"none of its 1 keys", "unet.down_blocks.0.lora_A.weight"});
  expect_bad({{"transformer.blocks.0.attn1.to_q.lora_A.weight", a},
              {"transformer.blocks.0.attn1.to_q.lora_B.weight", b},
              {"transformer.blocks.0.attn1.to_q.lora_magnitude_vector", randn({6}, 8)},
              {"transformer.blocks.0.attn1.to_q.dora_scale", randn({6}, 8)}},
             {"DoRA", "dora_scale"});
  expect_bad({{"text_encoder.encoder.block.0.lora_A.weight", a}}, {"text-encoder LoRA"});
}

}  // namespace
}  // namespace omni::models
