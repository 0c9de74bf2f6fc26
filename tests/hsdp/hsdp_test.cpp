// The HSDP engine under mpirun (1, 2 and 4 ranks): sharding moves data and nothing else, so every sharded
// output must equal the unsharded one bit for bit; and it holds, reads and moves only what it promises.
//
// 1. Fixtures (tests/data/reference/<case>/model): both experts (the unit forward and every recorded call)
//    and UMT5 (prompt, and prompt + negative batched), sharded with each layout of this world (1: shard 1;
//    2: shard 2; 4: shard 4 and replicate 2 x shard 2), against the same models loaded whole on the same rank:
//    max abs diff 0, in float32 and (largest shard) bfloat16. The float32 sharded outputs also match
//    diffusers' recorded outputs (1e-4 transformer, 1e-5 UMT5), so both sides are the real model.
// 2. A generated "small" t2v-a14b checkpoint (rank 0 writes it into a temp dir), per layout, per model
//    (both experts and UMT5, roots included), against sizes computed here from the Module tree alone:
//    resident bytes == sum of ceil(n / shard) per unit and dtype, and <= total / shard + padding; parameter
//    slots empty outside a forward; bytes read from disk <= stored / shard + 5%; peak gathered bytes <= root +
//    two largest blocks; the prefetch order at every hook (RecordingHooks: block i+1's gather is in flight
//    before block i computes, never block i+2); the bytes one batch-2 (cond + uncond) forward gathers ==
//    (shard - 1) / shard x the padded bytes == ShardedModel::received_bytes_per_forward() == what MPI
//    actually received, and two batch-1 forwards twice that; the second forward allocates no buffer.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "dist/communicator.h"
#include "dist/device_mesh.h"
#include "generator/checkpoint_generator.h"
#include "hsdp_test_util.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "models/hsdp_sharding.h"
#include "models/umt5_encoder.h"
#include "models/wan_transformer.h"

namespace fs = std::filesystem;
using hsdp_test::Checks;
using hsdp_test::CountingGroup;
using hsdp_test::max_abs_err;
using hsdp_test::RecordingHooks;
using omni::models::Module;
using omni::models::Umt5Encoder;
using omni::models::WanTransformer3DModel;

namespace {

const std::string kRef = std::string(OMNI_TEST_DATA_DIR) + "/reference/";
const char* const kExperts[2] = {"transformer", "transformer_2"};

const char* dtype_tag(at::ScalarType t) {
  return t == at::kBFloat16 ? "bf16" : "f32";
}

// ---- Sizes from the Module tree alone (independent of the engine's bookkeeping) ---------------------------

// Elements per dtype of each unit: [0] the root, [1 + i] block i.
using UnitSizes = std::vector<std::map<at::ScalarType, int64_t>>;

UnitSizes unit_sizes(const Module& model, const std::vector<const Module*>& blocks, at::ScalarType model_dtype) {
  UnitSizes sizes(blocks.size() + 1);
  std::map<const at::Tensor*, size_t> owner;
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const auto& p : blocks[b]->parameters()) owner[p.tensor] = b + 1;
  for (const auto& p : model.parameters()) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    auto it = owner.find(p.tensor);
    sizes[it == owner.end() ? 0 : it->second][omni::models::resolve_param_dtype(p.dtype_rule, model_dtype)] += n;
  }
  return sizes;
}

struct SizeFigures {
  int64_t total = 0;     // bytes of the parameters
  int64_t resident = 0;  // sum over units and dtypes of ceil(n / shard) elements
  int64_t padded = 0;    // gathered size: sum of ceil(n / shard) * shard elements
  int64_t groups = 0;    // (unit, dtype) pairs: one all-gather each per forward
  int64_t root_padded = 0;
  int64_t max_block_padded = 0;
};

SizeFigures figures(const UnitSizes& sizes, int shard) {
  SizeFigures f;
  for (size_t u = 0; u < sizes.size(); ++u) {
    int64_t unit_padded = 0;
    for (const auto& [dtype, n] : sizes[u]) {
      const int64_t es = static_cast<int64_t>(c10::elementSize(dtype));
      const int64_t per_rank = (n + shard - 1) / shard;
      f.total += n * es;
      f.resident += per_rank * es;
      unit_padded += per_rank * shard * es;
      f.groups += 1;
    }
    f.padded += unit_padded;
    if (u == 0)
      f.root_padded = unit_padded;
    else
      f.max_block_padded = std::max(f.max_block_padded, unit_padded);
  }
  return f;
}

// ---- Loading --------------------------------------------------------------------------------------------

