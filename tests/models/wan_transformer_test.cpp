// WanTransformer3DModel against diffusers' outputs on the tiny fixture checkpoints (float32 and bfloat16),
// plus the loader's and config parser's errors, the UnitHooks sequence and the attention-backend seam.
#include "models/wan_transformer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint_edit.h"
#include "core/error.h"
#include "core/fp8.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "models/fp8_weights.h"
#include "tensor_check.h"
#include "test_util.h"

namespace fs = std::filesystem;
using omni::models::AttentionBackend;
using omni::models::AttentionKind;
using omni::models::UnitHooks;
using omni::models::WanTransformer3DModel;
using omni::models::WanTransformerConfig;

namespace {

const std::string kRef = std::string(OMNI_TEST_DATA_DIR) + "/reference/";

using omni::test_util::max_abs_err;

struct Case {
  std::string name;
  std::string dir;
  nlohmann::json json;
  std::unique_ptr<omni::io::SafetensorsFile> expected;

  explicit Case(const std::string& n) : name(n), dir(kRef + n) {
    json = omni::io::read_json(dir + "/case.json");
    expected = std::make_unique<omni::io::SafetensorsFile>(dir + "/expected.safetensors");
  }
  at::Tensor get(const std::string& key) const { return expected->read(key); }
  std::vector<std::pair<std::string, std::string>> calls() const {  // (key, expert folder)
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& c : json.at("transformer_calls")) out.emplace_back(c.at("key"), c.at("model"));
    return out;
  }
};

using Experts = std::map<std::string, std::unique_ptr<WanTransformer3DModel>>;

Experts load_experts(const Case& c, at::ScalarType dtype) {
  Experts experts;
  for (const char* name : {"transformer", "transformer_2"}) {
    const std::string dir = c.dir + "/model/" + name;
    if (fs::exists(dir)) experts[name] = WanTransformer3DModel::load(dir, dtype);
  }
  return experts;
}

struct Errors {
  double unit = -1;    // -1: the fixture has no unit forward
  double calls = 0;    // max over every callNN
  double batched = 0;  // call00 + call01 in one batch-2 forward
};

// Runs the fixture's unit forward, every recorded call (with its expert), and the first cond/uncond pair
// batched together; returns the max abs errors against diffusers' float32 outputs.
Errors run_case(const Case& c, at::ScalarType dtype) {
  auto experts = load_experts(c, dtype);
  Errors e;
  // The A14B fixtures hold a stand-alone batch-2 forward of `transformer` (timesteps 999 and 17); ti2v's
  // per-token path is covered by its recorded calls.
  const bool has_unit = c.expected->contains("unit.transformer.in");
  EXPECT_EQ(has_unit, c.name != "ti2v-5b-tiny");
  if (has_unit) {
    auto out = experts.at("transformer")
                   ->forward(c.get("unit.transformer.in"), c.get("unit.transformer.timestep"),
                             c.get("unit.transformer.context"));
    EXPECT_EQ(out.scalar_type(), dtype);
    e.unit = max_abs_err(out.to(at::kFloat), c.get("unit.transformer.out"));
  }
  for (const auto& [key, expert] : c.calls()) {
    auto out = experts.at(expert)->forward(c.get(key + ".hidden_states"), c.get(key + ".timestep"),
                                           c.get(key + ".encoder_hidden_states"));
    double err = max_abs_err(out.to(at::kFloat), c.get(key + ".out"));
    if (err > e.calls) e.calls = err;
  }
  {
    const auto calls = c.calls();
    EXPECT_EQ(calls[0].second, calls[1].second);
    std::vector<std::string> keys = {calls[0].first, calls[1].first};
    auto cat = [&](const std::string& field) {
      return at::cat({c.get(keys[0] + "." + field), c.get(keys[1] + "." + field)}, 0);
    };
    auto out =
        experts.at(calls[0].second)->forward(cat("hidden_states"), cat("timestep"), cat("encoder_hidden_states"));
    e.batched = max_abs_err(out.to(at::kFloat), cat("out"));
  }
  return e;
}

