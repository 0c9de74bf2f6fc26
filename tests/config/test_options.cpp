// Option precedence: built-in defaults < model preset < --config file < flags, and the errors of each layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "config/help.h"
#include "config/options.h"
#include "core/error.h"

using omni::config::CommandLine;
using omni::config::GenerateOptions;

namespace {

CommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "omni-generate");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  return omni::config::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The message of the usage error that `f` throws (and that it is one: exit code 2).
template <typename F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const omni::Error& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a usage error";
  return "";
}

}  // namespace

TEST(Options, BuiltInDefaultsWithoutPreset) {
  GenerateOptions o = omni::config::resolve_options(parse({}), "");
  EXPECT_EQ(o.num_inference_steps, 40);
  EXPECT_EQ(o.height, 720);
  EXPECT_EQ(o.sample_solver, omni::sched::Solver::kUniPC);
  EXPECT_FALSE(o.guidance_scale_2.has_value());
  EXPECT_EQ(o.sources.at("height").str(), "default");
}

TEST(Options, PresetsCarryTheOfficialSettings) {
  GenerateOptions t2v = omni::config::resolve_options(parse({}), "wan2.2-t2v-a14b");
  EXPECT_EQ(t2v.num_frames, 81);
  EXPECT_DOUBLE_EQ(t2v.guidance_scale, 4.0);
  EXPECT_DOUBLE_EQ(*t2v.guidance_scale_2, 3.0);
  EXPECT_DOUBLE_EQ(*t2v.boundary_ratio, 0.875);
  EXPECT_DOUBLE_EQ(*t2v.flow_shift, 12.0);
  EXPECT_EQ(t2v.fps, 16);
  EXPECT_NE(t2v.negative_prompt.find("色调艳丽"), std::string::npos);
  EXPECT_EQ(t2v.sources.at("flow-shift").str(), "preset wan2.2-t2v-a14b");

  GenerateOptions i2v = omni::config::resolve_options(parse({}), "wan2.2-i2v-a14b");
  EXPECT_DOUBLE_EQ(*i2v.boundary_ratio, 0.9);
  EXPECT_DOUBLE_EQ(*i2v.flow_shift, 5.0);
  EXPECT_DOUBLE_EQ(i2v.guidance_scale, 3.5);

  GenerateOptions ti2v = omni::config::resolve_options(parse({}), "wan2.2-ti2v-5b");
  EXPECT_EQ(ti2v.height, 704);
  EXPECT_EQ(ti2v.width, 1280);
  EXPECT_EQ(ti2v.num_frames, 121);
  EXPECT_EQ(ti2v.num_inference_steps, 50);
  EXPECT_EQ(ti2v.fps, 24);
  EXPECT_FALSE(ti2v.boundary_ratio.has_value());
}

TEST(Options, ConfigFileOverridesPresetAndFlagsOverrideConfig) {
  std::string cfg = write_temp("layer.yaml", "num-inference-steps: 7\nheight: 480\nflow-shift: 3\nuse-hsdp: true\n");
  GenerateOptions o = omni::config::resolve_options(parse({"--config", cfg, "--height", "256"}), "wan2.2-t2v-a14b");
  EXPECT_EQ(o.num_inference_steps, 7);   // config over preset (40)
  EXPECT_DOUBLE_EQ(*o.flow_shift, 3.0);  // config over preset (12)
  EXPECT_EQ(o.height, 256);              // flag over config (480)
  EXPECT_EQ(o.width, 1280);              // preset, untouched
  EXPECT_TRUE(o.parallel.use_hsdp);      // flags can come from the file too
  EXPECT_EQ(o.sources.at("height").str(), "flag");
  EXPECT_EQ(o.sources.at("num-inference-steps").str(), "config " + cfg);
  EXPECT_EQ(o.sources.at("width").str(), "preset wan2.2-t2v-a14b");
}

