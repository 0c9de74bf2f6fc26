// block_traffic: the operators one WanTransformerBlock forward runs and the bytes they move, apart from matrix
// products, attention, convolutions and views (tools/bench/block_traffic.sh puts these next to diffusers').
//
//   block_traffic [--tokens 4096] [--text 512] [--dims 5120,3072] [--per-token-dims 3072] [--list]
//                 [--json FILE] [--self-test]
//
// Workloads: one block in bfloat16 at A14B width (dim 5120, 40 heads, ffn 13824, cross_attn_norm, eps 1e-6,
// scalar timestep modulation: timestep_proj [1, 6, D]) and at TI2V-5B width (3072, 24 heads, ffn 14336,
// per-token timesteps in two runs, the first frame's tokens and the rest: timestep_proj [1, 2, 6, D], while
// diffusers' side builds [1, S, 6, D]); other widths D get D/128 heads and ffn 2.7 D rounded up
// to 128. Batch 1, S video tokens on a frames x height x width grid as cubic as possible (4,096: 16 x 16 x 16),
// L text tokens; x, context and timestep_proj in bfloat16 (the condition embedder hands over timestep_proj in
// the activation dtype, as diffusers' bfloat16 time_proj does); weights random, scale_shift_table and norm2 in
// float32 (the block registers them so, as diffusers' _keep_in_fp32_modules keeps them). On the CPU.
//
// THE COUNTING RULE (the same as tools/bench/block_traffic_diffusers.py's TorchDispatchMode applies):
//   A TorchDispatchMode sees only the outermost ops below the autograd / composite level: ops with a
//   CompositeImplicitAutograd kernel (at::linear, at::layer_norm, Tensor::to, at::matmul, reshape, flatten,
//   ...) are decomposed before it, and ops called inside another op's kernel are never seen. Here an ATen
//   RecordFunction observer (thread-local, inputs and outputs captured) keeps a per-thread depth of open
//   non-composite ops: an op is SEEN when it is not CompositeImplicitAutograd (Dispatcher::findSchema(...)
//   .hasKernelForDispatchKey(CompositeImplicitAutograd)) and no non-composite op is open around it.
//   Composite ops are transparent (their children may be seen); a seen op, counted or not, hides everything
//   called inside it. Ops on other threads (kernels' worker threads) are ignored.
//   Of the seen ops, these are NOT counted:
//     - matrix products: mm, addmm, bmm, baddbmm, matmul, linear, _addmm_activation, _scaled_mm, addbmm, addmv,
//       mv, dot, ...;
//     - attention: scaled_dot_product_* and the _flash / _efficient / _cudnn attention kernels, including
//       _scaled_dot_product_flash_attention_for_cpu;
//     - convolutions (any op with "convolution" in its name, conv1d/2d/3d, conv_transpose*);
//     - views, ops whose outputs alias an input and move nothing: every return of the schema carries alias
//       information that is not a write (view, transpose, permute, select, slice, expand, unsqueeze, squeeze,
//       as_strided, alias, detach, split, unbind, t, ...), plus _unsafe_view and _reshape_alias.
//   In-place and out= ops (copy_, add_) write their input and are counted.
//   Bytes of a counted op: numel x element size of every tensor input and every tensor output (tensors in
//   lists included, undefined optional tensors not; scalars are not tensors). An in-place op's returned self
//   counts as an output, as in Python.
//
// Output, per width: "ours WIDTH: ops N bytes B" (and the per-op table with --list); --json FILE writes the
// counts and the tables. --self-test holds the counter to hand-computed counts of a few known ops and exits.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/module.h"
#include "models/wan_rotary_pos_embed.h"
#include "models/wan_transformer_block.h"

