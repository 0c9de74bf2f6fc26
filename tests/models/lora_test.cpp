// LoraSet: every update of a parameter, added over any element range (what one HSDP slice or one read piece
// covers), equals scale * (alpha / rank) * B @ A (and full deltas) computed here in double from the same
// numbers, for every accepted naming (diffusers, Wan, Kohya, Kijai's diff_m, lightx2v's head.head.diff, keys
// without a prefix); Wan2.1 image-conditioning keys are skipped with a warning (an error when strict); and each
// bad file is an input error naming the file and the key.
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
      {"proj_out.weight", {4, 5}},
      {"proj_out.bias", {4}}};
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
  // VACE's blocks (Wan2.1's VaceWanAttentionBlock: before_proj / after_proj, diffusers' proj_in / proj_out).
  EXPECT_EQ(wan_original_module_name("vace_blocks.0.proj_in"), "vace_blocks.0.before_proj");
  EXPECT_EQ(wan_original_module_name("vace_blocks.7.proj_out"), "vace_blocks.7.after_proj");
  EXPECT_EQ(wan_original_module_name("vace_blocks.1.attn2.to_v"), "vace_blocks.1.cross_attn.v");
  EXPECT_EQ(wan_original_module_name("vace_patch_embedding"), "vace_patch_embedding");
  EXPECT_EQ(wan_original_module_name("blocks.0.proj_in"), "");
  EXPECT_EQ(wan_original_module_name("rope"), "");
}

// Wan2.2-S2V keeps Wan's names: its modules are known to a diffusers-named LoRA by the same tables read backwards
// (values written from diffusers' convert_wan_to_diffusers.py TRANSFORMER_KEYS_RENAME_DICT).
TEST(Lora, DiffusersNamesOfWanModules) {
  EXPECT_EQ(diffusers_module_name("blocks.12.self_attn.o"), "blocks.12.attn1.to_out.0");
  EXPECT_EQ(diffusers_module_name("blocks.0.cross_attn.k"), "blocks.0.attn2.to_k");
  EXPECT_EQ(diffusers_module_name("blocks.3.ffn.0"), "blocks.3.ffn.net.0.proj");
  EXPECT_EQ(diffusers_module_name("blocks.3.norm3"), "blocks.3.norm2");
  EXPECT_EQ(diffusers_module_name("blocks.3.modulation"), "blocks.3.scale_shift_table");
  EXPECT_EQ(diffusers_module_name("head.head"), "proj_out");
  EXPECT_EQ(diffusers_module_name("head.modulation"), "scale_shift_table");
  EXPECT_EQ(diffusers_module_name("time_projection.1"), "condition_embedder.time_proj");
  EXPECT_EQ(diffusers_module_name("text_embedding.2"), "condition_embedder.text_embedder.linear_2");
  // S2V's own modules have no diffusers name.
  EXPECT_EQ(diffusers_module_name("audio_injector.injector.0.q"), "");
  EXPECT_EQ(diffusers_module_name("blocks.0.norm2"), "");
  EXPECT_EQ(diffusers_module_name("blocks"), "");
}