struct Loaded {
  std::unique_ptr<Module> module;
  std::vector<const Module*> blocks;
  std::unique_ptr<omni::hsdp::ShardedModel> sharded;
  std::shared_ptr<omni::hsdp::HsdpStats> stats = std::make_shared<omni::hsdp::HsdpStats>();
  int64_t stored_bytes = 0;  // the checkpoint's tensor bytes on disk

  WanTransformer3DModel& expert() { return static_cast<WanTransformer3DModel&>(*module); }
  Umt5Encoder& text() { return static_cast<Umt5Encoder&>(*module); }
};

// The same calls the pipeline makes (lib/pipeline/wan_pipeline.cpp), with the embedding name resolved as
// Umt5Encoder::load does.
Loaded shard_expert(const std::string& dir, const std::string& name, omni::dist::ProcessGroup* group,
                    at::ScalarType dtype, const std::shared_ptr<omni::hsdp::BufferPool>& pool,
                    const omni::models::WeightHolding& holding = {}) {
  Loaded l;
  auto m = std::make_unique<WanTransformer3DModel>(omni::models::WanTransformerConfig::load(dir), dtype);
  for (int i = 0; i < m->num_blocks(); ++i) l.blocks.push_back(&m->block(i));
  auto ckpt = omni::io::Checkpoint::open(dir);
  l.stored_bytes = ckpt.total_bytes();
  l.sharded =
      omni::models::shard_model(name, *m, l.blocks, ckpt, group, dtype, at::kCPU, pool, l.stats, nullptr, holding);
  l.module = std::move(m);
  return l;
}

Loaded shard_text(const std::string& dir, omni::dist::ProcessGroup* group, at::ScalarType dtype,
                  const std::shared_ptr<omni::hsdp::BufferPool>& pool,
                  const omni::models::WeightHolding& holding = {}) {
  Loaded l;
  auto ckpt = omni::io::Checkpoint::open(dir);
  auto config = omni::models::Umt5Config::from_json(dir + "/config.json");
  config.resolve_embedding(ckpt);
  auto m = std::make_unique<Umt5Encoder>(config, dtype);
  for (int i = 0; i < m->num_blocks(); ++i) l.blocks.push_back(&m->block(i));
  l.stored_bytes = ckpt.total_bytes();
  l.sharded = omni::models::shard_model("text_encoder", *m, l.blocks, ckpt, group, dtype, at::kCPU, pool, l.stats,
                                        nullptr, holding);
  l.module = std::move(m);
  return l;
}

// The shard group of a layout, wrapped so that its gathers are counted.
struct Groups {
  std::unique_ptr<omni::dist::DeviceMesh> mesh;
  std::unique_ptr<CountingGroup> shard;
};

Groups make_groups(int replicate, int shard, int world) {
  Groups g;
  g.mesh = std::make_unique<omni::dist::DeviceMesh>(hsdp_test::hsdp_layout(replicate, shard, world),
                                                    omni::dist::Communicator::world());
  g.shard = std::make_unique<CountingGroup>(g.mesh->shard(), omni::dist::make_process_group(g.mesh->shard(), at::kCPU));
  return g;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}

// ---- 1. Fixtures ------------------------------------------------------------------------------------------

struct FixtureCase {
  std::string name, dir;
  std::unique_ptr<omni::io::SafetensorsFile> expected;
  std::vector<std::pair<std::string, std::string>> calls;  // (key, expert)

  explicit FixtureCase(const std::string& n) : name(n), dir(kRef + n) {
    expected = std::make_unique<omni::io::SafetensorsFile>(dir + "/expected.safetensors");
    const nlohmann::json json = omni::io::read_json(dir + "/case.json");  // named: the loop must not dangle
    for (const auto& c : json.at("transformer_calls"))
      calls.emplace_back(c.at("key").get<std::string>(), c.at("model").get<std::string>());
  }
  at::Tensor get(const std::string& key) const { return expected->read(key); }
  bool has_expert(const char* e) const { return fs::exists(dir + "/model/" + e); }
};

// Every forward of a case, keyed: "unit", "callNN", "text.prompt", "text.both". `expert(name)` and `text`
// run a forward with the given hooks (null: unsharded).
struct CaseOutputs {
  std::map<std::string, at::Tensor> out;
};