namespace {

// ---------------------------------------------------------------------------------------------------------
// The counter

// Base names (no "aten::", no overload) of matrix products, attention and convolutions. Keep in step with
// EXCLUDED in block_traffic_diffusers.py.
const std::set<std::string>& excluded_names() {
  static const std::set<std::string> names = {
      // matrix products
      "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_addmm_activation", "_scaled_mm", "addbmm", "addmv", "mv",
      "dot", "vdot", "einsum", "tensordot", "_int_mm", "_weight_int4pack_mm", "_weight_int8pack_mm",
      "_mixed_dtypes_linear", "_scaled_grouped_mm", "_grouped_mm", "mkldnn_linear", "_mkldnn_linear",
      "fbgemm_linear_fp16_weight",
      // attention
      "scaled_dot_product_attention", "_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention",
      "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
      "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable",
      "_flash_attention_forward", "_efficient_attention_forward", "_cudnn_attention_forward",
      // convolutions
      "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
      "conv_transpose3d", "cudnn_convolution", "mkldnn_convolution", "_slow_conv2d_forward", "slow_conv3d_forward",
      "_nnpack_spatial_convolution", "miopen_convolution"};
  return names;
}

int64_t ivalue_bytes(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  }
  if (v.isTensorList()) {
    int64_t n = 0;
    for (const at::Tensor& t : v.toTensorVector()) n += t.defined() ? t.numel() * t.element_size() : 0;
    return n;
  }
  if (v.isList()) {  // e.g. Tensor?[] (index)
    int64_t n = 0;
    for (const c10::IValue& e : v.toListRef()) n += ivalue_bytes(e);
    return n;
  }
  if (v.isTuple()) {
    int64_t n = 0;
    for (const c10::IValue& e : v.toTupleRef().elements()) n += ivalue_bytes(e);
    return n;
  }
  return 0;
}

// What the rule makes of one operator (by its full name "aten::op.overload").
struct OpKind {
  bool composite = false;  // CompositeImplicitAutograd: transparent
  bool counted = false;    // seen and neither excluded nor a view
};

struct OpTotal {
  int64_t count = 0, bytes = 0;
};

class TrafficCounter {
 public:
  TrafficCounter() : owner_(std::this_thread::get_id()) {
    active_ = this;
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&TrafficCounter::on_start, &TrafficCounter::on_end)
                                             .needsInputs(true)
                                             .needsOutputs(true)
                                             .scopes({at::RecordScope::FUNCTION}));
  }
  ~TrafficCounter() {
    at::removeCallback(handle_);
    active_ = nullptr;
  }
  TrafficCounter(const TrafficCounter&) = delete;
  TrafficCounter& operator=(const TrafficCounter&) = delete;

  // By op name ("add.Tensor", "_to_copy.default"), in order of first call.
  const std::vector<std::pair<std::string, OpTotal>>& table() const { return table_; }
  int64_t ops() const {
    int64_t n = 0;
    for (const auto& e : table_) n += e.second.count;
    return n;
  }
  int64_t bytes() const {
    int64_t n = 0;
    for (const auto& e : table_) n += e.second.bytes;
    return n;
  }

 private:
  struct Ctx : at::ObserverContext {
    bool opened = false;  // a non-composite op: depth was raised
    bool counted = false;
    std::string name;
    int64_t in_bytes = 0;
  };

  static OpKind kind_of(const at::RecordFunction& fn, std::string* short_name) {
    static std::unordered_map<std::string, std::pair<OpKind, std::string>> cache;
    const auto op = fn.operator_name();
    const std::string key = op ? op->name + "." + op->overload_name : std::string(fn.name());
    auto it = cache.find(key);
    if (it == cache.end()) {
      OpKind k;
      std::string name = op ? op->name : std::string(fn.name());
      std::string base = name.rfind("::") == std::string::npos ? name : name.substr(name.rfind("::") + 2);
      const std::string shown = (name.compare(0, 6, "aten::") == 0 ? base : name) + "." +
                                (op && !op->overload_name.empty() ? op->overload_name : "default");
      bool view = base == "_unsafe_view" || base == "_reshape_alias";
      if (op) {
        const auto handle = c10::Dispatcher::singleton().findSchema(*op);
        if (handle) {
          k.composite = handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
          const auto& rets = handle->schema().returns();
          bool all_alias = !rets.empty();
          for (const auto& r : rets) all_alias = all_alias && r.alias_info() && !r.alias_info()->isWrite();
          view = view || all_alias;
        }
      }
      const bool excluded = excluded_names().count(base) > 0 || base.find("convolution") != std::string::npos ||
                            base.compare(0, 21, "_scaled_dot_product_") == 0;
      k.counted = !k.composite && !excluded && !view;
      it = cache.emplace(key, std::make_pair(k, shown)).first;
    }
    *short_name = it->second.second;
    return it->second.first;
  }

  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    TrafficCounter* c = active_;
    if (!c || std::this_thread::get_id() != c->owner_) return nullptr;
    auto ctx = std::make_unique<Ctx>();
    const OpKind k = kind_of(fn, &ctx->name);
    if (k.composite) return ctx;  // transparent
    if (c->depth_ == 0 && k.counted) {
      ctx->counted = true;
      for (const c10::IValue& v : fn.inputs()) ctx->in_bytes += ivalue_bytes(v);
    }
    ctx->opened = true;
    ++c->depth_;
    return ctx;
  }

  static void on_end(const at::RecordFunction& fn, at::ObserverContext* base) {
    TrafficCounter* c = active_;
    auto* ctx = static_cast<Ctx*>(base);
    if (!c || !ctx || std::this_thread::get_id() != c->owner_) return;
    if (ctx->opened) --c->depth_;
    if (!ctx->counted) return;
    int64_t out_bytes = 0;
    for (const c10::IValue& v : fn.outputs()) out_bytes += ivalue_bytes(v);
    auto it = std::find_if(c->table_.begin(), c->table_.end(), [&](const auto& e) { return e.first == ctx->name; });
    if (it == c->table_.end()) {
      c->table_.emplace_back(ctx->name, OpTotal{});
      it = std::prev(c->table_.end());
    }
    it->second.count += 1;
    it->second.bytes += ctx->in_bytes + out_bytes;
  }

  static TrafficCounter* active_;
  std::thread::id owner_;
  int depth_ = 0;
  std::vector<std::pair<std::string, OpTotal>> table_;
  at::CallbackHandle handle_;
};
TrafficCounter* TrafficCounter::active_ = nullptr;