TEST(Options, NullInConfigResetsAnOptionalToTheModelDefault) {
  std::string cfg = write_temp("null.yaml", "boundary-ratio: null\n");
  GenerateOptions o = omni::config::resolve_options(parse({"--config", cfg}), "wan2.2-t2v-a14b");
  EXPECT_FALSE(o.boundary_ratio.has_value());
}

TEST(Options, FlagsParseEveryTypeAndEqualsForm) {
  GenerateOptions o = omni::config::resolve_options(
      parse({"--num-frames=17", "--guidance-scale", "2.5", "--seed", "-3", "--use-hsdp", "--hsdp-shard-size", "2",
             "--overwrite", "--prompt", "a cat", "--guidance-scale-2", "1.5"}),
      "");
  EXPECT_EQ(o.num_frames, 17);
  EXPECT_DOUBLE_EQ(o.guidance_scale, 2.5);
  EXPECT_EQ(o.seed, -3);
  EXPECT_TRUE(o.parallel.use_hsdp);
  EXPECT_EQ(o.parallel.hsdp_shard_size, 2);
  EXPECT_TRUE(o.overwrite);
  EXPECT_EQ(o.prompt, "a cat");
  EXPECT_DOUBLE_EQ(*o.guidance_scale_2, 1.5);
}

TEST(Options, UnknownFlagSuggestsClosest) {
  auto msg = usage_error([] { parse({"--num-framez", "3"}); });
  EXPECT_NE(msg.find("unknown flag --num-framez; did you mean --num-frames?"), std::string::npos) << msg;
  msg = usage_error([] { parse({"--guidance", "3"}); });
  EXPECT_NE(msg.find("did you mean --guidance-scale"), std::string::npos) << msg;
}

TEST(Options, UnknownYamlKeyNamesFileAndKey) {
  std::string cfg = write_temp("typo.yaml", "seeed: 3\n");
  auto msg = usage_error([&] { omni::config::resolve_options(parse({"--config", cfg}), ""); });
  EXPECT_NE(msg.find(cfg), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key 'seeed'; did you mean 'seed'?"), std::string::npos) << msg;
}

TEST(Options, BadValuesNameTheirSource) {
  auto msg = usage_error([] { omni::config::resolve_options(parse({"--height", "abc"}), ""); });
  EXPECT_NE(msg.find("--height: expected an integer, got 'abc'"), std::string::npos) << msg;
  std::string cfg = write_temp("bad.yaml", "fps: fast\n");
  msg = usage_error([&] { omni::config::resolve_options(parse({"--config", cfg}), ""); });
  EXPECT_NE(msg.find("fps (config " + cfg + "): expected an integer, got 'fast'"), std::string::npos) << msg;
  // A choice option's error lists its one table of names, whichever layer gave the value.
  std::string solver = write_temp("solver.yaml", "sample-solver: ddim\n");
  msg = usage_error([&] { omni::config::resolve_options(parse({"--config", solver}), ""); });
  EXPECT_NE(msg.find("sample-solver (config " + solver + ") must be unipc or euler, got 'ddim'"), std::string::npos)
      << msg;
  msg = usage_error([] { omni::config::resolve_options(parse({"--config", "/nonexistent/x.yaml"}), ""); });
  EXPECT_NE(msg.find("--config: cannot open '/nonexistent/x.yaml'"), std::string::npos) << msg;
}

TEST(Options, ValidationNamesTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string text;
  };
  std::vector<Case> cases = {
      {{"--num-frames", "0"}, "--num-frames must be at least 1, got 0"},
      {{"--height", "30"}, "--height must be a positive multiple of 16, got 30"},
      {{"--width", "-16"}, "--width must be a positive multiple of 16, got -16"},
      {{"--sample-solver", "ddim"}, "--sample-solver must be unipc or euler, got 'ddim'"},
      {{"--dtype", "fp8"}, "--dtype must be float32, bfloat16 or float16, got 'fp8'"},
      {{"--step-cache", "deepcache"}, "--step-cache must be none, teacache or fbcache, got 'deepcache'"},
      {{"--layout", "fixed"}, "--layout must be auto or manual, got 'fixed'"},
      {{"--log-level", "loud"}, "--log-level must be debug, info, warn, warning, error or off, got 'loud'"},
      {{"--boundary-ratio", "1.5"}, "--boundary-ratio must lie in [0, 1], got 1.5"},
      {{"--task", "v2v"}, "--task must be auto, t2v, i2v, ti2v, vace, animate or s2v, got 'v2v'"},
      {{"--prompt", "a", "--prompts-file", "p.txt"}, "--prompt and --prompts-file are exclusive"},
  };
  for (const auto& c : cases) {
    auto msg = usage_error([&] { omni::config::resolve_options(parse(c.args), ""); });
    EXPECT_NE(msg.find(c.text), std::string::npos) << "got: " << msg;
  }
}