template <typename ExpertFwd, typename TextFwd>
CaseOutputs run_case(const FixtureCase& c, ExpertFwd&& expert, TextFwd&& text) {
  CaseOutputs r;
  if (c.expected->contains("unit.transformer.in"))
    r.out["unit"] = expert("transformer", c.get("unit.transformer.in"), c.get("unit.transformer.timestep"),
                           c.get("unit.transformer.context"));
  for (const auto& [key, e] : c.calls)
    r.out[key] =
        expert(e, c.get(key + ".hidden_states"), c.get(key + ".timestep"), c.get(key + ".encoder_hidden_states"));
  const at::Tensor ids = c.get("prompt.input_ids"), mask = c.get("prompt.attention_mask");
  r.out["text.prompt"] = text(ids, mask);
  r.out["text.both"] = text(at::cat({ids, c.get("negative.input_ids")}, 0),
                            at::cat({mask, c.get("negative.attention_mask")}, 0));  // [2, L]
  return r;
}

void fixture_case(Checks& checks, const std::string& name, int world) {
  FixtureCase c(name);
  const auto layouts = hsdp_test::test_layouts(world);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    // The unsharded reference, loaded whole on this rank.
    std::map<std::string, std::unique_ptr<WanTransformer3DModel>> whole;
    for (const char* e : kExperts)
      if (c.has_expert(e)) whole[e] = WanTransformer3DModel::load(c.dir + "/model/" + e, dtype);
    auto whole_text = Umt5Encoder::load(c.dir + "/model/text_encoder", dtype);
    const CaseOutputs ref = run_case(
        c,
        [&](const std::string& e, const at::Tensor& x, const at::Tensor& t, const at::Tensor& ctx) {
          return whole.at(e)->forward(x, t, ctx);
        },
        [&](const at::Tensor& ids, const at::Tensor& mask) { return whole_text->forward(ids, mask); });
    whole.clear();
    whole_text.reset();

    // bfloat16 (two dtype groups per unit: the float32 norms and tables) with the largest shard only.
    const size_t n_layouts = dtype == at::kFloat ? layouts.size() : 1;
    for (size_t li = 0; li < n_layouts; ++li) {
      const auto [rep, shard] = layouts[li];
      const std::string tag = name + " " + hsdp_test::layout_name(rep, shard) + " " + dtype_tag(dtype) + " ";
      Groups g = make_groups(rep, shard, world);
      auto pool = std::make_shared<omni::hsdp::BufferPool>(at::kCPU);
      std::map<std::string, Loaded> experts;
      for (const char* e : kExperts)
        if (c.has_expert(e)) experts[e] = shard_expert(c.dir + "/model/" + e, e, g.shard.get(), dtype, pool);
      Loaded text = shard_text(c.dir + "/model/text_encoder", g.shard.get(), dtype, pool);

      std::vector<std::string> order_failures;
      auto record = [&](RecordingHooks& h) {
        order_failures.insert(order_failures.end(), h.failures.begin(), h.failures.end());
      };
      const CaseOutputs got = run_case(
          c,
          [&](const std::string& e, const at::Tensor& x, const at::Tensor& t, const at::Tensor& ctx) {
            Loaded& l = experts.at(e);
            RecordingHooks hooks(l.sharded.get(), g.shard.get());
            at::Tensor out = l.expert().forward(x, t, ctx, &hooks);
            record(hooks);
            return out;
          },
          [&](const at::Tensor& ids, const at::Tensor& mask) {
            RecordingHooks hooks(text.sharded.get(), g.shard.get());
            at::Tensor out = text.text().forward(ids, mask, &hooks);
            record(hooks);
            return out;
          });

      double err_t = 0, err_text = 0;
      std::vector<std::string> keys_t;
      for (const auto& [key, t] : ref.out) {
        const double e = max_abs_err(got.out.at(key), t);
        if (key.rfind("text.", 0) == 0) {
          err_text = std::max(err_text, e);
        } else {
          err_t = std::max(err_t, e);
          keys_t.push_back(key);
        }
      }
      checks.err(
          tag + "transformer experts == unsharded (" + std::to_string(keys_t.size()) + " forwards: unit + calls)",
          err_t);
      checks.err(tag + "UMT5 == unsharded (prompt; prompt + negative batched)", err_text);
      checks.truth(tag + "prefetch order at every hook", order_failures.empty(), join(order_failures));
      if (dtype == at::kFloat && li == 0) {
        // Both sides are the real model: the sharded float32 outputs match diffusers / transformers.
        double fix_t = 0;
        for (const auto& key : keys_t)
          fix_t = std::max(fix_t,
                           max_abs_err(got.out.at(key), c.get(key == "unit" ? "unit.transformer.out" : key + ".out")));
        checks.err(tag + "sharded transformer vs diffusers' outputs", fix_t, 1e-4);
        checks.err(tag + "sharded UMT5 vs transformers' last_hidden_state",
                   max_abs_err(got.out.at("text.prompt"), c.get("prompt.last_hidden_state")), 1e-5);
      }
    }
  }
}

// ---- 2. Generated checkpoint: memory, disk, traffic, order ------------------------------------------------

