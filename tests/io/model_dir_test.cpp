// read_json errors, --model resolution (local folder and offline Hugging Face cache) and model_index.json parsing.
#include "io/model_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "io/json_file.h"
#include "io_test_util.h"

namespace omni::io {
namespace {

using testing::expect_input_error;
using testing::make_dirs;
using testing::TempDir;
using testing::write_file;

const std::string kRef = std::string(OMNI_TEST_DATA_DIR) + "/reference/";

// Sets (or unsets, for nullptr) an environment variable for the scope of the object, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

TEST(JsonFile, ReadsAndReportsErrors) {
  TempDir dir;
  write_file(dir / "ok.json", R"({"a": [1, 2], "b": null})");
  nlohmann::json j = read_json(dir / "ok.json");
  EXPECT_EQ(j["a"][1].get<int>(), 2);
  EXPECT_TRUE(j["b"].is_null());

  expect_input_error([&] { read_json(dir / "missing.json"); }, {dir / "missing.json", "No such file"});
  expect_input_error([&] { read_json(dir.path()); }, {dir.path(), "directory"});
  write_file(dir / "bad.json", "{\"a\": 1,\n \"b\": }");
  // The parser stops at the '}' on line 2: byte 16 (1-based).
  expect_input_error([&] { read_json(dir / "bad.json"); }, {dir / "bad.json", "invalid JSON at byte 16", "line 2"});
  write_file(dir / "empty.json", "");
  expect_input_error([&] { read_json(dir / "empty.json"); }, {dir / "empty.json", "invalid JSON"});
}

TEST(ModelIndex, FixtureCases) {
  ModelIndex t2v = read_model_index(kRef + "t2v-a14b-tiny/model/model_index.json");
  EXPECT_EQ(t2v.class_name, "WanPipeline");
  EXPECT_FALSE(t2v.image_to_video);
  ASSERT_TRUE(t2v.boundary_ratio.has_value());
  EXPECT_DOUBLE_EQ(*t2v.boundary_ratio, 0.875);
  EXPECT_FALSE(t2v.expand_timesteps);
  EXPECT_EQ(t2v.components.size(), 6u);
  EXPECT_EQ(t2v.components.at("transformer_2").class_name, "WanTransformer3DModel");
  EXPECT_EQ(t2v.components.at("vae").library, "diffusers");
  EXPECT_EQ(t2v.components.at("text_encoder").library, "transformers");
  EXPECT_EQ(t2v.components.at("scheduler").class_name, "UniPCMultistepScheduler");

  ModelIndex i2v = read_model_index(kRef + "i2v-a14b-tiny/model/model_index.json");
  EXPECT_EQ(i2v.class_name, "WanImageToVideoPipeline");
  EXPECT_TRUE(i2v.image_to_video);
  EXPECT_DOUBLE_EQ(i2v.boundary_ratio.value_or(-1), 0.9);
  EXPECT_FALSE(i2v.has("image_encoder"));  // [null, null]
  EXPECT_FALSE(i2v.has("image_processor"));
  EXPECT_TRUE(i2v.has("transformer_2"));

  ModelIndex ti2v = read_model_index(kRef + "ti2v-5b-tiny/model/model_index.json");
  EXPECT_EQ(ti2v.class_name, "WanPipeline");
  EXPECT_FALSE(ti2v.boundary_ratio.has_value());
  EXPECT_TRUE(ti2v.expand_timesteps);
  EXPECT_FALSE(ti2v.has("transformer_2"));
  EXPECT_EQ(ti2v.components.size(), 5u);
}

nlohmann::json t2v_index() {
  return read_json(kRef + "t2v-a14b-tiny/model/model_index.json");
}

TEST(ModelIndex, UnsupportedContentsAreInputErrors) {
  const std::string p = "/x/model_index.json";
  auto with = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = t2v_index();
    edit(j);
    return j;
  };
  expect_input_error([&] { parse_model_index(with([](auto& j) { j["_class_name"] = "FluxPipeline"; }), p); },
                     {p, "unsupported pipeline class 'FluxPipeline'"});
  expect_input_error([&] { parse_model_index(with([](auto& j) { j.erase("_class_name"); }), p); }, {p, "_class_name"});
  expect_input_error(
      [&] {
        parse_model_index(with([](auto& j) { j["vae"] = {"diffusers", "AutoencoderKL"}; }), p);
      },
      {p, "component 'vae'", "unsupported class 'AutoencoderKL'", "AutoencoderKLWan"});
  expect_input_error(
      [&] {
        parse_model_index(with([](auto& j) { j["image_encoder"] = {"transformers", "SiglipVisionModel"}; }), p);
      },
      {p, "component 'image_encoder'", "unsupported class 'SiglipVisionModel'", "CLIPVisionModel"});
  // Wan2.1's image models' CLIP (the transformer's image branch decides whether it fits: pipeline::ModelSpec).
  EXPECT_TRUE(parse_model_index(with([](auto& j) {
                                  j["image_encoder"] = {"transformers", "CLIPVisionModel"};
                                  j["image_processor"] = {"transformers", "CLIPImageProcessor"};
                                }),
                                p)
                  .has("image_encoder"));
  expect_input_error(
      [&] {
        parse_model_index(with([](auto& j) { j["scheduler"] = {"diffusers", "DDIMScheduler"}; }), p);
      },
      {p, "component 'scheduler'", "DDIMScheduler"});
  // A component the Wan pipelines do not take is ignored (diffusers' from_pretrained ignores it too).
  EXPECT_FALSE(parse_model_index(with([](auto& j) { j["controlnet"] = {"diffusers", "X"}; }), p).has("controlnet"));
  expect_input_error(
      [&] {
        parse_model_index(with([](auto& j) { j["vae"] = {nullptr, nullptr}; }), p);
      },
      {p, "required component 'vae'"});
  expect_input_error(
      [&] {
        parse_model_index(with([](auto& j) { j["transformer_2"] = {nullptr, nullptr}; }), p);
      },
      {p, "boundary_ratio", "transformer_2"});
  expect_input_error([&] { parse_model_index(with([](auto& j) { j["boundary_ratio"] = "high"; }), p); },
                     {p, "boundary_ratio"});
  expect_input_error([&] { parse_model_index(with([](auto& j) { j["expand_timesteps"] = 1; }), p); },
                     {p, "expand_timesteps"});