// ---------------------------------------------------------------------------------------------------------
// Self-test: the counter on known ops, against hand-computed counts and bytes.

int self_test() {
  int failures = 0;
  auto expect = [&](const char* what, const TrafficCounter& c, int64_t ops, int64_t bytes, const char* op = nullptr) {
    bool ok = c.ops() == ops && c.bytes() == bytes;
    if (ok && op) ok = c.table().size() == 1 && c.table()[0].first == op;
    std::string got;
    for (const auto& e : c.table()) got += " " + e.first + " x" + std::to_string(e.second.count);
    std::cout << "block_traffic self-test: " << what << ": ops " << c.ops() << " bytes " << c.bytes() << " (want "
              << ops << ", " << bytes << ")" << got << (ok ? "  ok" : "  FAILED") << std::endl;
    failures += ok ? 0 : 1;
  };
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor a = at::randn({4, 8}, f32), b = at::randn({4, 8}, f32);
  {
    TrafficCounter c;
    auto r = a.add(b);  // add.Tensor: 2 inputs + 1 output of 128 bytes
    expect("a.add(b), [4, 8] float", c, 1, 3 * 128, "add.Tensor");
  }
  {
    TrafficCounter c;
    auto r = a.view({8, 4}).transpose(0, 1).unsqueeze(0).squeeze(0).select(0, 1).narrow(0, 2, 4);
    auto f = a.reshape({2, 16}).flatten().unflatten(0, {4, 8}).expand({3, 4, 8}).chunk(2, 1);  // reshape: a view
    expect("views (view, transpose, unsqueeze, squeeze, select, narrow, reshape, flatten, unflatten, expand, chunk)", c,
           0, 0);
  }
  {
    const at::Tensor w = at::randn({16, 8}, f32), bias = at::randn({16}, f32);
    TrafficCounter c;
    auto r = at::linear(a, w, bias);  // linear -> t (view) + addmm (excluded); nothing inside addmm counts
    auto m = at::matmul(a.unsqueeze(0).expand({3, 4, 8}), w.t());  // matmul -> bmm / mm (+ _unsafe_view)
    expect("at::linear, at::matmul", c, 0, 0);
  }
  {
    const at::Tensor x = a.to(at::kBFloat16);
    TrafficCounter c;
    auto r = x.to(at::kFloat);  // to.dtype (composite) -> _to_copy: 64 bytes in, 128 out; its copy_ hidden
    expect("bf16 x.to(kFloat)", c, 1, 64 + 128, "_to_copy.default");
  }
  {
    TrafficCounter c;
    auto r = 1 + a;  // one op, one tensor in and out (the scalar is no tensor, or a wrapped one inside)
    auto s = at::layer_norm(a, {8});  // composite -> native_layer_norm: in 128; out 128 + mean 16 + rstd 16
    expect("1 + a; layer_norm", c, 2, 2 * 128 + 128 + 128 + 16 + 16);
  }
  {
    TrafficCounter c;
    at::Tensor y = at::empty({4, 8}, f32);  // empty.memory_format: no tensor in, 128 out
    y.copy_(a);                             // copy_: self + src in, self out
    expect("empty + copy_", c, 2, 128 + 3 * 128);
  }
  {
    const at::Tensor q = at::randn({1, 2, 16, 8}, f32);
    TrafficCounter c;
    auto r = at::scaled_dot_product_attention(q, q, q);  // excluded, and everything inside it hidden
    expect("scaled_dot_product_attention", c, 0, 0);
  }
  std::cout << "block_traffic self-test: " << (failures ? "FAILED" : "all checks passed") << std::endl;
  return failures ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------------------
// The block

struct Width {
  int64_t dim, heads, ffn;
  bool per_token;
};

Width width_for(int64_t dim, const std::set<int64_t>& per_token) {
  if (dim == 5120) return {5120, 40, 13824, per_token.count(dim) > 0};
  if (dim == 3072) return {3072, 24, 14336, per_token.count(dim) > 0};
  return {dim, std::max<int64_t>(1, dim / 128), (dim * 27 / 10 + 127) / 128 * 128, per_token.count(dim) > 0};
}

// frames x height x width with `tokens` cells, the largest side as small as possible (4,096: 16 x 16 x 16);
// the same choice as grid_for() in block_traffic_diffusers.py.
std::array<int64_t, 3> grid_for(int64_t tokens) {
  std::array<int64_t, 3> best{tokens, 1, 1};
  int64_t best_score = tokens + 1;
  for (int64_t f = 1; f <= tokens; ++f) {
    if (tokens % f) continue;
    const int64_t rest = tokens / f;
    for (int64_t h = 1; h <= rest; ++h) {
      if (rest % h) continue;
      const int64_t w = rest / h, score = std::max({f, h, w});
      if (score < best_score) best_score = score, best = {f, h, w};
    }
  }
  return best;
}

// Random weights at unit-preserving scales (as forward_bench's fill_random), each in its registered dtype.
void fill_random(const omni::models::Module& module, at::ScalarType dtype) {
  at::manual_seed(0);
  for (const auto& p : module.parameters()) {
    const auto opts = at::TensorOptions().dtype(omni::models::resolve_param_dtype(p.dtype_rule, dtype));
    at::Tensor t = at::empty(p.shape, at::TensorOptions().dtype(at::kFloat));
    const std::string leaf = p.name.substr(p.name.rfind('.') + 1);
    if (leaf == "scale_shift_table") {
      t.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(p.shape.back())));
    } else if (leaf == "bias") {
      t.normal_(0.0, 0.02);
    } else if (p.shape.size() == 1) {
      t.normal_(1.0, 0.02);
    } else {
      t.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(p.shape.back())));
    }
    *p.tensor = t.to(opts.dtype());
  }
}