std::string shared_temp_dir(int rank) {
  char buf[512] = {0};
  if (rank == 0) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/omni_hsdp_test_XXXXXX";
    OMNI_CHECK(::mkdtemp(tmpl.data()) != nullptr, "mkdtemp failed for ", tmpl);
    OMNI_CHECK(tmpl.size() < sizeof(buf), "temp path too long: ", tmpl);
    std::strcpy(buf, tmpl.c_str());
  }
  MPI_Bcast(buf, sizeof(buf), MPI_CHAR, 0, MPI_COMM_WORLD);
  return buf;
}

at::Tensor seeded_randn(at::IntArrayRef shape, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat));
}

struct ExpertInputs {
  at::Tensor x, t, ctx;  // batch 2: cond and uncond (same latents and timestep, different contexts)
  ExpertInputs slice(int64_t b) const { return {x.narrow(0, b, 1), t.narrow(0, b, 1), ctx.narrow(0, b, 1)}; }
};

// The expert inputs of the generated "small" checkpoint: batch 2, 32 tokens.
ExpertInputs small_inputs(const omni::generator::CheckpointSpec& spec) {
  const auto& ts = spec.transformer;
  ExpertInputs in;
  in.x = seeded_randn({1, ts.in_channels, 2, 8, 8}, 1).repeat({2, 1, 1, 1, 1});  // [2, C, F, H, W]: 32 tokens
  in.t = at::tensor({500.0f, 500.0f});
  in.ctx = seeded_randn({2, 16, ts.text_dim}, 2);  // [2, L, text_dim]
  return in;
}

// The memory plan's resident bytes of a float32 model loaded as `l` (models::unit_bytes of each unit).
int64_t planned_resident(const Loaded& l, int shard, const omni::models::WeightHolding& holding) {
  const auto units = omni::models::split_units(*l.module, l.blocks);
  const int num_blocks = static_cast<int>(l.blocks.size());
  int64_t planned = omni::models::unit_bytes(units.root, at::kFloat, shard, holding, num_blocks).resident;
  for (const auto& b : units.blocks)
    planned += omni::models::unit_bytes(b, at::kFloat, shard, holding, num_blocks).resident;
  return planned;
}

// The memory plan's gathered peak (pipeline/memory_plan.cpp): the root and the largest two consecutive blocks,
// each as gathered (padded), with `holding`'s float8 weights. Nothing is gathered with a shard of 1.
int64_t planned_gathered_peak(const Loaded& l, int shard, const omni::models::WeightHolding& holding) {
  if (shard == 1) return 0;
  const auto units = omni::models::split_units(*l.module, l.blocks);
  const int num_blocks = static_cast<int>(l.blocks.size());
  int64_t pair = 0, previous = 0;
  for (const auto& b : units.blocks) {
    const int64_t full = omni::models::unit_bytes(b, at::kFloat, shard, holding, num_blocks).full;
    pair = std::max(pair, previous + full);
    previous = full;
  }
  return omni::models::unit_bytes(units.root, at::kFloat, shard, holding, num_blocks).full + pair;
}

// Float8 weights (--weight-dtype float8_e4m3fn --fp8-layers all): every rank quantizes its own slice, the row
// scales agreed by an all-reduce. The reference is independent of that code: the whole float32 model whose
// float8 weights are replaced, element by element, by a scalar loop's quantization (row amax / 448, c10's
// scalar float8 conversion, times the scale). Every layout's forward must equal it exactly, and the resident
// bytes must be what the memory plan's unit_bytes counts (float8 as 1 byte, plus the float32 row scales).
// A float32 [out, in] weight quantized by a scalar loop, independent of core/fp8: each row divided by its scale
// (`scales` [out]; empty: row amax / 448, 1 for a zero row), clamped to +-448, c10's scalar float8 conversion.
// Returns the float8 bytes and fills `scales`.
at::Tensor scalar_float8(const at::Tensor& weight, std::vector<float>& scales) {
  at::Tensor w = weight.contiguous();
  const int64_t rows = w.size(0), cols = w.size(1);
  const float* src = w.const_data_ptr<float>();
  at::Tensor q = at::empty({rows, cols}, at::kFloat8_e4m3fn);
  auto* dst = q.mutable_data_ptr<c10::Float8_e4m3fn>();
  const bool given = !scales.empty();
  scales.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (!given) {
      float amax = 0;
      for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(src[r * cols + c]));
      scales[static_cast<size_t>(r)] = amax > 0 ? amax / 448.0f : 1.0f;
    }
    for (int64_t c = 0; c < cols; ++c)
      dst[r * cols + c] =
          c10::Float8_e4m3fn(std::min(448.0f, std::max(-448.0f, src[r * cols + c] / scales[static_cast<size_t>(r)])));
  }
  return q;
}

