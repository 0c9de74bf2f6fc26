// WanTransformer3DModel::forward with its tokens split by SequenceSplit under mpirun (2 and 4 ranks) against the
// single-rank forward.
//
// A tiny transformer (4 heads of 12, 2 layers) gets the same seeded random weights on every rank; every rank
// runs forward() itself as the reference, then the split forward under each layout the world size allows:
// Ulysses, ring, Ulysses x ring, and with dp / cfg groups beside the sp group. Sequences divisible and not
// divisible by the degree, scalar and per-token timesteps, batch 2. float32 must agree to 1e-5 max abs error;
// bfloat16 is bounded by bfloat16's own error against float32. VACE and Animate (face adapters on shares that
// begin inside a latent frame) likewise. Also: the degree-1 layout is forward() bit for
// bit, the UnitHooks sequence equals forward()'s, the blocks.N dumps of a split run hold the whole sequence
// and equal one rank's, UlyssesAttention alone returns the local attention's rows laid out token-major, and
// heads % ulysses and too-short sequences are usage errors on every rank. Each check's error
// is all-reduced (max); rank 0 prints them and "N passed, N failed".
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor_dump.h"
#include "dist/communicator.h"
#include "dist/device_mesh.h"
#include "dist/parallel_config.h"
#include "models/wan_transformer.h"
#include "mpi_check.h"
#include "pipeline/sequence_parallel.h"
#include "tensor_check.h"