TEST(Options, PresetForModel) {
  using omni::config::ModelFacts;
  using omni::config::preset_for;
  // The published models, with what their files say (model_index.json, the transformer's config.json).
  const ModelFacts t2v_a14b{"WanPipeline", false, 2, false, false, 5120};
  const ModelFacts i2v_a14b{"WanImageToVideoPipeline", false, 2, false, false, 5120};
  const ModelFacts ti2v_5b{"WanPipeline", true, 1, false, false, 3072};
  const ModelFacts t2v_14b{"WanPipeline", false, 1, false, false, 5120};
  const ModelFacts t2v_1_3b{"WanPipeline", false, 1, false, false, 1536};
  const ModelFacts i2v_14b{"WanImageToVideoPipeline", false, 1, true, false, 5120};
  const ModelFacts flf2v_14b{"WanImageToVideoPipeline", false, 1, true, true, 5120};
  EXPECT_EQ(preset_for("Wan-AI/Wan2.2-T2V-A14B-Diffusers", t2v_a14b), "wan2.2-t2v-a14b");
  EXPECT_EQ(preset_for("Wan-AI/Wan2.2-I2V-A14B-Diffusers", i2v_a14b), "wan2.2-i2v-a14b");
  EXPECT_EQ(preset_for("Wan-AI/Wan2.2-TI2V-5B-Diffusers", ti2v_5b), "wan2.2-ti2v-5b");
  EXPECT_EQ(preset_for("Wan-AI/Wan2.1-T2V-14B-Diffusers", t2v_14b), "wan2.1-t2v-14b");
  EXPECT_EQ(preset_for("Wan-AI/Wan2.1-T2V-1.3B-Diffusers", t2v_1_3b), "wan2.1-t2v-1.3b");
  EXPECT_EQ(preset_for("Wan-AI/Wan2.1-I2V-14B-480P-Diffusers", i2v_14b), "wan2.1-i2v-14b-480p");
  EXPECT_EQ(preset_for("Wan-AI/Wan2.1-I2V-14B-720P-Diffusers", i2v_14b), "wan2.1-i2v-14b-720p");
  EXPECT_EQ(preset_for("Wan-AI/Wan2.1-FLF2V-14B-720P-Diffusers", flf2v_14b), "wan2.1-flf2v-14b-720p");
  EXPECT_EQ(preset_for("/models/Wan2.1-T2V-14B", t2v_14b), "wan2.1-t2v-14b");  // the original layout's folder
  // Folders whose names say nothing: the files decide, and a one-expert 14B text-to-video file is taken for a
  // Wan2.2 expert.
  EXPECT_EQ(preset_for("/data/my-model", i2v_a14b), "wan2.2-i2v-a14b");
  EXPECT_EQ(preset_for("/data/my-model", ti2v_5b), "wan2.2-ti2v-5b");
  EXPECT_EQ(preset_for("/data/my-model", t2v_a14b), "wan2.2-t2v-a14b");
  EXPECT_EQ(preset_for("/data/my-model", t2v_14b), "wan2.2-t2v-a14b");
  EXPECT_EQ(preset_for("/data/my-model", t2v_1_3b), "wan2.1-t2v-1.3b");
  EXPECT_EQ(preset_for("/data/my-model", i2v_14b), "wan2.1-i2v-14b-480p");
  EXPECT_EQ(preset_for("/data/my-model", flf2v_14b), "wan2.1-flf2v-14b-720p");
  // A name that says I2V does not turn a CLIP-less model into a Wan2.1 one, nor the reverse.
  EXPECT_EQ(preset_for("/data/wan-i2v-finetune", i2v_a14b), "wan2.2-i2v-a14b");
  EXPECT_EQ(preset_for("/data/Wan2.2-like-i2v", i2v_14b), "wan2.1-i2v-14b-480p");
  // Every preset named exists and parses.
  for (const char* name :
       {"wan2.1-t2v-14b", "wan2.1-t2v-1.3b", "wan2.1-i2v-14b-480p", "wan2.1-i2v-14b-720p", "wan2.1-flf2v-14b-720p"}) {
    const auto o = omni::config::preset_options(name);
    EXPECT_EQ(o.count("boundary-ratio"), 0u) << name;
    EXPECT_EQ(o.at("guidance-scale"), "5.0") << name;
  }
  EXPECT_EQ(omni::config::preset_options("wan2.1-i2v-14b-480p").at("flow-shift"), "3.0");
  EXPECT_EQ(omni::config::preset_options("wan2.1-flf2v-14b-720p").at("flow-shift"), "16.0");
  // VACE (WanVACEPipeline): the files say VACE and how many experts; the width tells 1.3B from 14B, whatever the
  // folder's name.
  ModelFacts vace_14b{"WanVACEPipeline", false, 1, false, false, 5120};
  vace_14b.vace = true;
  ModelFacts vace_1_3b = vace_14b;
  vace_1_3b.inner_dim = 1536;
  ModelFacts vace_fun = vace_14b;
  vace_fun.experts = 2;
  EXPECT_EQ(preset_for("Wan-AI/Wan2.1-VACE-14B-diffusers", vace_14b), "wan2.1-vace-14b");
  EXPECT_EQ(preset_for("Wan-AI/Wan2.1-VACE-1.3B-diffusers", vace_1_3b), "wan2.1-vace-1.3b");
  EXPECT_EQ(preset_for("/data/Wan2.2-VACE-Fun-A14B-diffusers", vace_fun), "wan2.2-vace-fun-a14b");
  EXPECT_EQ(preset_for("/data/my-model", vace_1_3b), "wan2.1-vace-1.3b");
  EXPECT_EQ(omni::config::preset_options("wan2.1-vace-1.3b").at("height"), "480");
  EXPECT_EQ(omni::config::preset_options("wan2.1-vace-14b").at("flow-shift"), "16.0");
  EXPECT_EQ(omni::config::preset_options("wan2.2-vace-fun-a14b").at("boundary-ratio"), "0.875");
  // Wan2.2-S2V-14B (its original folder is WanS2VPipeline): wan_s2v_14B.py's settings, whatever the folder's name.
  ModelFacts s2v{"WanS2VPipeline", false, 1, false, false, 5120};
  s2v.s2v = true;
  EXPECT_EQ(preset_for("/data/my-model", s2v), "wan2.2-s2v-14b");
  const auto s2v_preset = omni::config::preset_options("wan2.2-s2v-14b");
  EXPECT_EQ(s2v_preset.at("num-inference-steps"), "40");
  EXPECT_EQ(s2v_preset.at("guidance-scale"), "4.5");
  EXPECT_EQ(s2v_preset.at("flow-shift"), "3.0");
  EXPECT_EQ(s2v_preset.at("num-frames"), "80");
  EXPECT_EQ(s2v_preset.at("fps"), "16");
}