// byte x its row's scale, in float32 (one rounding), by a scalar loop.
at::Tensor scalar_dequantized(const at::Tensor& q, const std::vector<float>& scales) {
  const int64_t rows = q.size(0), cols = q.size(1);
  at::Tensor out = at::empty({rows, cols}, at::kFloat);
  const auto* src = q.const_data_ptr<c10::Float8_e4m3fn>();
  float* dst = out.mutable_data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * cols + c] = static_cast<float>(src[r * cols + c]) * scales[static_cast<size_t>(r)];
  return out;
}

void float8_checks(Checks& checks, const std::string& model_dir, int world) {
  const auto spec = omni::generator::make_preset(omni::generator::CheckpointKind::kT2vA14b, "small");
  const ExpertInputs in = small_inputs(spec);
  const omni::models::WeightHolding holding{true, omni::models::Fp8Layers::kAll, {}};
  const std::string dir = model_dir + "/transformer";

  auto whole = WanTransformer3DModel::load(dir, at::kFloat);
  const int num_blocks = whole->num_blocks();
  int64_t float8_weights = 0, float8_elements = 0, float8_rows = 0;
  for (const auto& p : whole->parameters()) {
    if (omni::models::held_dtype(p, at::kFloat, holding, num_blocks) != at::kFloat8_e4m3fn) continue;
    const at::Tensor w = *p.tensor;  // [out, in] float32
    const int64_t rows = w.size(0);
    std::vector<float> scales;
    const at::Tensor q = scalar_float8(w, scales);
    *p.tensor = scalar_dequantized(q, scales);
    ++float8_weights;
    float8_elements += w.numel();
    float8_rows += rows;
  }
  checks.truth("float8: the small model has float8 weights (blocks 1..n-2)", float8_weights > 0);
  const at::Tensor want = whole->forward(in.x, in.t, in.ctx);

  for (const auto& [rep, shard] : hsdp_test::test_layouts(world)) {
    const std::string tag = std::string("float8 ") + hsdp_test::layout_name(rep, shard) + ": ";
    Groups g = make_groups(rep, shard, world);
    auto pool = std::make_shared<omni::hsdp::BufferPool>(at::kCPU);
    Loaded l = shard_expert(dir, "transformer", g.shard.get(), at::kFloat, pool, holding);
    omni::models::HsdpHooks h(l.sharded.get());
    checks.err(tag + "forward == whole model with independently quantized weights",
               max_abs_err(l.expert().forward(in.x, in.t, in.ctx, &h), want));
    checks.equal(tag + "resident bytes == the memory plan's (float8 1 byte + row scales)", l.sharded->resident_bytes(),
                 planned_resident(l, shard, holding));
    // Float8 middle blocks and run-dtype first and last ones have buffers of different sizes: over two
    // forwards, what the pool holds (in use and spare) stays within the plan's gathered peak, the root and
    // the largest two consecutive blocks.
    l.expert().forward(in.x, in.t, in.ctx, &h);
    checks.at_most(tag + "pool's buffers (in use + spare) <= root + largest consecutive pair", pool->held_peak_bytes(),
                   planned_gathered_peak(l, shard, holding));
    const int64_t plain = shard_expert(dir, "transformer", g.shard.get(), at::kFloat, pool).sharded->resident_bytes();
    // float32 -> float8 saves 3 bytes per float8 element of this rank's slice; the float32 row scales are
    // whole on every rank; each unit's new float8 group adds at most shard - 1 elements of padding.
    checks.at_most(tag + "resident bytes <= float32's - 3 x float8 elements / shard + row scales + padding",
                   l.sharded->resident_bytes(),
                   static_cast<double>(plain) - 3.0 * static_cast<double>(float8_elements) / shard +
                       4.0 * static_cast<double>(float8_rows) + 4.0 * shard * (num_blocks + 1));
  }
}