namespace {

using omni::dist::Communicator;
using omni::dist::DeviceMesh;
using omni::models::WanTransformer3DModel;
using omni::models::WanTransformerConfig;
using omni::pipeline::SequenceParallel;

omni::test_util::MpiChecks g_checks;  // the pass/fail table (tests/common/mpi_check.h)
int g_rank = 0;

using omni::test_util::max_abs_err;

WanTransformerConfig tiny_config(int64_t heads) {
  WanTransformerConfig c;
  c.num_attention_heads = heads;
  c.attention_head_dim = 12;
  c.num_layers = 2;
  c.in_channels = 16;
  c.out_channels = 16;
  c.text_dim = 32;
  c.freq_dim = 32;
  c.ffn_dim = 32;
  return c;
}

// Same values on every rank (seeded generator). Weights ~ N(0, 1/fan_in) so activations stay O(1); norm
// weights near 1; modulation tables and biases small.
std::unique_ptr<WanTransformer3DModel> make_model(int64_t heads, at::ScalarType dtype, bool vace = false,
                                                  bool animate = false) {
  WanTransformerConfig config = tiny_config(heads);
  if (vace) {  // VACE blocks paired with both blocks, a context of 8 channels
    config.vace_layers = {0, 1};
    config.vace_in_channels = 8;
  }
  if (animate) {  // Animate: the image branch, pose latents of 16 channels, a face adapter after each block
    config.in_channels = 36;
    config.latent_channels = 16;
    config.image_dim = 20;
    config.added_kv_proj_dim = config.inner_dim();
    config.motion_encoder_size = 8;
    config.motion_encoder_channel_sizes = {{"4", 4}, {"8", 4}};
    config.motion_style_dim = 6;
    config.motion_dim = 3;
    config.motion_encoder_dim = 8;
    config.face_encoder_hidden_dim = 4;
    config.face_encoder_num_heads = 2;
    config.inject_face_latents_blocks = 1;
    config.motion_encoder_batch_size = 3;
  }
  auto model = std::make_unique<WanTransformer3DModel>(config, dtype);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(2024);
  for (const auto& p : model->parameters()) {
    auto r = at::randn(p.shape, gen, at::TensorOptions(at::kFloat));
    const bool norm = p.name.find("norm") != std::string::npos;
    int64_t fan_in = 1;
    for (size_t i = 1; i < p.shape.size(); ++i) fan_in *= p.shape[i];
    at::Tensor t;
    if (norm) {
      t = 1 + 0.1 * r;
    } else if (p.name.find("scale_shift_table") != std::string::npos || p.shape.size() < 2) {
      t = 0.1 * r;
    } else {
      t = r / std::sqrt(static_cast<double>(fan_in));
    }
    *p.tensor = t.to(omni::models::resolve_param_dtype(p.dtype_rule, dtype));
  }
  return model;
}

struct Inputs {
  std::string name;
  at::Tensor hidden, timestep, context;
};

Inputs make_inputs(int64_t f, int64_t h, int64_t w, bool per_token, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t batch = 2, seq = f * (h / 2) * (w / 2);
  Inputs in;
  in.name = "S=" + std::to_string(seq) + (per_token ? " per-token t" : " scalar t");
  in.hidden = at::randn({batch, 16, f, h, w}, gen, at::TensorOptions(at::kFloat));
  in.timestep = per_token ? at::randint(0, 1000, {batch, seq}, gen, at::TensorOptions(at::kLong))
                          : at::tensor(std::vector<int64_t>{700, 120});
  in.context = at::randn({batch, 7, 32}, gen, at::TensorOptions(at::kFloat));
  return in;
}

struct Layout {
  std::string name;
  std::unique_ptr<DeviceMesh> mesh;
  omni::dist::DeviceGroups groups;
  SequenceParallel sp;
};

std::vector<Layout> make_layouts(int world) {
  struct Want {
    int ulysses, ring, cfg;
  };
  std::vector<Want> wants = {{1, 1, 1}};
  if (world == 2) wants.insert(wants.end(), {{2, 1, 1}, {1, 2, 1}});
  if (world == 4) wants.insert(wants.end(), {{2, 2, 1}, {4, 1, 1}, {1, 4, 1}, {2, 1, 1}, {1, 2, 2}});
  std::vector<Layout> out;
  for (const auto& w : wants) {
    omni::dist::ParallelConfig pc;
    pc.ulysses_degree = w.ulysses;
    pc.ring_degree = w.ring;
    pc.cfg_parallel_size = w.cfg;
    auto layout = omni::dist::resolve_layout(pc, world);
    Layout l;
    l.name = "ulysses " + std::to_string(layout.ulysses) + " x ring " + std::to_string(layout.ring) + " (dp " +
             std::to_string(layout.dp) + ", cfg " + std::to_string(layout.cfg) + ")";
    l.mesh = std::make_unique<DeviceMesh>(layout, Communicator::world());
    using omni::dist::GroupKind;
    l.groups = omni::dist::DeviceGroups(*l.mesh, at::kCPU, {GroupKind::kUlysses, GroupKind::kRing, GroupKind::kSp});
    l.sp = SequenceParallel::from_groups(l.groups);
    out.push_back(std::move(l));
  }
  return out;
}

struct RecordingHooks : omni::models::UnitHooks {
  std::vector<int> events;  // unit + 1000 for after()
  void before(int unit) override { events.push_back(unit); }
  void after(int unit) override { events.push_back(unit + 1000); }
};

// call(hooks) with the tokens split over `sp` (degree 1: no split, as the pipeline runs it) and `units` as the
// unit hooks: call runs one forward() with the ForwardHooks it is given.
template <typename Call>
at::Tensor with_split(const SequenceParallel& sp, omni::models::UnitHooks* units, Call call) {
  omni::models::ForwardHooks hooks(units);
  std::unique_ptr<omni::pipeline::SequenceSplit> split;
  if (sp.degree() > 1) {
    split = std::make_unique<omni::pipeline::SequenceSplit>(sp);
    hooks.tokens = split.get();
  }
  return call(hooks);
}

at::Tensor split_forward(const WanTransformer3DModel& model, const Inputs& in, omni::models::UnitHooks* units,
                         const SequenceParallel& sp) {
  return with_split(sp, units, [&](const omni::models::ForwardHooks& hooks) {
    return model.forward(in.hidden, in.timestep, in.context, hooks);
  });
}

// Runs `fn` and reports whether it threw a usage error whose message contains `needle`.
template <typename Fn>
bool usage_error_containing(Fn fn, const std::string& needle) {
  try {
    fn();
  } catch (const omni::Error& e) {
    const bool ok = e.exit_code() == 2 && std::string(e.what()).find(needle) != std::string::npos;
    if (!ok) std::fprintf(stderr, "rank %d: unexpected error: %s\n", g_rank, e.what());
    return ok;
  }
  return false;
}

int run_all() {
  const int world = Communicator::world().size();
  g_rank = Communicator::world().rank();
  auto layouts = make_layouts(world);

  auto model = make_model(4, at::kFloat);
  const std::vector<Inputs> inputs = {make_inputs(2, 4, 4, false, 1),   // S = 8: divisible by 2 and 4
                                      make_inputs(2, 4, 4, true, 2),    //
                                      make_inputs(3, 2, 6, false, 3),   // S = 9: 5 + 4, 3 + 2 + 2 + 2
                                      make_inputs(3, 2, 6, true, 4),    //
                                      make_inputs(1, 2, 14, true, 5)};  // S = 7: 4 + 3, 2 + 2 + 2 + 1
  for (const auto& in : inputs) {
    RecordingHooks ref_hooks;
    const auto ref = model->forward(in.hidden, in.timestep, in.context, &ref_hooks);
    const double ref_max = ref.abs().max().item<double>();
    for (const auto& l : layouts) {
      RecordingHooks hooks;
      const auto out = split_forward(*model, in, &hooks, l.sp);
      // Degree 1 must be forward() itself.
      const double tol = l.sp.degree() == 1 ? 0.0 : 1e-5;
      g_checks.err("f32 " + l.name + ", " + in.name, max_abs_err(out, ref), tol, ref_max);
      g_checks.truth("hooks order " + l.name + ", " + in.name, hooks.events == ref_hooks.events);
    }
  }

  // VACE: the context is split like the tokens (a shorter one zero-padded first), its blocks are units 0..K-1
  // before the main blocks' K..K+N-1, and every layout gives one rank's output.
  {
    auto vace = make_model(4, at::kFloat, /*vace=*/true);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(77);
    for (size_t i : {0, 2}) {  // S = 8 and S = 9; the second with a context of 2 of the 3 latent frames
      const auto& in = inputs[i];
      const int64_t frames = in.hidden.size(2) == 3 ? 2 : in.hidden.size(2);
      const auto control = at::randn({2, 8, frames, in.hidden.size(3), in.hidden.size(4)}, gen, at::kFloat);
      RecordingHooks ref_hooks;
      const auto ref = vace->forward(in.hidden, in.timestep, in.context, &ref_hooks, at::Tensor(), control, {0.5, 1.5});
      const double ref_max = ref.abs().max().item<double>();
      const std::vector<int> want_units = {-1, 0, 1000, 1, 1001, 2, 1002, 3, 1003, 999};
      g_checks.truth("VACE units in forward order, " + in.name, ref_hooks.events == want_units);
      for (const auto& l : layouts) {
        RecordingHooks hooks;
        const auto out = with_split(l.sp, &hooks, [&](const omni::models::ForwardHooks& fh) {
          return vace->forward(in.hidden, in.timestep, in.context, fh, at::Tensor(), control, {0.5, 1.5});
        });
        g_checks.err("VACE f32 " + l.name + ", " + in.name, max_abs_err(out, ref), l.sp.degree() == 1 ? 0.0 : 1e-5,
                     ref_max);
        g_checks.truth("VACE hooks order " + l.name + ", " + in.name, hooks.events == ref_hooks.events);
      }
    }
  }

  // Animate: the pose embedding on every frame's tokens but the first, the face tokens whole on every rank, each
  // rank's tokens attending to their own frames' face tokens (shares that begin and end inside a frame: S = 9 of
  // 3 tokens a frame, S = 12 of 4), the face adapters units of their own after their blocks.
  {
    auto animate = make_model(4, at::kFloat, /*vace=*/false, /*animate=*/true);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(91);
    for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{{2, 6}, {4, 4}}) {
      const std::string name = "S=" + std::to_string(3 * (h / 2) * (w / 2));
      const auto hidden = at::randn({2, 36, 3, h, w}, gen, at::kFloat);
      const auto timestep = at::tensor(std::vector<int64_t>{700, 700});
      const auto context = at::randn({2, 7, 32}, gen, at::kFloat);
      const auto image = at::randn({1, 5, 20}, gen, at::kFloat);
      omni::models::AnimateInputs a;
      a.pose = at::randn({2, 16, 2, h, w}, gen, at::kFloat);
      a.face_pixels = at::rand({2, 3, 5, 8, 8}, gen, at::kFloat) * 2 - 1;  // 5 face frames: 2 latent + reference
      RecordingHooks ref_hooks;
      const auto ref = animate->forward(hidden, timestep, context, &ref_hooks, image, at::Tensor(), {}, a);
      const double ref_max = ref.abs().max().item<double>();
      const std::vector<int> want_units = {-1, 0, 1000, 1, 1001, 2, 1002, 3, 1003, 999};
      g_checks.truth("Animate units in forward order, " + name, ref_hooks.events == want_units);
      for (const auto& l : layouts) {
        RecordingHooks hooks;
        const auto out = with_split(l.sp, &hooks, [&](const omni::models::ForwardHooks& fh) {
          return animate->forward(hidden, timestep, context, fh, image, at::Tensor(), {}, a);
        });
        g_checks.err("Animate f32 " + l.name + ", " + name, max_abs_err(out, ref), l.sp.degree() == 1 ? 0.0 : 1e-5,
                     ref_max);
        g_checks.truth("Animate hooks order " + l.name + ", " + name, hooks.events == ref_hooks.events);
      }
    }
  }

