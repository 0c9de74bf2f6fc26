// Wan2.2-S2V's transformer (models::WanS2VTransformer) under the HSDP engine, mpirun at 2 and 4 ranks: sharding
// moves data and nothing else, so on each recorded case of tests/data/reference/s2v-tiny (clip1: motion tokens and
// pose; clip0: motion dropped; clip1_uncond: negative context, zero audio) the sharded forward must equal the
// same model loaded whole on this rank bit for bit (max abs diff 0, hsdp_test's bound), in float32 with each layout
// of this world (2: shard 2; 4: shard 4 and replicate 2 x shard 2) and in bfloat16 with the largest shard. Its
// units are the root, then each block followed by its audio injector (blocks_of: units()); the forward must gather
// every unit once, in that order, with RecordingHooks' prefetch schedule, and leave no weight in the model's slots
// (so nothing ran on whole weights). The float32 sharded outputs also match Wan2.2's recorded ones within the model
// test's bound, so both sides are the real model.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/device_mesh.h"
#include "hsdp_test_util.h"
#include "io/safetensors.h"
#include "models/hsdp_sharding.h"
#include "models/wan_s2v_transformer.h"

namespace {

using hsdp_test::Checks;
using hsdp_test::CountingGroup;
using hsdp_test::max_abs_err;
using hsdp_test::RecordingHooks;
using omni::models::UnitHooks;
using omni::models::WanS2VInputs;
using omni::models::WanS2VTransformer;

const std::string kDir = std::string(OMNI_TEST_DATA_DIR) + "/reference/s2v-tiny";

struct Case {
  const char* name;
  bool drop_motion;  // clip0: the first clip, no motion tokens
};
const Case kCases[] = {{"clip1", false}, {"clip0", true}, {"clip1_uncond", false}};

// A case's inputs as tests/models/wan_s2v_transformer_test.cpp builds them: the inputs the cases share are stored
// once, in forward_clip1.
WanS2VInputs inputs_of(const Case& c) {
  const omni::io::SafetensorsFile file(kDir + "/forward_" + std::string(c.name) + ".safetensors");
  const omni::io::SafetensorsFile clip1(kDir + "/forward_clip1.safetensors");
  auto input = [&](const std::string& name) { return file.contains(name) ? file.read(name) : clip1.read(name); };
  WanS2VInputs in;
  in.latents = input("in.x").unsqueeze(0);         // [16, T, h, w] -> [1, 16, T, h, w]
  in.timestep = input("in.t");                     // [1]
  in.context = input("in.context").unsqueeze(0);   // [L, text_dim] -> [1, L, text_dim]
  in.ref_latents = input("in.ref_latents");        // [1, 16, 1, h, w]
  in.motion_latents = input("in.motion_latents");  // [1, 16, M, h, w]
  in.cond_states = input("in.cond_states");        // [1, 16, T, h, w]
  in.audio = input("in.audio_input");              // [1, 25, C, 4T]
  in.drop_motion_frames = c.drop_motion;
  in.motion_frames = 73;  // the recorder's motion_frames
  return in;
}

at::Tensor recorded_out(const Case& c) {
  return omni::io::SafetensorsFile(kDir + "/forward_" + std::string(c.name) + ".safetensors")
      .read("out")
      .unsqueeze(0);  // [16, T, h, w] -> [1, 16, T, h, w]
}

// The hook sequence forward() must issue: the root around everything, each unit once in forward order.
std::vector<std::string> expected_events(int units) {
  const std::string root = std::to_string(UnitHooks::kRootUnit);
  std::vector<std::string> out{"before(" + root + ")"};
  for (int u = 0; u < units; ++u) {
    out.push_back("before(" + std::to_string(u) + ")");
    out.push_back("after(" + std::to_string(u) + ")");
  }
  out.push_back("after(" + root + ")");
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

void s2v_checks(Checks& checks, int world) {
  const auto layouts = hsdp_test::test_layouts(world);
  std::vector<WanS2VInputs> inputs;
  for (const Case& c : kCases) inputs.push_back(inputs_of(c));
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    const char* dtag = dtype == at::kFloat ? "f32" : "bf16";
    // The unsharded reference, loaded whole on this rank.
    std::vector<at::Tensor> want;
    {
      const auto whole = WanS2VTransformer::load(kDir + "/ckpt", dtype);
      for (const auto& in : inputs) want.push_back(whole->forward(in));
    }
    // bfloat16 (float32 modulations, time embedding, head and audio encoder beside it: two dtype groups per unit)
    // with the largest shard only, as hsdp_test.
    const size_t n_layouts = dtype == at::kFloat ? layouts.size() : 1;
    for (size_t li = 0; li < n_layouts; ++li) {
      const auto [rep, shard] = layouts[li];
      const std::string tag = "S2V " + hsdp_test::layout_name(rep, shard) + " " + dtag + " ";
      omni::dist::DeviceMesh mesh(hsdp_test::hsdp_layout(rep, shard, world), omni::dist::Communicator::world());
      CountingGroup group(mesh.shard(), omni::dist::make_process_group(mesh.shard(), at::kCPU));
      auto pool = std::make_shared<omni::hsdp::BufferPool>(at::kCPU);
      auto stats = std::make_shared<omni::hsdp::HsdpStats>();
      // The pipeline's calls (lib/pipeline/wan_pipeline.cpp): an empty model, its units, each rank reading its
      // own slices.
      WanS2VTransformer model(omni::models::WanS2VTransformerConfig::load(kDir + "/ckpt"), dtype);
      const std::vector<const omni::models::Module*> units = omni::models::blocks_of(model);
      const auto sharded =
          omni::models::shard_model("transformer", model, units, omni::io::Checkpoint::open(kDir + "/ckpt"), &group,
                                    dtype, at::kCPU, pool, stats);
      // The tiny model: 3 blocks, injectors after blocks 0 and 2.
      checks.equal(tag + "HSDP units: 3 blocks + 2 audio injectors", sharded->num_blocks(), 5);
      checks.equal(tag + "shard x resident bytes == gathered bytes",
                   static_cast<double>(shard) * sharded->resident_bytes(), static_cast<double>(sharded->full_bytes()));
      for (size_t k = 0; k < inputs.size(); ++k) {
        const std::string ct = tag + kCases[k].name + ": ";
        RecordingHooks hooks(sharded.get(), &group);
        const at::Tensor out = model.forward(inputs[k], &hooks);
        checks.err(ct + "output == one rank's", max_abs_err(out, want[k]));
        checks.truth(ct + "every unit gathered once, in forward order",
                     hooks.events == expected_events(static_cast<int>(units.size())), join(hooks.events));
        checks.truth(ct + "prefetch order at every hook", hooks.failures.empty(), join(hooks.failures));
        checks.equal(ct + "weight slots empty after the forward", model.parameter_bytes(), 0);
        if (dtype == at::kFloat && li == 0) {
          const at::Tensor rec = recorded_out(kCases[k]);
          const double scale = rec.abs().max().item<double>();
          checks.err(ct + "vs Wan2.2's recorded output", max_abs_err(out, rec),
                     omni::test_util::kModelFloat32RelTol * scale, scale);
        }
      }
    }
  }
}

int run_all() {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  Checks checks;
  at::set_num_threads(1);
  s2v_checks(checks, world);
  return checks.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return omni::test_util::mpi_test_main(argc, argv, "hsdp_s2v_test", run_all);
}