// Scripts append overrides to a base command line: as with argparse, the last value wins.
TEST(Options, AFlagGivenTwiceTakesItsLastValue) {
  GenerateOptions o =
      omni::config::resolve_options(parse({"--seed", "1", "--prompt", "a", "--seed", "7", "--device=cpu", "--device",
                                           "auto", "--overwrite", "--overwrite", "--prompt", "b"}),
                                    "");
  EXPECT_EQ(o.seed, 7);
  EXPECT_EQ(o.device.kind, omni::dist::DeviceRequest::kAuto);
  EXPECT_EQ(o.prompt, "b");
  EXPECT_TRUE(o.overwrite);
  EXPECT_EQ(o.sources.at("seed").str(), "flag");
}

TEST(Options, DeviceDefaultsToAutoAndCollectiveTimeoutTo600) {
  GenerateOptions o = omni::config::resolve_options(parse({"--prompt", "x"}), "");
  EXPECT_EQ(o.device.kind, omni::dist::DeviceRequest::kAuto);
  EXPECT_DOUBLE_EQ(o.collective_timeout, 600);
  EXPECT_FALSE(o.allow_shared_gpu);
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "cuda:99999999999", " cpu"}) {
    EXPECT_THROW(omni::config::resolve_options(parse({"--prompt", "x", "--device", bad}), ""), omni::Error) << bad;
  }
  // Each form parses to its kind and index and prints back as given.
  const std::pair<const char*, std::pair<omni::dist::DeviceRequest::Kind, int>> good[] = {
      {"auto", {omni::dist::DeviceRequest::kAuto, -1}},
      {"cpu", {omni::dist::DeviceRequest::kCpu, -1}},
      {"cuda", {omni::dist::DeviceRequest::kCuda, -1}},
      {"cuda:0", {omni::dist::DeviceRequest::kCuda, 0}},
      {"cuda:12", {omni::dist::DeviceRequest::kCuda, 12}}};
  for (const auto& [text, want] : good) {
    const GenerateOptions g = omni::config::resolve_options(parse({"--prompt", "x", "--device", text}), "");
    EXPECT_EQ(g.device.kind, want.first) << text;
    EXPECT_EQ(g.device.index, want.second) << text;
    EXPECT_EQ(g.device.str(), text);
    EXPECT_EQ(omni::config::option_value(g, "device"), text);
  }
}