struct Result {
  Width w;
  std::array<int64_t, 3> grid;
  int64_t tokens, text, ops, bytes;
  double seconds;
  std::vector<std::pair<std::string, OpTotal>> table;
};

Result run_width(const Width& w, int64_t tokens, int64_t text) {
  omni::models::WanTransformerBlock block(w.dim, w.ffn, w.heads, /*cross_attn_norm=*/true, /*eps=*/1e-6);
  fill_random(block, at::kBFloat16);
  const auto grid = grid_for(tokens);
  omni::models::WanRotaryPosEmbed rope_embed(w.dim / w.heads, 1024, 10000.0);
  const auto rope = rope_embed.forward(grid[0], grid[1], grid[2], at::Device(at::kCPU));
  at::manual_seed(1);
  const auto bf16 = at::TensorOptions().dtype(at::kBFloat16);
  const at::Tensor x = at::randn({1, tokens, w.dim}, bf16), context = at::randn({1, text, w.dim}, bf16);
  // TI2V's per-token timesteps with an image: the first latent frame's tokens at 0, the rest at t, two runs.
  omni::models::TokenRuns runs;
  if (w.per_token) runs = {{0, grid[1] * grid[2]}, tokens};
  const at::Tensor temb = w.per_token ? at::randn({1, 2, 6, w.dim}, bf16) : at::randn({1, 6, w.dim}, bf16);

  c10::InferenceMode guard;
  Result r{w, grid, tokens, text, 0, 0, 0.0, {}};
  at::Tensor out;
  {
    TrafficCounter c;
    const auto t0 = std::chrono::steady_clock::now();
    out = block.forward(x, context, temb, runs, rope);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.ops = c.ops();
    r.bytes = c.bytes();
    r.table = c.table();
  }
  if (out.sizes() != x.sizes() || out.scalar_type() != at::kBFloat16 || !at::isfinite(out).all().item<bool>()) {
    std::cerr << "block_traffic: bad block output " << out.sizes() << " " << out.scalar_type() << std::endl;
    std::exit(1);
  }
  return r;
}