// UMT5's float8 weights (--text-encoder-weight-dtype float8_e4m3fn --fp8-layers all), as the transformer's: the
// q/k/v/o and wi_0/wi_1/wo weights of the blocks between the first and the last, each rank quantizing its own
// slice. Every layout's encoding must equal the whole float32 encoder whose float8 weights are replaced by the
// scalar loop's quantization, exactly; the resident bytes must be the memory plan's.
void text_float8_checks(Checks& checks, const std::string& model_dir, int world) {
  const omni::models::WeightHolding holding{true, omni::models::Fp8Layers::kAll, {}};
  const std::string dir = model_dir + "/text_encoder";
  const at::Tensor ids = (seeded_randn({2, 16}, 5).abs() * 40).to(at::kLong).clamp(0, 255);
  const at::Tensor mask = (at::arange(16).unsqueeze(0) < at::tensor({16, 11}).unsqueeze(1)).to(at::kLong);  // [2, 16]
  auto whole = Umt5Encoder::load(dir, at::kFloat);
  const int num_blocks = whole->num_blocks();
  int64_t float8_weights = 0;
  for (const auto& p : whole->parameters()) {
    if (omni::models::held_dtype(p, at::kFloat, holding, num_blocks) != at::kFloat8_e4m3fn) continue;
    std::vector<float> scales;
    *p.tensor = scalar_dequantized(scalar_float8(*p.tensor, scales), scales);
    ++float8_weights;
  }
  checks.equal("UMT5 float8: q, k, v, o, wi_0, wi_1, wo of each middle block", float8_weights, 7 * (num_blocks - 2));
  const at::Tensor want = whole->forward(ids, mask);
  for (const auto& [rep, shard] : hsdp_test::test_layouts(world)) {
    const std::string tag = std::string("UMT5 float8 ") + hsdp_test::layout_name(rep, shard) + ": ";
    Groups g = make_groups(rep, shard, world);
    auto pool = std::make_shared<omni::hsdp::BufferPool>(at::kCPU);
    Loaded l = shard_text(dir, g.shard.get(), at::kFloat, pool, holding);
    omni::models::HsdpHooks h(l.sharded.get());
    checks.err(tag + "encoding == whole encoder with independently quantized weights",
               max_abs_err(l.text().forward(ids, mask, &h), want));
    checks.equal(tag + "weights quantized at load", l.stats->float8_weights_quantized, float8_weights);
    checks.equal(tag + "resident bytes == the memory plan's", l.sharded->resident_bytes(),
                 planned_resident(l, shard, holding));
  }
}

// Whether the small model's weight `name` is stored in float8 by stored_float8_checks, and how: every block's
// feed-forward weights with a scale per row (`weight_scale` [out], amax / 300: not the scale the loader would
// choose), and block 1's attn1.to_q with one scale for the tensor (`scale_weight`, amax / 400).
enum class Stored { kNo, kPerRow, kPerTensor };
Stored stored_as(const std::string& name) {
  if (name.rfind("blocks.", 0) == 0 && name.find(".ffn.") != std::string::npos && name.size() > 7 &&
      name.compare(name.size() - 7, 7, ".weight") == 0)
    return Stored::kPerRow;
  if (name == "blocks.1.attn1.to_q.weight") return Stored::kPerTensor;
  return Stored::kNo;
}