  // Accepted variants: the fast tokenizer, flow-match Euler, boundary_ratio absent, expand_timesteps absent.
  ModelIndex ok = parse_model_index(with([](auto& j) {
                                      j["tokenizer"] = {"transformers", "T5TokenizerFast"};
                                      j["scheduler"] = {"diffusers", "FlowMatchEulerDiscreteScheduler"};
                                      j.erase("boundary_ratio");
                                      j.erase("expand_timesteps");
                                    }),
                                    p);
  EXPECT_FALSE(ok.boundary_ratio.has_value());
  EXPECT_FALSE(ok.expand_timesteps);
  EXPECT_EQ(ok.components.at("scheduler").class_name, "FlowMatchEulerDiscreteScheduler");
}

TEST(ModelDir, LocalFolder) {
  const std::string root = kRef + "i2v-a14b-tiny/model";
  ModelDir md = ModelDir::open(root + "/");
  EXPECT_EQ(md.root(), root);
  EXPECT_TRUE(md.index().image_to_video);
  EXPECT_EQ(md.component_dir("transformer_2"), root + "/transformer_2");
  EXPECT_EQ(md.component_config_path("scheduler"), root + "/scheduler/scheduler_config.json");
  EXPECT_EQ(md.component_config_path("vae"), root + "/vae/config.json");
  EXPECT_EQ(md.component_config("scheduler")["_class_name"].get<std::string>(), "UniPCMultistepScheduler");
  EXPECT_EQ(md.component_config("transformer")["_class_name"].get<std::string>(), "WanTransformer3DModel");
  expect_input_error([&] { md.component_dir("image_encoder"); }, {"model_index.json", "'image_encoder'"});

  TempDir dir;
  expect_input_error([&] { ModelDir::open(dir.path()); },
                     {dir.path(), "no model_index.json", "nor a Wan2.2 original one"});
  // A component listed in the index whose folder is missing.
  write_file(dir / "model_index.json", t2v_index().dump());
  ModelDir partial(dir.path());
  expect_input_error([&] { partial.component_dir("vae"); }, {dir / "vae", "does not exist"});
}

// Builds <cache>/models--ORG--NAME/{refs/main, snapshots/<rev>/model_index.json} like huggingface_hub does.
void make_cached_model(const std::string& cache, const std::string& org, const std::string& name,
                       const std::string& revision) {
  const std::string repo = cache + "/models--" + org + "--" + name;
  make_dirs(repo + "/refs");
  make_dirs(repo + "/snapshots/" + revision);
  write_file(repo + "/refs/main", revision);  // huggingface_hub writes no trailing newline
  write_file(repo + "/snapshots/" + revision + "/model_index.json", t2v_index().dump());
}

TEST(ModelDir, HuggingFaceCacheLookup) {
  TempDir dir;
  const std::string rev = "0123456789abcdef0123456789abcdef01234567";
  make_cached_model(dir / "hubcache", "Wan-AI", "Wan2.2-T2V-A14B-Diffusers", rev);
  make_cached_model(dir / "hfhome/hub", "Wan-AI", "Wan2.2-TI2V-5B-Diffusers", rev);
  make_cached_model(dir / "home/.cache/huggingface/hub", "Wan-AI", "Wan2.2-I2V-A14B-Diffusers", rev);
  ScopedEnv home("HOME", (dir / "home").c_str());

  {  // $HF_HUB_CACHE wins over $HF_HOME.
    ScopedEnv a("HF_HUB_CACHE", (dir / "hubcache").c_str());
    ScopedEnv b("HF_HOME", (dir / "hfhome").c_str());
    EXPECT_EQ(hf_hub_cache_dir(), dir / "hubcache");
    EXPECT_EQ(resolve_model_path("Wan-AI/Wan2.2-T2V-A14B-Diffusers"),
              dir / ("hubcache/models--Wan-AI--Wan2.2-T2V-A14B-Diffusers/snapshots/" + rev));
    ModelDir md = ModelDir::open("Wan-AI/Wan2.2-T2V-A14B-Diffusers");
    EXPECT_EQ(md.index().class_name, "WanPipeline");
  }
  {  // Then $HF_HOME/hub.
    ScopedEnv a("HF_HUB_CACHE", nullptr);
    ScopedEnv b("HF_HOME", (dir / "hfhome").c_str());
    EXPECT_EQ(resolve_model_path("Wan-AI/Wan2.2-TI2V-5B-Diffusers"),
              dir / ("hfhome/hub/models--Wan-AI--Wan2.2-TI2V-5B-Diffusers/snapshots/" + rev));
  }
  {  // Then ~/.cache/huggingface/hub; refs/main with a trailing newline is fine.
    ScopedEnv a("HF_HUB_CACHE", nullptr);
    ScopedEnv b("HF_HOME", nullptr);
    write_file(dir / "home/.cache/huggingface/hub/models--Wan-AI--Wan2.2-I2V-A14B-Diffusers/refs/main", rev + "\n");
    EXPECT_EQ(resolve_model_path("Wan-AI/Wan2.2-I2V-A14B-Diffusers"),
              dir / ("home/.cache/huggingface/hub/models--Wan-AI--Wan2.2-I2V-A14B-Diffusers/snapshots/" + rev));
  }
}

// Wan-AI's original repositories (Wan-AI/Wan2.2-T2V-A14B, no model_index.json) resolve from the cache too; a
// snapshot of neither layout is an error naming both.
TEST(ModelDir, HuggingFaceCacheOriginalLayout) {
  TempDir dir;
  const std::string rev = "89abcdef0123456789abcdef0123456789abcdef";
  const std::string repo = dir / "hub/models--Wan-AI--Wan2.2-T2V-A14B";
  make_dirs(repo + "/refs");
  make_dirs(repo + "/snapshots/" + rev + "/high_noise_model");
  write_file(repo + "/refs/main", rev);
  ScopedEnv a("HF_HUB_CACHE", (dir / "hub").c_str());
  expect_input_error([&] { resolve_model_path("Wan-AI/Wan2.2-T2V-A14B"); },
                     {"has neither a model_index.json (diffusers) nor a WanModel config.json"});
  write_file(repo + "/snapshots/" + rev + "/high_noise_model/config.json",
             R"({"_class_name": "WanModel", "dim": 5120, "in_dim": 16, "num_heads": 40})");
  EXPECT_EQ(resolve_model_path("Wan-AI/Wan2.2-T2V-A14B"), repo + "/snapshots/" + rev);
}

TEST(ModelDir, MissingModelListsEveryPlace) {
  TempDir dir;
  ScopedEnv a("HF_HUB_CACHE", nullptr);
  ScopedEnv b("HF_HOME", (dir / "hfhome").c_str());
  const std::string repo = dir / "hfhome/hub/models--Wan-AI--Missing";
  expect_input_error([&] { resolve_model_path("Wan-AI/Missing"); },
                     {"Wan-AI/Missing", "model not found", "Wan-AI/Missing (local folder: does not exist)", repo,
                      "$HF_HOME/hub", "huggingface-cli download"});

  // Repository folder without refs/main, then a ref naming a snapshot that is not there.
  make_dirs(repo + "/snapshots");
  expect_input_error([&] { resolve_model_path("Wan-AI/Missing"); }, {repo + "/refs/main", "no main revision"});
  make_dirs(repo + "/refs");
  write_file(repo + "/refs/main", "deadbeef");
  expect_input_error([&] { resolve_model_path("Wan-AI/Missing"); }, {repo + "/snapshots/deadbeef", "missing"});
  // Snapshot present but incomplete.
  make_dirs(repo + "/snapshots/deadbeef");
  expect_input_error([&] { resolve_model_path("Wan-AI/Missing"); },
                     {repo + "/snapshots/deadbeef", "has neither a model_index.json"});

  // A path that is not a repo id: only the local folder is looked at, and the message says so.
  expect_input_error([&] { resolve_model_path(dir / "no/such/folder"); },
                     {dir / "no/such/folder", "not an ORG/NAME model id"});
  testing::expect_error([&] { resolve_model_path(""); }, ExitCode::kUsage, {"--model"});
}

}  // namespace
}  // namespace omni::io