TEST(Options, EveryOptionOfTheDesignExists) {
  // docs/DESIGN.md section 5's flag list: each must be in the table (and so on the command line and in YAML).
  const char* names[] = {"model",
                         "task",
                         "config",
                         "prompt",
                         "negative-prompt",
                         "prompts-file",
                         "image",
                         "height",
                         "width",
                         "num-frames",
                         "num-inference-steps",
                         "guidance-scale",
                         "guidance-scale-2",
                         "boundary-ratio",
                         "flow-shift",
                         "sample-solver",
                         "seed",
                         "max-sequence-length",
                         "output",
                         "fps",
                         "save-tensors",
                         "report",
                         "use-hsdp",
                         "hsdp-shard-size",
                         "hsdp-replicate-size",
                         "ulysses-degree",
                         "ring-degree",
                         "cfg-parallel-size",
                         "tensor-parallel-size",
                         "device",
                         "dtype",
                         "vae-dtype",
                         "log-level",
                         "dry-run",
                         "overwrite",
                         "crf",
                         "allow-shared-gpu",
                         "collective-timeout",
                         "dump-tensors"};
  for (const char* n : names) {
    bool found = false;
    for (const auto& spec : omni::config::option_table()) found |= spec.name == n;
    EXPECT_TRUE(found) << n;
  }
}