void print_table(const Result& r) {
  std::printf("ours %lld: per-op table (op, count, bytes, GB)\n", static_cast<long long>(r.w.dim));
  auto rows = r.table;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
  for (const auto& e : rows)
    std::printf("  %-40s %4lld %14lld %8.3f\n", e.first.c_str(), static_cast<long long>(e.second.count),
                static_cast<long long>(e.second.bytes), e.second.bytes / 1e9);
  std::printf("  %-40s %4lld %14lld %8.3f\n", "total", static_cast<long long>(r.ops), static_cast<long long>(r.bytes),
              r.bytes / 1e9);
}

std::string json_of(const std::vector<Result>& results) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    s << (i ? ",\n " : "\n ") << "{\"dim\": " << r.w.dim << ", \"heads\": " << r.w.heads << ", \"ffn_dim\": " << r.w.ffn
      << ", \"per_token\": " << (r.w.per_token ? "true" : "false") << ", \"tokens\": " << r.tokens
      << ", \"text\": " << r.text << ", \"grid\": [" << r.grid[0] << ", " << r.grid[1] << ", " << r.grid[2]
      << "], \"device\": \"cpu\", \"ops\": " << r.ops << ", \"bytes\": " << r.bytes << ", \"seconds\": " << r.seconds
      << ", \"table\": [";
    for (size_t j = 0; j < r.table.size(); ++j)
      s << (j ? ", " : "") << "[\"" << r.table[j].first << "\", " << r.table[j].second.count << ", "
        << r.table[j].second.bytes << "]";
    s << "]}";
  }
  s << "\n]\n";
  return s.str();
}

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(std::stoll(item));
  return out;
}

int usage(const char* msg) {
  std::cerr << "block_traffic: " << msg
            << "\nusage: block_traffic [--tokens 4096] [--text 512] [--dims 5120,3072] [--per-token-dims 3072] "
               "[--list] [--json FILE] [--self-test]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t tokens = 4096, text = 512;
  std::vector<int64_t> dims{5120, 3072};
  std::set<int64_t> per_token{3072};
  bool list = std::getenv("BLOCK_TRAFFIC_LIST") != nullptr, test = false;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage(("missing value for " + a).c_str()));
      return argv[++i];
    };
    if (a == "--tokens") {
      tokens = std::stoll(value());
    } else if (a == "--text") {
      text = std::stoll(value());
    } else if (a == "--dims") {
      dims = parse_list(value());
    } else if (a == "--per-token-dims") {
      const auto v = parse_list(value());
      per_token = std::set<int64_t>(v.begin(), v.end());
    } else if (a == "--list") {
      list = true;
    } else if (a == "--json") {
      json = value();
    } else if (a == "--self-test") {
      test = true;
    } else {
      return usage(("unknown argument " + a).c_str());
    }
  }
  if (test) return self_test();
  if (tokens < 1 || text < 1 || dims.empty()) return usage("need --tokens, --text >= 1 and some --dims");

  std::vector<Result> results;
  for (const int64_t d : dims) {
    const Width w = width_for(d, per_token);
    if (w.dim % w.heads || (w.dim / w.heads) % 2) return usage("each width must split into heads of even size");
    results.push_back(run_width(w, tokens, text));
    const Result& r = results.back();
    std::printf("ours %lld: ops %lld bytes %lld (%.3f GB, %.1f s)\n", static_cast<long long>(d),
                static_cast<long long>(r.ops), static_cast<long long>(r.bytes), r.bytes / 1e9, r.seconds);
    if (list) print_table(r);
    std::fflush(stdout);
  }
  if (!json.empty()) {
    std::ofstream f(json);
    f << json_of(results);
    if (!f) {
      std::cerr << "block_traffic: cannot write " << json << std::endl;
      return 1;
    }
  }
  return 0;
}