  // Dumps of the blocks: whole sequences on every rank, as one rank's (the split gathers them).
  {
    const auto& in = inputs[2];  // S = 9: uneven chunks
    omni::debug::enable_dumps(true);
    model->forward(in.hidden, in.timestep, in.context);
    const auto ref = omni::debug::take_dumps();
    for (const auto& l : layouts) {
      split_forward(*model, in, nullptr, l.sp);
      const auto got = omni::debug::take_dumps();
      bool same_names = got.size() == ref.size() && ref.size() == 2;
      double err = same_names ? 0.0 : 1.0;
      for (size_t i = 0; same_names && i < ref.size(); ++i) {
        same_names = got[i].first == ref[i].first && got[i].second.sizes() == ref[i].second.sizes();
        if (same_names) err = std::max(err, max_abs_err(got[i].second, ref[i].second));
      }
      g_checks.truth("dump names and shapes " + l.name, same_names);
      g_checks.err("dumps " + l.name, same_names ? err : 1.0, 1e-5);
    }
    omni::debug::enable_dumps(false);
  }

  // bfloat16: the split forward may round differently from forward(), but no worse than bfloat16 itself does.
  {
    auto model_bf16 = make_model(4, at::kBFloat16);
    const auto& in = inputs[3];
    const auto ref32 = model->forward(in.hidden, in.timestep, in.context).to(at::kDouble);
    const auto ref16 = model_bf16->forward(in.hidden, in.timestep, in.context);
    const double bf16_err = max_abs_err(ref16, ref32);
    for (const auto& l : layouts) {
      if (l.sp.degree() == 1) continue;
      const auto out = split_forward(*model_bf16, in, nullptr, l.sp);
      g_checks.truth("bf16 dtype " + l.name, out.scalar_type() == at::kBFloat16);
      g_checks.err(
          "bf16 " + l.name + ", " + in.name + " vs f32 forward (bf16 forward: " + std::to_string(bf16_err) + ")",
          max_abs_err(out, ref32), 2 * bf16_err + 1e-3);
    }
  }