// Wan2.1 I2V LoRAs on Wan2.2: keys of image-conditioning modules the model lacks (k_img, v_img, norm_k_img,
// img_emb, and their diffusers and Kohya names) are skipped with one warning per file and the rest is merged.
TEST(Lora, Wan21ImageKeysAreSkippedWithOneWarningPerFile) {
  TempDir dir;
  const at::Tensor a_q = randn({2, 5}, 1), b_q = randn({6, 2}, 2), a_f = randn({1, 5}, 3), b_f = randn({7, 1}, 4);
  const at::Tensor a_img = randn({2, 5}, 5), b_img = randn({5, 2}, 6);
  const std::string wan = dir / "wan21.safetensors", diffusers = dir / "wan21_diffusers.safetensors";
  io::write_safetensors(wan, Tensors{{"diffusion_model.blocks.0.cross_attn.k_img.lora_down.weight", a_img},
                                     {"diffusion_model.blocks.0.cross_attn.k_img.lora_up.weight", b_img},
                                     {"diffusion_model.blocks.0.self_attn.q.lora_down.weight", a_q},
                                     {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", b_q},
                                     {"diffusion_model.blocks.0.self_attn.q.alpha", at::full({}, 4.0)},
                                     {"diffusion_model.blocks.0.cross_attn.v_img.lora_A.weight", a_img},
                                     {"diffusion_model.blocks.0.cross_attn.v_img.lora_B.weight", b_img},
                                     {"diffusion_model.blocks.0.cross_attn.v_img.alpha", at::full({}, 1.0)},
                                     {"diffusion_model.blocks.0.cross_attn.norm_k_img.diff", randn({5}, 7)},
                                     {"diffusion_model.img_emb.proj.1.lora_down.weight", a_img},
                                     {"diffusion_model.img_emb.proj.1.lora_up.weight", b_img},
                                     {"diffusion_model.img_emb.proj.1.diff_b", randn({5}, 8)}});
  io::write_safetensors(diffusers,
                        Tensors{{"transformer.blocks.0.attn2.add_k_proj.lora_A.weight", a_img},
                                {"transformer.blocks.0.attn2.add_k_proj.lora_B.weight", b_img},
                                {"transformer.blocks.0.attn2.norm_added_k.diff", randn({5}, 9)},
                                {"transformer.condition_embedder.image_embedder.ff.net.0.proj.lora_A.weight", a_img},
                                {"transformer.condition_embedder.image_embedder.ff.net.0.proj.lora_B.weight", b_img},
                                {"lora_unet_blocks_0_cross_attn_v_img.lora_down.weight", a_img},
                                {"lora_unet_blocks_0_cross_attn_v_img.lora_up.weight", b_img},
                                {"lora_unet_blocks_0_ffn_0.lora_down.weight", a_f},
                                {"lora_unet_blocks_0_ffn_0.lora_up.weight", b_f}});

  ::testing::internal::CaptureStderr();
  const LoraSet set({{wan, 0.5}, {diffusers, 2.0}}, model_params(), "--lora", "transformer");
  const std::string log = ::testing::internal::GetCapturedStderr();
  // One warning per file, naming the file, how many keys it skipped and which kinds of module.
  size_t warnings = 0;
  for (size_t at = log.find("skipping"); at != std::string::npos; at = log.find("skipping", at + 1)) ++warnings;
  EXPECT_EQ(warnings, 2u) << log;
  EXPECT_NE(log.find("--lora " + wan +
                     ": skipping 9 key(s) of Wan2.1 image-conditioning modules (img_emb, k_img, "
                     "norm_k_img, v_img)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("--lora " + diffusers +
                     ": skipping 7 key(s) of Wan2.1 image-conditioning modules (add_k_proj, "
                     "condition_embedder.image_embedder, norm_added_k, v_img)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("--lora-strict"), std::string::npos) << log;

  ASSERT_EQ(set.files().size(), 2u);
  EXPECT_EQ(set.files()[0].modules, 1);
  EXPECT_EQ(set.files()[1].modules, 1);
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  expect_all_ranges(set, "blocks.0.attn1.to_q.weight", 0.5 * (4.0 / 2.0) * d(b_q).matmul(d(a_q)));
  expect_all_ranges(set, "blocks.0.ffn.net.0.proj.weight", 2.0 * d(b_f).matmul(d(a_f)));
  EXPECT_FALSE(set.touches("blocks.0.attn1.to_q.bias"));
  EXPECT_FALSE(set.touches("proj_out.weight"));

  // --lora-strict: an input error naming the file, the flag and the first such key (in the file's order).
  for (const std::string& path : {wan, diffusers}) {
    const io::Checkpoint ck = io::Checkpoint::open(path);
    std::string first_key;
    for (const auto& name : ck.names()) {
      const bool image = name.find("_img") != std::string::npos || name.find("img_emb") != std::string::npos ||
                         name.find("add_k_proj") != std::string::npos ||
                         name.find("norm_added_k") != std::string::npos ||
                         name.find("image_embedder") != std::string::npos;
      if (image && first_key.empty()) first_key = name;
    }
    ASSERT_FALSE(first_key.empty());
    try {
      LoraSet({{path, 1.0}}, model_params(), "--lora", "transformer", /*strict=*/true);
      ADD_FAILURE() << "no error under strict for " << path;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.exit_code(), 3) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find("'" + first_key + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("--lora-strict"), std::string::npos) << msg;
    }
  }
  // Without image keys, strict changes nothing.
  const std::string plain = dir / "plain.safetensors";
  io::write_safetensors(plain, Tensors{{"diffusion_model.blocks.0.self_attn.q.lora_down.weight", a_q},
                                       {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", b_q}});
  const LoraSet strict_set({{plain, 1.0}}, model_params(), "--lora", "transformer", /*strict=*/true);
  expect_all_ranges(strict_set, "blocks.0.attn1.to_q.weight", d(b_q).matmul(d(a_q)));
}

// Kijai's blocks.N.diff_m: a full delta of the block's modulation table, [1, 6, dim] or [6, dim].
// On a Wan2.1 image model (its transformer has the CLIP image branch) the same keys are its own modules: they
// merge, by either naming, as diffusers' and Wan's LoRA loaders apply them.
TEST(Lora, Wan21ImageKeysMergeOnAnImageModel) {
  TempDir dir("omni_lora_img");
  auto params = model_params();
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"blocks.0.attn2.add_k_proj.weight", {5, 4}},
           {"blocks.0.attn2.add_k_proj.bias", {5}},
           {"blocks.0.attn2.add_v_proj.weight", {5, 4}},
           {"blocks.0.attn2.add_v_proj.bias", {5}},
           {"blocks.0.attn2.norm_added_k.weight", {5}},
           {"condition_embedder.image_embedder.ff.net.0.proj.weight", {4, 4}},
           {"condition_embedder.image_embedder.ff.net.0.proj.bias", {4}}})
    params.push_back({name, shape, ParamDtype::kModel, nullptr});
  const at::Tensor a = randn({2, 4}, 5), b = randn({5, 2}, 6), a_e = randn({3, 4}, 7), b_e = randn({4, 3}, 8);
  const at::Tensor norm_diff = randn({5}, 9), emb_diff_b = randn({4}, 10);
  const std::string wan = dir / "wan21.safetensors", diffusers = dir / "wan21_diffusers.safetensors";
  io::write_safetensors(wan, Tensors{{"diffusion_model.blocks.0.cross_attn.k_img.lora_down.weight", a},
                                     {"diffusion_model.blocks.0.cross_attn.k_img.lora_up.weight", b},
                                     {"diffusion_model.blocks.0.cross_attn.v_img.lora_down.weight", a},
                                     {"diffusion_model.blocks.0.cross_attn.v_img.lora_up.weight", b},
                                     {"diffusion_model.blocks.0.cross_attn.v_img.alpha", at::full({}, 1.0)},
                                     {"diffusion_model.blocks.0.cross_attn.norm_k_img.diff", norm_diff},
                                     {"diffusion_model.img_emb.proj.1.diff_b", emb_diff_b}});
  io::write_safetensors(diffusers,
                        Tensors{{"transformer.blocks.0.attn2.add_k_proj.lora_A.weight", a},
                                {"transformer.blocks.0.attn2.add_k_proj.lora_B.weight", b},
                                {"transformer.condition_embedder.image_embedder.ff.net.0.proj.lora_A.weight", a_e},
                                {"transformer.condition_embedder.image_embedder.ff.net.0.proj.lora_B.weight", b_e}});
  ::testing::internal::CaptureStderr();
  const LoraSet set({{wan, 0.5}, {diffusers, 2.0}}, params, "--lora", "transformer");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.find("skipping"), std::string::npos) << log;
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  // k_img at 0.5 (no alpha: scale 1) and add_k_proj at 2.0 reach the same weight.
  expect_all_ranges(set, "blocks.0.attn2.add_k_proj.weight", 2.5 * d(b).matmul(d(a)));
  // v_img: alpha 1 over rank 2.
  expect_all_ranges(set, "blocks.0.attn2.add_v_proj.weight", 0.5 * 0.5 * d(b).matmul(d(a)));
  expect_all_ranges(set, "blocks.0.attn2.norm_added_k.weight", 0.5 * d(norm_diff));
  expect_all_ranges(set, "condition_embedder.image_embedder.ff.net.0.proj.weight", 2.0 * d(b_e).matmul(d(a_e)));
  expect_all_ranges(set, "condition_embedder.image_embedder.ff.net.0.proj.bias", 0.5 * d(emb_diff_b));
}

// Wan2.2-Animate-14B's relighting_lora.ckpt: peft's get_peft_model_state_dict names (the PeftModel's
// base_model.model. prefix, or none as diffusers' add_adapter gives them), Wan's module names, lora_A / lora_B, no
// alpha (Wan's LoraConfig: lora_alpha = r, a scale of 1), on every nn.Linear of the blocks: the attentions, the
// image key / value projections (k_img, v_img) and the FFN. (The .ckpt container: tests/e2e/lora relighting.sh.)
TEST(Lora, PeftNamesOfTheAnimateRelightingLora) {
  TempDir dir("omni_lora_peft");
  auto params = model_params();
  for (const auto& [name, shape] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{{"blocks.0.attn2.add_k_proj.weight", {5, 4}},
                                                                 {"blocks.0.attn2.add_k_proj.bias", {5}},
                                                                 {"blocks.0.attn2.add_v_proj.weight", {5, 4}},
                                                                 {"blocks.0.attn2.add_v_proj.bias", {5}}})
    params.push_back({name, shape, ParamDtype::kModel, nullptr});
  const at::Tensor a_q = randn({3, 5}, 1), b_q = randn({6, 3}, 2), a_k = randn({3, 4}, 3), b_k = randn({5, 3}, 4);
  const at::Tensor a_v = randn({3, 4}, 5), b_v = randn({5, 3}, 6), a_f = randn({3, 5}, 7), b_f = randn({7, 3}, 8);
  const std::string peft = dir / "peft.safetensors", bare = dir / "bare.safetensors";
  io::write_safetensors(peft, Tensors{{"base_model.model.blocks.0.self_attn.q.lora_A.weight", a_q},
                                      {"base_model.model.blocks.0.self_attn.q.lora_B.weight", b_q},
                                      {"base_model.model.blocks.0.cross_attn.k_img.lora_A.weight", a_k},
                                      {"base_model.model.blocks.0.cross_attn.k_img.lora_B.weight", b_k},
                                      {"base_model.model.blocks.0.ffn.0.lora_A.weight", a_f},
                                      {"base_model.model.blocks.0.ffn.0.lora_B.weight", b_f}});
  io::write_safetensors(bare, Tensors{{"blocks.0.cross_attn.v_img.lora_A.weight", a_v},
                                      {"blocks.0.cross_attn.v_img.lora_B.weight", b_v}});
  const LoraSet set({{peft, 1.0}, {bare, 0.5}}, params, "--lora", "transformer");
  ASSERT_EQ(set.files().size(), 2u);
  EXPECT_EQ(set.files()[0].modules, 3);
  EXPECT_EQ(set.files()[1].modules, 1);
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  expect_all_ranges(set, "blocks.0.attn1.to_q.weight", d(b_q).matmul(d(a_q)));
  expect_all_ranges(set, "blocks.0.attn2.add_k_proj.weight", d(b_k).matmul(d(a_k)));
  expect_all_ranges(set, "blocks.0.attn2.add_v_proj.weight", 0.5 * d(b_v).matmul(d(a_v)));
  expect_all_ranges(set, "blocks.0.ffn.net.0.proj.weight", d(b_f).matmul(d(a_f)));
  EXPECT_FALSE(set.touches("blocks.0.attn1.to_q.bias"));
}

TEST(Lora, DiffMUpdatesTheModulationTable) {
  TempDir dir;
  const at::Tensor m1 = randn({1, 6, 5}, 1), m2 = randn({6, 5}, 2), m3 = randn({1, 6, 5}, 3);
  io::write_safetensors(dir / "one.safetensors", Tensors{{"diffusion_model.blocks.0.diff_m", m1}});
  io::write_safetensors(dir / "two.safetensors", Tensors{{"blocks.0.diff_m", m2}});
  io::write_safetensors(dir / "three.safetensors", Tensors{{"model.diffusion_model.blocks.0.diff_m", m3}});
  const LoraSet set({{dir / "one.safetensors", 0.5}, {dir / "two.safetensors", -1.5}, {dir / "three.safetensors", 1.0}},
                    model_params(), "--lora", "transformer");
  for (const auto& f : set.files()) EXPECT_EQ(f.modules, 1);
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  expect_all_ranges(set, "blocks.0.scale_shift_table", 0.5 * d(m1) - 1.5 * d(m2).reshape({1, 6, 5}) + d(m3));
  EXPECT_FALSE(set.touches("blocks.0.attn1.to_q.weight"));
}

// lightx2v's head.head.diff / .diff_b: full deltas of proj_out.weight / proj_out.bias, beside a low-rank head.
TEST(Lora, HeadDiffUpdatesProjOut) {
  TempDir dir;
  const at::Tensor diff = randn({4, 5}, 1), diff_b = randn({4}, 2), a = randn({2, 5}, 3), b = randn({4, 2}, 4);
  io::write_safetensors(dir / "head.safetensors", Tensors{{"diffusion_model.head.head.diff", diff},
                                                          {"diffusion_model.head.head.diff_b", diff_b},
                                                          {"diffusion_model.head.head.lora_down.weight", a},
                                                          {"diffusion_model.head.head.lora_up.weight", b},
                                                          {"diffusion_model.head.head.alpha", at::full({}, 8.0)}});
  const LoraSet set({{dir / "head.safetensors", 0.7}}, model_params(), "--lora", "transformer");
  ASSERT_EQ(set.files().size(), 1u);
  EXPECT_EQ(set.files()[0].modules, 1);
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  expect_all_ranges(set, "proj_out.weight", 0.7 * d(diff) + 0.7 * (8.0 / 2.0) * d(b).matmul(d(a)));
  expect_all_ranges(set, "proj_out.bias", 0.7 * d(diff_b));
}

// Keys with no prefix, in Wan's names or ours.
TEST(Lora, BareKeysWithoutPrefix) {
  TempDir dir;
  const at::Tensor a_q = randn({3, 5}, 1), b_q = randn({6, 3}, 2), a_f = randn({2, 5}, 3), b_f = randn({7, 2}, 4);
  const at::Tensor diff_b = randn({6}, 5), bias_f = randn({7}, 6), head_b = randn({4}, 7);
  io::write_safetensors(dir / "bare.safetensors", Tensors{{"blocks.0.self_attn.q.lora_down.weight", a_q},
                                                          {"blocks.0.self_attn.q.lora_up.weight", b_q},
                                                          {"blocks.0.self_attn.q.alpha", at::full({}, 1.5)},
                                                          {"blocks.0.self_attn.q.diff_b", diff_b},
                                                          {"blocks.0.ffn.net.0.proj.lora_A.weight", a_f},
                                                          {"blocks.0.ffn.net.0.proj.lora_B.weight", b_f},
                                                          {"blocks.0.ffn.net.0.proj.lora_B.bias", bias_f},
                                                          {"head.head.diff_b", head_b}});
  const LoraSet set({{dir / "bare.safetensors", 2.0}}, model_params(), "--lora", "transformer");
  ASSERT_EQ(set.files().size(), 1u);
  EXPECT_EQ(set.files()[0].modules, 3);
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  expect_all_ranges(set, "blocks.0.attn1.to_q.weight", 2.0 * (1.5 / 3.0) * d(b_q).matmul(d(a_q)));
  expect_all_ranges(set, "blocks.0.attn1.to_q.bias", 2.0 * d(diff_b));
  expect_all_ranges(set, "blocks.0.ffn.net.0.proj.weight", 2.0 * d(b_f).matmul(d(a_f)));
  expect_all_ranges(set, "blocks.0.ffn.net.0.proj.bias", 2.0 * d(bias_f));
  expect_all_ranges(set, "proj_out.bias", 2.0 * d(head_b));
  EXPECT_FALSE(set.touches("proj_out.weight"));
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
  // A key that names no module stays an error beside skipped Wan2.1 image keys, and without a prefix.
  expect_bad({{"diffusion_model.blocks.0.cross_attn.k_img.lora_down.weight", a},
              {"diffusion_model.blocks.0.cross_attn.k_img.lora_up.weight", b},
              {"diffusion_model.blocks.0.cross_attn.q_img.lora_down.weight", a},
              {"diffusion_model.blocks.0.self_attn.q.lora_down.weight", a},
              {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", b}},
             {"1 key(s) name no module", "cross_attn.q_img.lora_down.weight"});
  expect_bad({{"blocks.0.self_attn.qq.lora_down.weight", a},
              {"blocks.0.self_attn.q.lora_down.weight", a},
              {"blocks.0.self_attn.q.lora_up.weight", b}},
             {"name no module", "blocks.0.self_attn.qq.lora_down.weight", "closest modules"});
  // diff_m must have the modulation table's shape, a leading 1 aside.
  expect_bad({{"diffusion_model.blocks.0.diff_m", randn({6, 4}, 9)}}, {"diff_m", "does not fit", "scale_shift_table"});
  expect_bad({{"diffusion_model.blocks.0.diff_m", randn({5, 6}, 9)}}, {"diff_m", "does not fit", "[1, 6, 5]"});
  expect_bad({{"diffusion_model.blocks.0.diff_m", randn({1, 6, 5}, 9)},
              {"diffusion_model.blocks.0.modulation.diff", randn({1, 6, 5}, 10)}},
             {"update the same tensor", "diff_m"});
  expect_bad({{"diffusion_model.head.head.diff_b", randn({5}, 11)}},
             {"head.head.diff_b", "does not fit", "proj_out.bias"});
}

}  // namespace
}  // namespace omni::models