// The table gives each option's typed value (the sidecar's) and its text (--dry-run's), from the same getter.
TEST(Options, TypedValuesAndTextComeFromTheTable) {
  GenerateOptions o = omni::config::resolve_options(parse({"--prompt", "x", "--seed", "7", "--use-hsdp"}), "");
  EXPECT_TRUE(omni::config::option_json(o, "seed").is_number_integer());
  EXPECT_EQ(omni::config::option_json(o, "seed").get<int64_t>(), 7);
  EXPECT_TRUE(omni::config::option_json(o, "use-hsdp").get<bool>());
  EXPECT_DOUBLE_EQ(omni::config::option_json(o, "guidance-scale").get<double>(), 5.0);
  EXPECT_TRUE(omni::config::option_json(o, "flow-shift").is_null());
  EXPECT_EQ(omni::config::option_value(o, "flow-shift"), "(model default)");
  EXPECT_EQ(omni::config::option_value(o, "model"), "(built-in default model)");
  EXPECT_EQ(omni::config::option_value(o, "vae"), "(from --model)");
  // Component files without --model are the model: no built-in model, nothing from --model.
  GenerateOptions f = omni::config::resolve_options(parse({"--prompt", "x", "--transformer", "t.safetensors"}), "");
  EXPECT_EQ(omni::config::option_value(f, "model"), "(none: the component files)");
  EXPECT_EQ(omni::config::option_value(f, "vae"), "(none)");
  EXPECT_EQ(omni::config::option_value(f, "transformer"), "t.safetensors");
  EXPECT_EQ(omni::config::option_value(o, "device"), "auto");
  EXPECT_EQ(omni::config::option_value(o, "height"), "720");
  // Choice options are typed from the parse on, and read back by their table's names.
  GenerateOptions c =
      omni::config::resolve_options(parse({"--sample-solver", "euler", "--step-cache", "fbcache", "--dtype", "float32",
                                           "--task", "ti2v", "--layout", "manual", "--log-level", "warning"}),
                                    "");
  EXPECT_EQ(c.sample_solver, omni::sched::Solver::kEuler);
  EXPECT_EQ(c.step_cache, omni::pipeline::StepCacheMode::kFirstBlock);
  EXPECT_EQ(c.dtype, c10::ScalarType::Float);
  EXPECT_EQ(c.task, omni::config::TaskChoice::kTI2V);
  EXPECT_EQ(c.layout, omni::config::LayoutMode::kManual);
  EXPECT_EQ(c.log_level, omni::log::Level::kWarn);
  EXPECT_EQ(omni::config::option_json(c, "sample-solver").get<std::string>(), "euler");
  EXPECT_EQ(omni::config::option_value(c, "dtype"), "float32");
  EXPECT_EQ(omni::config::option_value(c, "log-level"), "warn");
  EXPECT_STREQ(omni::config::name_of(c.task), "ti2v");
  // The provenance is a kind with its detail; only the user's own layers count as set by the user.
  EXPECT_EQ(c.sources.at("dtype").kind, omni::config::Source::kFlag);
  EXPECT_TRUE(omni::config::set_by_user(c, "dtype"));
  EXPECT_FALSE(omni::config::set_by_user(c, "height"));
  // Every option of the table has a getter: the sidecar can list them all.
  for (const auto& spec : omni::config::option_table()) EXPECT_NO_THROW(omni::config::option_json(o, spec.name));
}

TEST(Options, LoraSpecsFileAndScale) {
  using omni::config::parse_lora_spec;
  auto s = parse_lora_spec("a.safetensors", "--lora");
  EXPECT_EQ(s.path, "a.safetensors");
  EXPECT_DOUBLE_EQ(s.scale, 1.0);
  s = parse_lora_spec("dir/a.safetensors:0.75", "--lora");
  EXPECT_EQ(s.path, "dir/a.safetensors");
  EXPECT_DOUBLE_EQ(s.scale, 0.75);
  s = parse_lora_spec("x:y/a.safetensors:-1.5e0", "--lora");  // only the last ':' and only before a number
  EXPECT_EQ(s.path, "x:y/a.safetensors");
  EXPECT_DOUBLE_EQ(s.scale, -1.5);
  s = parse_lora_spec("host:lora", "--lora");
  EXPECT_EQ(s.path, "host:lora");
  EXPECT_DOUBLE_EQ(s.scale, 1.0);
  EXPECT_NE(usage_error([] { parse_lora_spec("a.safetensors:1.2.3", "--lora"); }).find("--lora"), std::string::npos);
}

