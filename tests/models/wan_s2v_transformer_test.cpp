// Wan2.2-S2V's transformer (WanModel_S2V under its original names) against Wan2.2's own code (@ 42bf4cfa, float32
// CPU) on the tiny random checkpoint tools/reference/s2v/record_s2v.py writes: three forwards (a clip with motion
// tokens and pose latents; the first clip, motion dropped, zero pose; the guidance branch with the negative context
// and zero audio), every recorded intermediate compared with the model's dump of the same name. The recordings are
// tests/data/reference/s2v-tiny (a subset of the recorder's intermediates, to stay small); $OMNI_S2V_REFERENCE may
// name a full recorder output folder instead (--out of record_s2v.py).
#include "models/wan_s2v_transformer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor_dump.h"
#include "io/safetensors.h"
#include "tensor_check.h"
#include "test_util.h"

namespace omni::models {
namespace {

using test_util::kModelFloat32RelTol;
using test_util::max_abs_err;
using test_util::max_rel_err;

std::string reference_dir() {
  const char* env = std::getenv("OMNI_S2V_REFERENCE");
  return env && *env ? std::string(env) : test_util::reference_dir() + "/s2v-tiny";
}

const WanS2VTransformer& model() {
  static const auto m = WanS2VTransformer::load(reference_dir() + "/ckpt", at::kFloat);
  return *m;
}

// A case's recorded tensors; an input the committed data stores once, in forward_clip1 (the cases share their
// latents, reference, motion and pose), is read from there.
class Recording {
 public:
  explicit Recording(const std::string& name)
      : file_(reference_dir() + "/forward_" + name + ".safetensors"),
        clip1_(reference_dir() + "/forward_clip1.safetensors") {}
  const io::SafetensorsFile& file() const { return file_; }
  at::Tensor input(const std::string& name) const {
    return file_.contains(name) ? file_.read(name) : clip1_.read(name);
  }