// The config-file rule (docs/DESIGN.md section 5): asked-for and declared keys are known, '_' keys are
// bookkeeping, the rest is listed (sorted, as nlohmann::json keeps keys); the warning is one line per file, said once.
namespace omni::io {
namespace {

TEST(ConfigFile, UnknownKeysAreListedAndWarnedOnce) {
  const nlohmann::json j = {{"_class_name", "X"},
                            {"_name_or_path", "org/name"},
                            {"a", 1},
                            {"clip_output", true},
                            {"dropout", 0.0},
                            {"b", nullptr},
                            {"zzz", "new"}};
  ConfigFile file(j, "some/config.json", "Reader");
  EXPECT_EQ(file.int_or("a", 5), 1);
  EXPECT_EQ(file.find("b"), nullptr);       // null reads as absent
  EXPECT_NE(file.value("b"), nullptr);      // but is there for keys where null is a bad value
  EXPECT_EQ(file.int_or("missing", 7), 7);  // asking for an absent key is fine
  file.known({"dropout"});
  EXPECT_EQ(file.unknown_keys(), (std::vector<std::string>{"clip_output", "zzz"}));

  ::testing::internal::CaptureStderr();
  file.warn_unknown();
  file.warn_unknown();  // the same file read again in the same run
  ConfigFile other(j, "other/config.json", "Reader");
  other.warn_unknown();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("some/config.json: ignoring keys 'clip_output', 'zzz', unknown to omni-generate's Reader"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("some/config.json"), err.rfind("some/config.json")) << "warned twice: " << err;
  EXPECT_NE(err.find("other/config.json: ignoring keys 'a', 'b', 'clip_output', 'dropout', 'zzz'"), std::string::npos)
      << err;

  expect_input_error([] { ConfigFile(nlohmann::json::array(), "list.json", "Reader"); }, {"list.json", "JSON object"});
  ConfigFile bad({{"n", "x"}}, "bad.json", "Reader");
  expect_input_error([&] { bad.int_or("n", 0); }, {"bad.json", "'n' must be an integer"});
}

}  // namespace
}  // namespace omni::io