TEST(Options, LoraListsFromFlagsAndYamlReplaceLowerLayers) {
  std::string cfg =
      write_temp("lora.yaml", "lora:\n  - a.safetensors:0.5\n  - b.safetensors\nlora-2: c.safetensors:2\n");
  GenerateOptions o = omni::config::resolve_options(parse({"--config", cfg}), "wan2.2-t2v-a14b");
  ASSERT_EQ(o.lora.size(), 2u);
  EXPECT_EQ(o.lora[0].path, "a.safetensors");
  EXPECT_DOUBLE_EQ(o.lora[0].scale, 0.5);
  EXPECT_EQ(o.lora[1].path, "b.safetensors");
  EXPECT_DOUBLE_EQ(o.lora[1].scale, 1.0);
  ASSERT_EQ(o.lora_2.size(), 1u);
  EXPECT_DOUBLE_EQ(o.lora_2[0].scale, 2.0);
  EXPECT_EQ(omni::config::option_value(o, "lora"), "a.safetensors:0.5, b.safetensors:1.0");
  EXPECT_EQ(omni::config::option_json(o, "lora-2").dump(), R"([{"path":"c.safetensors","scale":2.0}])");
  // Repeated flags keep their order and replace the config file's list.
  o = omni::config::resolve_options(parse({"--config", cfg, "--lora", "x.safetensors", "--lora", "y.safetensors:0.1"}),
                                    "wan2.2-t2v-a14b");
  ASSERT_EQ(o.lora.size(), 2u);
  EXPECT_EQ(o.lora[0].path, "x.safetensors");
  EXPECT_EQ(o.lora[1].path, "y.safetensors");
  EXPECT_EQ(o.sources.at("lora").str(), "flag");
  EXPECT_EQ(o.lora_2.size(), 1u);  // still the file's
  // No LoRA by default; a mapping is not a list.
  EXPECT_TRUE(omni::config::resolve_options(parse({}), "").lora.empty());
  std::string bad = write_temp("lora-bad.yaml", "lora: {a: 1}\n");
  EXPECT_NE(usage_error([&] {
              omni::config::resolve_options(parse({"--config", bad}), "");
            }).find("or a list"),
            std::string::npos);
}

namespace omni::config {
namespace {

// --help in sections (issue 46): every option in exactly one section; the short help under 60 lines, one line
// per listed option, the examples and where the manual is; --help SECTION and --help-all describe every option of
// theirs in full; an unknown section is a usage error naming the sections.
TEST(Help, EveryOptionInOneSectionAndTheShortHelpFits) {
  std::map<std::string, int> seen;
  for (const auto& section : help_section_options())
    for (const auto& name : section) ++seen[name];
  for (const auto& spec : option_table()) EXPECT_EQ(seen[spec.name], 1) << "--" << spec.name;
  EXPECT_EQ(seen.size(), option_table().size());

  const char* argv[] = {"omni-generate", "--help"};
  const CommandLine cli = parse_command_line(2, argv);
  ASSERT_TRUE(cli.help);
  const std::string& text = cli.help_text;
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 60);
  for (const char* part : {"Model and weights", "Parallelism", "Examples:", "mpirun -np 4 omni-generate",
                           "docs/troubleshooting.md", "--help-all", "--use-hsdp", "[preset]"})
    EXPECT_NE(text.find(part), std::string::npos) << part;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 120u) << line;

  const char* all[] = {"omni-generate", "--help-all"};
  const std::string everything = parse_command_line(2, all).help_text;
  for (const auto& spec : option_table()) {
    EXPECT_NE(everything.find("  --" + spec.name + (spec.is_flag ? "\n" : " ")), std::string::npos) << spec.name;
  }
  const char* one[] = {"omni-generate", "--help", "memory"};
  const std::string memory = parse_command_line(3, one).help_text;
  EXPECT_NE(memory.find("--fp8-matmul"), std::string::npos);
  EXPECT_EQ(memory.find("--prompt"), std::string::npos);
  const char* bad[] = {"omni-generate", "--help", "gpus"};
  try {
    parse_command_line(3, bad);
    ADD_FAILURE() << "--help gpus was accepted";
  } catch (const omni::Error& e) {
    EXPECT_EQ(e.code(), omni::ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("model, video, sampling, parallel, memory, outputs, debug"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace omni::config