  // UlyssesAttention on its own, as the transformer calls it: q/k/v transposes of [B, S_me, H, d] chunks
  // (uneven: S = 9), batch 2. Its result must be the local attention's rows for this rank's tokens, laid out as
  // [B, S_me, H, d] so that the caller's transpose(1, 2).flatten(2, 3) is a view.
  for (const auto& l : layouts) {
    if (l.sp.ulysses_degree() == 1 || l.sp.ring_degree() > 1) continue;
    auto* group = l.sp.ulysses.get();
    const auto tokens = omni::pipeline::token_chunks(9, group->size());
    const int64_t begin = omni::dist::exclusive_offsets(tokens)[group->rank()], count = tokens[group->rank()];
    at::manual_seed(31);                                  // the same whole sequence on every rank
    auto whole = [] { return at::randn({2, 9, 4, 8}); };  // [B, S, H, d]
    auto q = whole(), k = whole(), v = whole();
    auto mine = [&](const at::Tensor& t) { return t.narrow(1, begin, count).contiguous().transpose(1, 2); };
    omni::pipeline::UlyssesAttention ulysses(group, tokens);
    const auto out = ulysses.attend(mine(q), mine(k), mine(v), omni::models::AttentionKind::kSelf);  // [B, H, S_me, d]
    const auto ref = at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
                         .narrow(2, begin, count);  // [B, H, S_me, d]
    g_checks.err("UlyssesAttention direct " + l.name + ", S=9 B=2", max_abs_err(out, ref), 1e-5);
    g_checks.truth("UlyssesAttention result is token-major " + l.name,
                   out.sizes() == ref.sizes() && out.transpose(1, 2).is_contiguous());
  }

  // Usage errors, raised alike on every rank before any communication.
  {
    auto model3 = make_model(3, at::kFloat);
    const auto& in = inputs[0];
    for (const auto& l : layouts) {
      if (l.sp.ulysses_degree() == 1) continue;
      g_checks.truth("heads 3 with " + l.name + " is a usage error",
                     usage_error_containing([&] { split_forward(*model3, in, nullptr, l.sp); },
                                            "--ulysses-degree " + std::to_string(l.sp.ulysses_degree())));
    }
    const auto tiny = make_inputs(1, 2, 2, false, 6);  // S = 1
    for (const auto& l : layouts) {
      if (l.sp.degree() == 1) continue;
      g_checks.truth("S=1 with " + l.name + " is a usage error",
                     usage_error_containing([&] { split_forward(*model, tiny, nullptr, l.sp); },
                                            "fewer than the sequence-parallel degree"));
    }
  }

  return g_checks.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return omni::test_util::mpi_test_main(argc, argv, "sp_forward_test", run_all);
}