std::string unit_str(const Errors& e) {
  std::ostringstream os;
  if (e.unit < 0)
    os << "n/a";
  else
    os << e.unit;
  return os.str();
}

class WanTransformerFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(WanTransformerFixture, Float32MatchesDiffusers) {
  Case c(GetParam());
  auto e = run_case(c, at::kFloat);
  std::cout << "[" << c.name << " float32] max abs err: unit " << unit_str(e) << ", calls " << e.calls << ", batched "
            << e.batched << std::endl;
  EXPECT_LT(e.unit, 1e-4);
  EXPECT_LT(e.calls, 1e-4);
  EXPECT_LT(e.batched, 1e-4);
}

TEST_P(WanTransformerFixture, Bfloat16NearFloat32Reference) {
  Case c(GetParam());
  auto e = run_case(c, at::kBFloat16);
  std::cout << "[" << c.name << " bfloat16] max abs err vs float32 reference: unit " << unit_str(e) << ", calls "
            << e.calls << ", batched " << e.batched << std::endl;
  EXPECT_LT(e.unit, 3e-2);
  EXPECT_LT(e.calls, 3e-2);
  EXPECT_LT(e.batched, 3e-2);
}

INSTANTIATE_TEST_SUITE_P(Cases, WanTransformerFixture,
                         ::testing::Values("t2v-a14b-tiny", "i2v-a14b-tiny", "ti2v-5b-tiny"), [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// A token "split" that keeps every token and records what the blocks get (forward()'s first stage).
struct StateProbe : omni::models::TokenSplit {
  omni::models::WanTransformerState state;
  void check(const omni::models::WanTransformerConfig&, int64_t) override {}
  AttentionBackend* split(omni::models::WanTransformerState& st) override {
    state = st;
    return nullptr;
  }
  at::Tensor gather(const at::Tensor& x) override { return x; }
};

omni::models::WanTransformerState blocks_input(const WanTransformer3DModel& model, const at::Tensor& x,
                                               const at::Tensor& t, const at::Tensor& ctx) {
  StateProbe probe;
  omni::models::ForwardHooks hooks;
  hooks.tokens = &probe;
  model.forward(x, t, ctx, hooks);
  return probe.state;
}

// ti2v-5b-tiny's transformer in float32 and a batch of two from its recorded calls.
struct Ti2vTinyBatch {
  Case c{"ti2v-5b-tiny"};
  std::unique_ptr<WanTransformer3DModel> model = WanTransformer3DModel::load(c.dir + "/model/transformer", at::kFloat);
  at::Tensor x = at::cat({c.get("call00.hidden_states"), c.get("call01.hidden_states")}, 0);  // [2, 48, 3, 4, 2]
  at::Tensor ctx = at::cat({c.get("call00.encoder_hidden_states"), c.get("call01.encoder_hidden_states")}, 0);
  static constexpr int64_t seq = 3 * 2 * 1;  // tokens: 3 latent frames x (4 x 2) / patch (1, 2, 2)
  // Per-token timesteps as the TI2V pipeline gives them with an image: 0 on the first latent frame's 2 tokens,
  // then each row's t. [2, seq]
  static at::Tensor image_mode(double t0, double t1) {
    auto ts = at::empty({2, seq});
    for (int64_t s = 0; s < seq; ++s) {
      ts[0][s] = s < 2 ? 0.0 : t0;
      ts[1][s] = s < 2 ? 0.0 : t1;
    }
    return ts;
  }
};

TEST(WanTransformer, PerTokenTimesteps) {
  // ti2v's recorded calls give every token the same timestep (text-only run), so check the per-token layout
  // here: tokens with different timesteps (image-to-video style: 0 on the first latent frame) must get
  // exactly the embeddings and modulation the scalar path gives for their own timestep.
  Ti2vTinyBatch batch;
  const auto& model = batch.model;
  const at::Tensor &x = batch.x, &ctx = batch.ctx;
  const int64_t seq = Ti2vTinyBatch::seq;
  auto ts = at::empty({2, seq});
  for (int64_t s = 0; s < seq; ++s) {
    ts[0][s] = s < 2 ? 0.0 : 937.0;  // first latent frame (2 tokens) at t = 0
    ts[1][s] = 100.0 * s + 3.0;      // every token different
  }
  auto st = blocks_input(*model, x, ts, ctx);
  // Embedded once per run of tokens sharing a timestep: row 1 changes at every token, so every token is a run.
  ASSERT_EQ(st.cond.runs.starts, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(st.cond.temb.sizes(), (std::vector<int64_t>{2, seq, 24}));
  ASSERT_EQ(st.cond.timestep_proj.sizes(), (std::vector<int64_t>{2, seq, 6, 24}));
  double temb_err = 0, proj_err = 0;
  for (int64_t s = 0; s < seq; ++s) {
    auto ref = blocks_input(*model, x, ts.select(1, s).contiguous(), ctx);  // scalar timesteps [2]
    temb_err = std::max(temb_err, max_abs_err(st.cond.temb.select(1, s), ref.cond.temb));
    proj_err = std::max(proj_err, max_abs_err(st.cond.timestep_proj.select(1, s), ref.cond.timestep_proj));
  }
  // As the TI2V pipeline gives them (0 on the first latent frame's tokens, t on the rest, in both rows): two
  // runs, each embedded as the scalar path embeds its timestep.
  auto ti2v = Ti2vTinyBatch::image_mode(937.0, 937.0);
  auto two = blocks_input(*model, x, ti2v, ctx);
  ASSERT_EQ(two.cond.runs.starts, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(two.cond.runs.length(0), 2);
  EXPECT_EQ(two.cond.runs.length(1), seq - 2);
  ASSERT_EQ(two.cond.timestep_proj.sizes(), (std::vector<int64_t>{2, 2, 6, 24}));
  for (int64_t r = 0; r < 2; ++r) {
    auto ref = blocks_input(*model, x, ti2v.select(1, two.cond.runs.start(r)).contiguous(), ctx);
    temb_err = std::max(temb_err, max_abs_err(two.cond.temb.select(1, r), ref.cond.temb));
    proj_err = std::max(proj_err, max_abs_err(two.cond.timestep_proj.select(1, r), ref.cond.timestep_proj));
  }
  // A slice of the tokens (a sequence-parallel rank's) keeps the runs it crosses, numbered from its start.
  int64_t first = -1;
  const auto tail = two.cond.runs.narrow(1, 4, &first);
  EXPECT_EQ(first, 0);
  EXPECT_EQ(tail.starts, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(tail.tokens, 4);
  const auto late = two.cond.runs.narrow(3, 2, &first);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(late.starts, (std::vector<int64_t>{0}));
  std::cout << "per-token vs scalar embedding max abs err: temb " << temb_err << ", timestep_proj " << proj_err
            << std::endl;
  EXPECT_LT(temb_err, 1e-6);
  EXPECT_LT(proj_err, 1e-6);

  // A per-token forward whose tokens share one timestep per sample equals the scalar forward.
  auto flat = at::tensor({999.0f, 17.0f});
  auto per_token = model->forward(x, flat.unsqueeze(1).expand({2, seq}).contiguous(), ctx);
  auto scalar = model->forward(x, flat, ctx);
  double same_err = max_abs_err(per_token, scalar);
  std::cout << "per-token (uniform) vs scalar forward max abs err: " << same_err << std::endl;
  EXPECT_LT(same_err, 1e-5);
  // And differing timesteps change the output (the per-token values reach the blocks and the head).
  auto varied = model->forward(x, ts, ctx);
  EXPECT_GT(max_abs_err(varied, model->forward(x, ts.amax(1), ctx)), 1e-3);
}

TEST(WanTransformer, EachBatchRowEmbeddedAsAlone) {
  // One rank runs the CFG batch [cond; uncond]; two CFG ranks run one row each, as diffusers does per call.
  // The time embedding must not depend on what else is in the batch: GEMM libraries take another kernel for
  // one row than for two (different last bits in float32 here, 1e-2 in the latents of a full-width bfloat16
  // run), so each row is embedded alone. Scalar timesteps [B] and per-token runs [B, S] alike.
  Ti2vTinyBatch batch;
  const auto& model = batch.model;
  const at::Tensor &x = batch.x, &ctx = batch.ctx;
  const int64_t seq = Ti2vTinyBatch::seq;
  for (const at::Tensor& ts : {at::tensor({999.0f, 17.0f}), Ti2vTinyBatch::image_mode(937.0, 311.0)}) {
    auto both = blocks_input(*model, x, ts, ctx);
    for (int64_t b = 0; b < 2; ++b) {
      auto alone = blocks_input(*model, x.narrow(0, b, 1), ts.narrow(0, b, 1), ctx.narrow(0, b, 1));
      EXPECT_TRUE(at::equal(both.cond.temb.narrow(0, b, 1), alone.cond.temb)) << "row " << b << " of " << ts.sizes();
      EXPECT_TRUE(at::equal(both.cond.timestep_proj.narrow(0, b, 1), alone.cond.timestep_proj))
          << "row " << b << " of " << ts.sizes();
    }
  }
}

TEST(WanTransformer, EachBatchRowRunsAlone) {
  // The whole forward, not only the time embedding: every product (patch embedding, text embedding, each
  // block's projections, attention and feed-forward, proj_out) runs on one batch row at a time, so a row of
  // one rank's CFG batch [cond; uncond] is bit for bit what a CFG rank computes for its branch alone, on any
  // CPU or GPU. This CPU's float32 GEMMs of a few rows differ in their last bits from the same rows inside a
  // larger product (a bfloat16 block did so on an AVX-512 Xeon: issue 36), so batching any product
  // fails this; the context is also cut to 3 tokens, so that the text embedding's products are that small.
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    Ti2vTinyBatch batch;
    const auto model = WanTransformer3DModel::load(batch.c.dir + "/model/transformer", dtype);
    const at::Tensor& x = batch.x;
    for (const at::Tensor& ctx : {batch.ctx, batch.ctx.narrow(1, 0, 3).contiguous()})
      for (const at::Tensor& ts : {at::tensor({999.0f, 17.0f}), Ti2vTinyBatch::image_mode(937.0, 311.0)}) {
        const auto both = model->forward(x, ts, ctx);  // [2, C, F, H, W]
        for (int64_t b = 0; b < 2; ++b) {
          const auto alone = model->forward(x.narrow(0, b, 1), ts.narrow(0, b, 1), ctx.narrow(0, b, 1));
          EXPECT_TRUE(at::equal(both.narrow(0, b, 1), alone))
              << dtype << ", context " << ctx.sizes() << ", timesteps " << ts.sizes() << ", row " << b
              << ": max abs difference " << max_abs_err(both.narrow(0, b, 1), alone);
        }
      }
  }
}

TEST(WanRotaryPosEmbed, RealHeadDimSplit) {
  // The fixtures use head_dim 12 (split 4/4/4); the real models use 128, split 44/42/42 channels, i.e.
  // 22/21/21 rotated pairs. Check the tables against a direct float64 evaluation of the formula.
  const int64_t d = 128, frames = 3, height = 4, width = 5;
  omni::models::WanRotaryPosEmbed rope(d, 1024);
  auto r = rope.forward(frames, height, width, at::kCPU);
  ASSERT_EQ(r.cos.sizes(), (std::vector<int64_t>{frames * height * width, d / 2}));
  auto cos = r.cos.accessor<float, 2>();
  auto sin = r.sin.accessor<float, 2>();
  double err = 0;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t h = 0; h < height; ++h)
      for (int64_t w = 0; w < width; ++w) {
        const int64_t token = (f * height + h) * width + w;
        for (int64_t i = 0; i < d / 2; ++i) {
          // Pair i belongs to the frame axis (first 22 pairs, 44 channels), then rows (21), then columns (21).
          int64_t pos, j, k;
          if (i < 22) {
            pos = f, j = i, k = 44;
          } else if (i < 43) {
            pos = h, j = i - 22, k = 42;
          } else {
            pos = w, j = i - 43, k = 42;
          }
          const double angle = static_cast<double>(pos) / std::pow(10000.0, 2.0 * j / k);
          err = std::max(err, std::abs(cos[token][i] - std::cos(angle)));
          err = std::max(err, std::abs(sin[token][i] - std::sin(angle)));
        }
      }
  std::cout << "rope tables (head_dim 128) max abs err: " << err << std::endl;
  EXPECT_LT(err, 1e-6);

  // Rotation of interleaved pairs: (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos).
  auto x = at::randn({1, frames * height * width, 2, d});  // [B, S, H, d]
  auto y = omni::models::apply_rotary_emb(x, r);
  auto x0 = x.slice(3, 0, d, 2), x1 = x.slice(3, 1, d, 2);
  auto c = r.cos.unsqueeze(1), s = r.sin.unsqueeze(1);
  double rot_err =
      std::max(max_abs_err(y.slice(3, 0, d, 2), x0 * c - x1 * s), max_abs_err(y.slice(3, 1, d, 2), x0 * s + x1 * c));
  std::cout << "rope rotation max abs err: " << rot_err << std::endl;
  EXPECT_LT(rot_err, 1e-6);
}

// diffusers' apply_rotary_emb, op for op: x1 * cos - x2 * sin and x1 * sin + x2 * cos as separate float32
// kernels (the bf16 / f16 x promoted by the float32 tables), assigned into empty_like(x).
at::Tensor diffusers_rotary(const at::Tensor& x, const omni::models::RotaryEmbedding& r) {
  auto pairs = x.unflatten(-1, {-1, 2});  // [B, S, H, d/2, 2]
  auto x1 = pairs.select(-1, 0), x2 = pairs.select(-1, 1);
  auto c = r.cos.unsqueeze(1), s = r.sin.unsqueeze(1);  // [S, 1, d/2]
  auto out = at::empty_like(x);
  out.slice(3, 0, x.size(3), 2).copy_(x1 * c - x2 * s);
  out.slice(3, 1, x.size(3), 2).copy_(x1 * s + x2 * c);
  return out;
}

TEST(WanRotaryPosEmbed, OnePassEqualsDiffusersBitForBit) {
  // The one-pass kernel rounds as diffusers' composition does: the same bits in every dtype, including
  // a token-sliced table (a sequence-parallel rank's rows) and a non-contiguous input.
  omni::models::WanRotaryPosEmbed rope(128, 1024);
  auto full = rope.forward(3, 4, 6, at::kCPU);
  auto r = full.slice(5, 5 + 40);  // tokens [5, 45)
  for (auto dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    auto x = (at::randn({2, 40, 3, 128}) * 4).to(dtype);  // [B, S, H, d]
    auto got = omni::models::apply_rotary_emb(x, r);
    EXPECT_EQ(got.scalar_type(), dtype);
    EXPECT_TRUE(at::equal(got, diffusers_rotary(x, r))) << dtype;
    auto strided = x.transpose(0, 2).contiguous().transpose(0, 2);  // same values, other strides
    EXPECT_TRUE(at::equal(omni::models::apply_rotary_emb(strided, r), got)) << dtype;
  }
}

TEST(WanRmsNorm, OnePassMatchesLibTorch) {
  // LibTorch's rms_norm (eight kernels on the CPU) is the reference; the one pass sums in float64 where
  // LibTorch sums float32, so float32 agrees to a few roundings and 16-bit dtypes to one rounding of theirs.
  auto x = at::randn({2, 37, 5120}) * 3 + 0.5;  // rows as wide as A14B's
  auto w = at::rand({5120}) + 0.5;
  for (auto dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    auto xd = x.to(dtype), wd = w.to(dtype);
    for (bool with_weight : {true, false}) {
      const at::Tensor weight = with_weight ? wd : at::Tensor();
      auto got = omni::models::wan::rms_norm(xd, weight, 1e-6);
      auto want = at::rms_norm(xd, {5120}, with_weight ? std::optional<at::Tensor>(wd) : std::nullopt, 1e-6);
      ASSERT_EQ(got.scalar_type(), dtype);
      auto diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs();
      auto bound = want.to(at::kDouble).abs() * (dtype == at::kFloat ? 4e-7 : dtype == at::kHalf ? 1e-3 : 8e-3);
      EXPECT_TRUE((diff <= bound).all().item<bool>()) << dtype << " max diff " << diff.max().item<double>();
      const double same = (diff == 0).to(at::kDouble).mean().item<double>();
      std::cout << "rms_norm " << dtype << (with_weight ? " weighted" : "") << ": equal to LibTorch's " << same * 100
                << "%, max diff " << diff.max().item<double>() << std::endl;
      EXPECT_GT(same, dtype == at::kFloat ? 0.5 : 0.995) << dtype;
    }
  }
  // The mean is of the squares: a row scaled by 1000 gives the same normalized row.
  auto row = at::randn({1, 64});
  EXPECT_LT(max_abs_err(omni::models::wan::rms_norm(row * 1000, at::Tensor(), 0.0),
                        omni::models::wan::rms_norm(row, at::Tensor(), 0.0)),
            1e-5);
}

TEST(Float8Linear, ScaledMmWithinFloat32RoundingOfTheDequantizedProduct) {
  // scaled_mm_linear (on the CPU: the float32 GEMM of the float8 values) against the product of the float8
  // operands, dequantized, in float64. Bound, per output: a float32 dot product of K terms is within gamma_K sum |a_k
  // b_k| (gamma_K = K u / (1 - K u), u = 2^-24) of the exact one; the two scale products add 2u of that sum and the
  // bias addition u |y|. So |y - exact| <= (K + 3) u S + u |exact|, S = sum_k |a_k b_k| (K u << 1 here).
  const int64_t m = 37, k = 80, n = 48;
  auto x = at::randn({m, k}) * at::linspace(0.01, 30.0, m).unsqueeze(1);  // tokens of very different sizes
  auto w = at::randn({n, k}) * at::linspace(0.001, 2.0, n).unsqueeze(1);
  auto bias = at::randn({n});
  const auto w_scale = omni::fp8::row_scales(w.abs().amax(1));        // [n]
  const auto wq = omni::fp8::quantize(w, w_scale.unsqueeze(1));       // [n, k] float8
  const auto x_scale = omni::fp8::row_scales(x.abs().amax(1, true));  // [m, 1]
  const auto xq = omni::fp8::quantize(x, x_scale);                    // [m, k] float8

  const auto y = omni::models::wan::scaled_mm_linear(x, wq, w_scale, bias);  // float32 out
  const auto a = xq.to(at::kDouble) * x_scale.to(at::kDouble);               // [m, k]
  const auto b = wq.to(at::kDouble) * w_scale.to(at::kDouble).unsqueeze(1);  // [n, k]
  const auto exact = at::matmul(a, b.t()) + bias.to(at::kDouble);            // [m, n]
  const auto s = at::matmul(a.abs(), b.abs().t());                           // [m, n]
  const double u = std::ldexp(1.0, -24);
  const auto bound = (k + 3) * u * s + u * exact.abs();
  const auto excess = ((y.to(at::kDouble) - exact).abs() - bound).max().item<double>();
  std::cout << "scaled_mm vs float64: largest error minus its bound " << excess << std::endl;
  EXPECT_LE(excess, 0.0);

  // The dequantize-then-matmul path (what runs without --fp8-matmul) obeys the same bound.
  const auto dequant = at::linear(omni::fp8::dequantize(xq, x_scale, at::kFloat),
                                  omni::fp8::dequantize(wq, w_scale.unsqueeze(1), at::kFloat), bias);
  EXPECT_LE(((dequant.to(at::kDouble) - exact).abs() - bound).max().item<double>(), 0.0);

  // A float8 Linear runs exactly one of the two, as the switch says.
  omni::models::wan::Linear linear(k, n);
  auto params = linear.parameters();  // weight, bias
  ASSERT_EQ(params.size(), 2u);
  ASSERT_NE(params[0].scale, nullptr);
  *params[0].tensor = wq;
  *params[0].scale = w_scale;
  *params[1].tensor = bias;
  omni::models::set_fp8_matmul(true);
  EXPECT_TRUE(at::equal(linear.forward(x), y));
  omni::models::set_fp8_matmul(false);
  EXPECT_TRUE(
      at::equal(linear.forward(x), at::linear(x, omni::fp8::dequantize(wq, w_scale.unsqueeze(1), at::kFloat), bias)));
}

// ---- parameters, dtypes, hooks, attention backend ----

TEST(WanTransformer, UnitsPartitionParametersAndKeepFp32Modules) {
  auto model = WanTransformer3DModel::load(kRef + "t2v-a14b-tiny/model/transformer", at::kBFloat16);
  EXPECT_EQ(model->num_blocks(), 2);
  std::multiset<std::string> all, parts;
  for (const auto& p : model->parameters()) all.insert(p.name);
  for (const auto& p : model->root_parameters()) {
    EXPECT_NE(p.name.rfind("blocks.", 0), 0u) << p.name;
    parts.insert(p.name);
  }
  for (int i = 0; i < model->num_blocks(); ++i) {
    for (const auto& p : model->block_parameters(i)) {
      EXPECT_EQ(p.name.rfind("blocks." + std::to_string(i) + ".", 0), 0u) << p.name;
      parts.insert(p.name);
    }
    // block(i) as a Module yields the same parameters, relative names.
    EXPECT_EQ(model->block(i).parameters().size(), model->block_parameters(i).size());
  }
  EXPECT_EQ(all, parts);
  auto ckpt = omni::io::Checkpoint::open(kRef + "t2v-a14b-tiny/model/transformer");
  EXPECT_EQ(all.size(), ckpt.names().size());

  // diffusers' _keep_in_fp32_modules: time_embedder, scale_shift_table, norm1/2/3 stay float32.
  for (const auto& p : model->parameters()) {
    bool fp32 = p.name.find("time_embedder") != std::string::npos ||
                p.name.find("scale_shift_table") != std::string::npos || p.name.find(".norm2.") != std::string::npos;
    EXPECT_EQ(p.tensor->scalar_type(), fp32 ? at::kFloat : at::kBFloat16) << p.name;
  }
}

struct RecordingHooks : UnitHooks {
  std::vector<std::string> events;
  void before(int unit) override { events.push_back("before " + std::to_string(unit)); }
  void after(int unit) override { events.push_back("after " + std::to_string(unit)); }
};

struct CountingBackend : AttentionBackend {
  int self_calls = 0, cross_calls = 0;
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, AttentionKind kind) override {
    (kind == AttentionKind::kSelf ? self_calls : cross_calls)++;
    EXPECT_EQ(q.dim(), 4);  // [B, H, S, d]
    EXPECT_EQ(q.size(1), 2);
    EXPECT_EQ(q.size(3), 12);
    if (kind == AttentionKind::kSelf) EXPECT_EQ(k.size(2), q.size(2));
    return omni::models::wan_attention_core(q, k, v, kind, nullptr);
  }
};

TEST(WanTransformer, HooksAndAttentionBackend) {
  Case c("t2v-a14b-tiny");
  auto model = WanTransformer3DModel::load(c.dir + "/model/transformer", at::kFloat);
  RecordingHooks hooks;
  CountingBackend backend;
  auto x = c.get("unit.transformer.in");
  auto t = c.get("unit.transformer.timestep");
  auto ctx = c.get("unit.transformer.context");
  auto with = model->forward(x, t, ctx, {&hooks, &backend});
  auto without = model->forward(x, t, ctx);
  EXPECT_TRUE(at::equal(with, without));
  std::vector<std::string> expected = {"before -1", "before 0", "after 0", "before 1", "after 1", "after -1"};
  EXPECT_EQ(hooks.events, expected);  // one gather per unit, whatever the batch
  // Each block attends once per batch row (each row runs alone: wan::each_batch_row).
  ASSERT_EQ(x.size(0), 2);
  EXPECT_EQ(backend.self_calls, 2 * 2);
  EXPECT_EQ(backend.cross_calls, 2 * 2);
}

// ---- loader errors ----

using omni::test_util::TempDir;

// Writes the t2v transformer checkpoint into a temp folder after `edit`, with its config.json.
void write_modified(const TempDir& dir, const std::function<void(omni::test_util::TensorList&)>& edit) {
  omni::test_util::write_edited_component(kRef + "t2v-a14b-tiny/model/transformer", dir.path(), edit);
}

// Loading must fail with an input error whose message names `tensor` and the checkpoint file.
void expect_load_error(const TempDir& dir, const std::string& tensor) {
  try {
    WanTransformer3DModel::load(dir.path(), at::kFloat);
    ADD_FAILURE() << "loading succeeded, expected an error naming " << tensor;
  } catch (const omni::Error& e) {
    std::string msg = e.what();
    std::cout << "error: " << msg << std::endl;
    EXPECT_EQ(e.code(), omni::ExitCode::kInput);
    EXPECT_NE(msg.find(tensor), std::string::npos) << msg;
    EXPECT_NE(msg.find(dir.path() + "/diffusion_pytorch_model.safetensors"), std::string::npos) << msg;
  }
}

TEST(WanTransformerLoad, MissingTensor) {
  TempDir dir;
  const std::string victim = "blocks.1.attn2.norm_k.weight";
  write_modified(dir, [&](auto& t) {
    auto it = std::find_if(t.begin(), t.end(), [&](const auto& p) { return p.first == victim; });
    ASSERT_NE(it, t.end());
    t.erase(it);
  });
  expect_load_error(dir, victim);
}

TEST(WanTransformerLoad, ExtraTensor) {
  TempDir dir;
  const std::string extra = "blocks.0.attn2.add_k_proj.weight";
  write_modified(dir, [&](auto& t) { t.emplace_back(extra, at::zeros({24, 24})); });
  expect_load_error(dir, extra);
}

TEST(WanTransformerLoad, WrongShape) {
  TempDir dir;
  const std::string victim = "condition_embedder.time_proj.weight";
  write_modified(dir, [&](auto& t) {
    for (auto& p : t)
      if (p.first == victim) p.second = at::zeros({p.second.size(0), p.second.size(1) + 1});
  });
  expect_load_error(dir, victim);
}

// ---- config errors ----

void expect_config_error(nlohmann::json j, const std::string& key) {
  try {
    WanTransformerConfig::from_json(j, "some/transformer/config.json");
    ADD_FAILURE() << "config accepted, expected an error naming " << key;
  } catch (const omni::Error& e) {
    std::string msg = e.what();
    std::cout << "error: " << msg << std::endl;
    EXPECT_EQ(e.code(), omni::ExitCode::kInput);
    EXPECT_NE(msg.find("'" + key + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("some/transformer/config.json"), std::string::npos) << msg;
  }
}

TEST(WanTransformerConfig, ParsesFixtureAndRejectsBadKeys) {
  auto base = omni::io::read_json(kRef + "ti2v-5b-tiny/model/transformer/config.json");
  auto cfg = WanTransformerConfig::from_json(base, "x");
  EXPECT_EQ(cfg.inner_dim(), 24);
  EXPECT_EQ(cfg.in_channels, 48);
  EXPECT_EQ(cfg.out_channels, 48);
  EXPECT_EQ(cfg.ffn_dim, 32);
  EXPECT_EQ(cfg.num_layers, 2);
  EXPECT_TRUE(cfg.cross_attn_norm);
  EXPECT_EQ(cfg.patch_size, (std::array<int64_t, 3>{1, 2, 2}));

  auto j = base;
  j["image_dim"] = 1280;
  expect_config_error(j, "image_dim");
  j = base;
  j["added_kv_proj_dim"] = 5120;
  expect_config_error(j, "added_kv_proj_dim");
  j = base;
  j.erase("num_layers");
  expect_config_error(j, "num_layers");
  j = base;
  j["attention_head_dim"] = "12";
  expect_config_error(j, "attention_head_dim");
  j = base;
  j["patch_size"] = {1, 2};
  expect_config_error(j, "patch_size");
  j = base;
  j["qk_norm"] = "rms_norm";
  expect_config_error(j, "qk_norm");
}

}  // namespace