// A checkpoint storing some weights in float8 (an fp8_scaled file, written here; rank 0 writes it): those are
// held in float8 as stored, with the file's scales, with or without --weight-dtype, and the others under
// --weight-dtype float8_e4m3fn are quantized at load beside them in the same units (block 1 mixes both). The
// reference is the whole float32 model with the stored weights replaced by byte x scale and the quantized ones
// by the scalar loop. Every layout's forward must equal it exactly; the counts, and the resident bytes against
// the memory plan's.
void stored_float8_checks(Checks& checks, const std::string& model_dir, int world, int rank) {
  const auto spec = omni::generator::make_preset(omni::generator::CheckpointKind::kT2vA14b, "small");
  const ExpertInputs in = small_inputs(spec);
  const std::string src = model_dir + "/transformer", dir = model_dir + "/transformer_fp8";
  std::map<std::string, std::pair<at::Tensor, std::vector<float>>> stored;  // name -> bytes, row scales
  {
    const auto ckpt = omni::io::Checkpoint::open(src);
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& name : ckpt.names()) {
      const at::Tensor w = ckpt.read(name, at::kFloat);
      const Stored how = stored_as(name);
      if (how == Stored::kNo || w.dim() != 2) {
        tensors.emplace_back(name, w);
        continue;
      }
      const float amax_all = w.abs().max().item<float>();
      std::vector<float> scales;
      for (int64_t r = 0; r < w.size(0); ++r)
        scales.push_back(how == Stored::kPerRow ? w[r].abs().max().item<float>() / 300.0f : amax_all / 400.0f);
      const at::Tensor q = scalar_float8(w, scales);
      const std::string layer = name.substr(0, name.size() - 7);
      tensors.emplace_back(name, q);
      if (how == Stored::kPerRow)
        tensors.emplace_back(layer + ".weight_scale", at::tensor(scales));
      else
        tensors.emplace_back(layer + ".scale_weight", at::scalar_tensor(scales[0], at::kFloat));
      stored[name] = {q, scales};
    }
    if (rank == 0) {
      fs::create_directories(dir);
      fs::copy_file(src + "/config.json", dir + "/config.json", fs::copy_options::overwrite_existing);
      omni::io::write_safetensors(dir + "/diffusion_pytorch_model.safetensors", tensors);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  checks.truth("stored float8: the file has per-row and per-tensor float8 weights", stored.size() > 2);

  for (const bool flag : {false, true}) {
    const omni::models::WeightHolding holding{flag, omni::models::Fp8Layers::kAll, {}};
    auto whole = WanTransformer3DModel::load(src, at::kFloat);
    const int num_blocks = whole->num_blocks();
    int64_t want_stored = 0, want_quantized = 0;
    for (const auto& p : whole->parameters()) {
      if (auto it = stored.find(p.name); it != stored.end()) {
        *p.tensor = scalar_dequantized(it->second.first, it->second.second);
        ++want_stored;
      } else if (omni::models::held_dtype(p, at::kFloat, holding, num_blocks) == at::kFloat8_e4m3fn) {
        std::vector<float> scales;
        *p.tensor = scalar_dequantized(scalar_float8(*p.tensor, scales), scales);
        ++want_quantized;
      }
    }
    const at::Tensor want = whole->forward(in.x, in.t, in.ctx);
    for (const auto& [rep, shard] : hsdp_test::test_layouts(world)) {
      const std::string tag = std::string("stored float8 ") + (flag ? "+ --weight-dtype float8 " : "alone ") +
                              hsdp_test::layout_name(rep, shard) + ": ";
      Groups g = make_groups(rep, shard, world);
      auto pool = std::make_shared<omni::hsdp::BufferPool>(at::kCPU);
      Loaded l = shard_expert(dir, "transformer", g.shard.get(), at::kFloat, pool, holding);
      omni::models::HsdpHooks h(l.sharded.get());
      checks.err(tag + "forward == whole model with the stored bytes x scales and the others quantized",
                 max_abs_err(l.expert().forward(in.x, in.t, in.ctx, &h), want));
      checks.equal(tag + "weights read as stored", l.stats->float8_weights_stored, want_stored);
      checks.equal(tag + "weights quantized at load", l.stats->float8_weights_quantized, want_quantized);
      const auto held = omni::models::with_stored_float8(holding, omni::io::Checkpoint::open(dir));
      checks.equal(tag + "resident bytes == the memory plan's", l.sharded->resident_bytes(),
                   planned_resident(l, shard, held));
    }
  }
}

void generated_checks(Checks& checks, const std::string& model_dir, int world) {
  const auto spec = omni::generator::make_preset(omni::generator::CheckpointKind::kT2vA14b, "small");
  const ExpertInputs in = small_inputs(spec);
  const at::Tensor ids = (seeded_randn({2, 16}, 3).abs() * 40).to(at::kLong).clamp(0, spec.text_encoder.vocab_size - 1);
  const at::Tensor mask = (at::arange(16).unsqueeze(0) < at::tensor({16, 9}).unsqueeze(1)).to(at::kLong);  // [2, 16]

  const auto layouts = hsdp_test::test_layouts(world);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    const size_t n_layouts = dtype == at::kFloat ? layouts.size() : 1;
    for (size_t li = 0; li < n_layouts; ++li) {
      const auto [rep, shard] = layouts[li];
      const std::string tag = std::string("small ") + hsdp_test::layout_name(rep, shard) + " " + dtype_tag(dtype) + " ";
      Groups g = make_groups(rep, shard, world);
      auto pool = std::make_shared<omni::hsdp::BufferPool>(at::kCPU);

      std::vector<std::pair<std::string, Loaded>> models;
      for (const char* e : kExperts)
        models.emplace_back(e, shard_expert(model_dir + "/" + e, e, g.shard.get(), dtype, pool));
      models.emplace_back("text_encoder", shard_text(model_dir + "/text_encoder", g.shard.get(), dtype, pool));

      for (auto& [name, l] : models) {
        const std::string mt = tag + name + ": ";
        const SizeFigures f = figures(unit_sizes(*l.module, l.blocks, dtype), shard);
        const auto& st = *l.stats;
        // Resident: exactly this rank's slices, within total / shard plus one element of padding per group.
        checks.equal(mt + "resident bytes == sum of per-unit slices", l.sharded->resident_bytes(), f.resident);
        checks.at_most(mt + "resident bytes <= total/shard + padding", l.sharded->resident_bytes(),
                       static_cast<double>(f.total) / shard + 4.0 * f.groups);
        checks.equal(mt + "stats resident == model resident", st.param_bytes_resident, l.sharded->resident_bytes());
        checks.equal(mt + "gathered (padded) bytes", l.sharded->full_bytes(), f.padded);
        checks.equal(mt + "parameter slots empty after loading", l.module->parameter_bytes(), 0);
        checks.at_most(mt + "disk bytes read <= stored/shard + 5%", st.disk_bytes_read,
                       1.05 * static_cast<double>(l.stored_bytes) / shard);

        // One forward under the recording hooks: order, peak, everything released.
        RecordingHooks hooks(l.sharded.get(), g.shard.get());
        auto fwd = [&](omni::models::UnitHooks* h, const ExpertInputs& e) {
          return name == "text_encoder" ? l.text().forward(ids, mask, h) : l.expert().forward(e.x, e.t, e.ctx, h);
        };
        fwd(&hooks, in);
        checks.truth(mt + "prefetch order: block i+1 in flight before block i computes", hooks.failures.empty(),
                     join(hooks.failures));
        checks.equal(mt + "hooks seen", static_cast<double>(hooks.events.size()), 2.0 * (l.blocks.size() + 1));
        const double peak_bound = shard > 1 ? f.root_padded + 2.0 * f.max_block_padded : 0.0;
        checks.at_most(mt + "peak gathered bytes <= root + 2 blocks", st.gathered_bytes_peak, peak_bound);
        checks.equal(mt + "nothing gathered after the forward", st.gathered_bytes_now, 0);
        checks.equal(mt + "parameter slots empty after the forward", l.module->parameter_bytes(), 0);

        // Traffic of one step: cond + uncond batched is one forward, one gather per unit and dtype.
        const int64_t r0 = st.received_bytes_total, c0 = g.shard->received_bytes, n0 = g.shard->gathers;
        const int64_t alloc1 = pool->allocations();
        omni::models::HsdpHooks plain(l.sharded.get());
        fwd(&plain, in);
        const int64_t step = st.received_bytes_total - r0;
        const double expect_step = static_cast<double>(shard - 1) / shard * static_cast<double>(f.padded);
        checks.equal(mt + "bytes gathered per step (batch 2) == (shard-1)/shard x padded", step, expect_step);
        checks.equal(mt + "  == received_bytes_per_forward()", step, l.sharded->received_bytes_per_forward());
        checks.equal(mt + "  == bytes MPI received", g.shard->received_bytes - c0, step);
        checks.equal(mt + "all-gathers per step == (unit, dtype) groups", g.shard->gathers - n0,
                     shard > 1 ? f.groups : 0);
        checks.equal(mt + "second forward allocates no buffer", pool->allocations() - alloc1, 0);
        if (name != "text_encoder") {
          const int64_t r1 = st.received_bytes_total;
          fwd(&plain, in.slice(0));
          fwd(&plain, in.slice(1));
          checks.equal(mt + "two batch-1 forwards gather twice a step", st.received_bytes_total - r1, 2 * step);
        }
      }

      // Exactness on the wider generated models too (batched cond + uncond, and the text encoder).
      double err = 0;
      for (auto& [name, l] : models) {
        omni::models::HsdpHooks h(l.sharded.get());
        if (name == "text_encoder") {
          auto whole = Umt5Encoder::load(model_dir + "/text_encoder", dtype);
          err = std::max(err, max_abs_err(l.text().forward(ids, mask, &h), whole->forward(ids, mask)));
        } else {
          auto whole = WanTransformer3DModel::load(model_dir + "/" + name, dtype);
          err = std::max(err,
                         max_abs_err(l.expert().forward(in.x, in.t, in.ctx, &h), whole->forward(in.x, in.t, in.ctx)));
        }
      }
      checks.err(tag + "both experts and UMT5 == unsharded", err);
    }
  }
}

int run_all() {
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Checks checks;
  at::set_num_threads(1);

  for (const char* c : {"t2v-a14b-tiny", "i2v-a14b-tiny", "ti2v-5b-tiny"}) fixture_case(checks, c, world);

  const std::string tmp = shared_temp_dir(rank);
  const std::string model_dir = tmp + "/model";
  if (rank == 0) {
    auto spec = omni::generator::make_preset(omni::generator::CheckpointKind::kT2vA14b, "small");
    spec.text_encoder.num_layers = 4;  // blocks between the first and the last, for UMT5's float8 weights
    omni::generator::generate_checkpoint(spec, model_dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  generated_checks(checks, model_dir, world);
  float8_checks(checks, model_dir, world);
  text_float8_checks(checks, model_dir, world);
  stored_float8_checks(checks, model_dir, world, rank);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
  }
  return checks.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return omni::test_util::mpi_test_main(argc, argv, "hsdp_test", run_all);
}