 private:
  io::SafetensorsFile file_;
  io::SafetensorsFile clip1_;
};

WanS2VInputs inputs_of(const Recording& rec, bool drop_motion) {
  WanS2VInputs in;
  in.latents = rec.input("in.x").unsqueeze(0);         // [16, T, h, w] -> [1, 16, T, h, w]
  in.timestep = rec.input("in.t");                     // [1] int64
  in.context = rec.input("in.context").unsqueeze(0);   // [L, 4096] -> [1, L, 4096]
  in.ref_latents = rec.input("in.ref_latents");        // [1, 16, 1, h, w]
  in.motion_latents = rec.input("in.motion_latents");  // [1, 16, 19, h, w]
  in.cond_states = rec.input("in.cond_states");        // [1, 16, T, h, w]
  in.audio = rec.input("in.audio_input");              // [1, 25, C, 4T]
  in.drop_motion_frames = drop_motion;
  in.motion_frames = 73;  // the recorder's motion_frames [73, 19]
  return in;
}

// The forward with dumps on: the output and every dump by name.
std::pair<at::Tensor, std::map<std::string, at::Tensor>> run(const WanS2VInputs& in) {
  debug::take_dumps();
  debug::enable_dumps(true);
  at::Tensor out;
  try {
    out = model().forward(in);
  } catch (...) {
    debug::enable_dumps(false);
    throw;
  }
  debug::enable_dumps(false);
  std::map<std::string, at::Tensor> dumps;
  for (auto& [name, t] : debug::take_dumps()) dumps[name] = t;
  return {out, dumps};
}

struct Case {
  const char* name;
  bool drop_motion;
};

class S2VForward : public ::testing::TestWithParam<Case> {};

TEST_P(S2VForward, MatchesWan) {
  const Case c = GetParam();
  const Recording recording(c.name);
  const io::SafetensorsFile& rec = recording.file();
  const auto [out, dumps] = run(inputs_of(recording, c.drop_motion));
  const auto want = rec.read("out").unsqueeze(0);  // [16, T, h, w] -> [1, 16, T, h, w]
  ASSERT_EQ(out.sizes(), want.sizes());
  std::printf("[%s] out: max abs %.3g, relative %.3g\n", c.name, max_abs_err(out, want), max_rel_err(out, want));
  EXPECT_LT(max_rel_err(out, want), kModelFloat32RelTol);
  // Every recorded intermediate (the inputs aside) has a dump of its name and agrees with it.
  int compared = 0;
  for (const auto& name : rec.names()) {
    if (name == "out" || name.rfind("in.", 0) == 0) continue;
    const auto it = dumps.find(name);
    ASSERT_NE(it, dumps.end()) << c.name << ": no dump named " << name;
    const auto recorded = rec.read(name);
    ASSERT_EQ(it->second.sizes(), recorded.sizes()) << c.name << ": " << name;
    if (recorded.scalar_type() == at::kLong) {
      EXPECT_TRUE(it->second.equal(recorded)) << c.name << ": " << name << " differs";
    } else {
      const double rel = max_rel_err(it->second, recorded);
      std::printf("[%s] %-22s max abs %.3g, relative %.3g\n", c.name, name.c_str(), max_abs_err(it->second, recorded),
                  rel);
      EXPECT_LT(rel, kModelFloat32RelTol) << c.name << ": " << name;
    }
    ++compared;
  }
  std::printf("[%s] %d recorded intermediates compared\n", c.name, compared);
}

INSTANTIATE_TEST_SUITE_P(Cases, S2VForward,
                         ::testing::Values(Case{"clip1", false}, Case{"clip0", true}, Case{"clip1_uncond", false}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(S2V, AudioAndMotionReachTheOutput) {
  const Recording rec("clip1");
  const auto want = rec.file().read("out").unsqueeze(0);
  auto in = inputs_of(rec, false);
  in.audio = in.audio.flip(3);  // other audio, the same everything else
  EXPECT_GT(max_rel_err(model().forward(in), want), 100 * kModelFloat32RelTol);
  in = inputs_of(rec, false);
  in.motion_latents = in.motion_latents.flip(2);
  EXPECT_GT(max_rel_err(model().forward(in), want), 100 * kModelFloat32RelTol);
}

TEST(S2V, UnitsFollowTheBlocks) {
  // Tiny model: 3 blocks, audio injected after blocks 0 and 2.
  const auto& m = model();
  ASSERT_EQ(m.num_blocks(), 3);
  const std::vector<const Module*> units = m.units();
  ASSERT_EQ(units.size(), 5u);
  EXPECT_EQ(units[0], &m.block(0));
  EXPECT_EQ(units[1], m.injector_after(0));
  EXPECT_EQ(units[2], &m.block(1));
  EXPECT_EQ(units[3], &m.block(2));
  EXPECT_EQ(units[4], m.injector_after(2));
  EXPECT_EQ(m.injector_after(1), nullptr);
  EXPECT_EQ(m.block_unit(0), 0);
  EXPECT_EQ(m.injector_unit(0), 1);
  EXPECT_EQ(m.block_unit(1), 2);
  EXPECT_EQ(m.injector_unit(1), -1);
  EXPECT_EQ(m.block_unit(2), 3);
  EXPECT_EQ(m.injector_unit(2), 4);
  // An injector's weights keep the checkpoint's names (its index in them), under "audio_injector".
  std::vector<ParamRef> params;
  m.injector_after(2)->collect("audio_injector.", params);
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"audio_injector.injector.1.norm_q.weight",
                                             "audio_injector.injector.1.norm_k.weight",
                                             "audio_injector.injector.1.q.weight", "audio_injector.injector.1.q.bias",
                                             "audio_injector.injector.1.k.weight", "audio_injector.injector.1.k.bias",
                                             "audio_injector.injector.1.v.weight", "audio_injector.injector.1.v.bias",
                                             "audio_injector.injector.1.o.weight", "audio_injector.injector.1.o.bias",
                                             "audio_injector.injector_adain_layers.1.linear.weight",
                                             "audio_injector.injector_adain_layers.1.linear.bias"}));
}

TEST(S2V, RefusesMismatchedAudio) {
  const Recording rec("clip1");
  auto in = inputs_of(rec, false);
  in.audio = in.audio.narrow(3, 0, in.audio.size(3) - 4);  // one latent frame of audio short
  EXPECT_THROW(model().forward(in), omni::Error);
}

}  // namespace
}  // namespace omni::models
