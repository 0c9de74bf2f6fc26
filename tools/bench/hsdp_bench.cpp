// hsdp_bench: what HSDP costs and saves on a model of realistic shape ratios, per rank.
//
//   mpirun -np 4 hsdp_bench [--dir DIR] [--blocks 8] [--dim 1024] [--heads 16] [--frames 2] [--height 16]
//                           [--width 16] [--text-len 64] [--text-layers 2] [--forwards 2] [--warmup 1]
//
// A ti2v-5b-shaped checkpoint (one expert; patch 1x2x2, ffn 4 x dim, heads of 64, text dim = dim, and a UMT5
// of d_model = dim, d_ff 2.5 x dim, heads of 64, the real model's ratios) is generated once by rank 0 into DIR
// (default $TMPDIR/omni-hsdp-bench-b<blocks>-d<dim>) and reused when present. Every rank then loads it
// sharded over the world (shard = world, one replicate) and runs warmup + forwards transformer forwards on
// frames x height x width latents (/ 4 tokens), and one UMT5 forward; then the same transformer loaded whole.
// Per rank it prints: resident parameter bytes against total / shard, peak gathered bytes, bytes read from
// disk, bytes gathered per forward (one forward = one denoising step with cond + uncond batched), seconds
// blocked on gathers per forward, seconds per forward, and the unsharded figures; and the max abs
// difference of the outputs (0: sharding only moves data).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/timer.h"
#include "dist/communicator.h"
#include "dist/device_mesh.h"
#include "dist/parallel_config.h"
#include "dist/process_group.h"
#include "generator/checkpoint_generator.h"
#include "io/safetensors.h"
#include "models/hsdp_sharding.h"
#include "models/umt5_encoder.h"
#include "models/wan_transformer.h"

namespace {

namespace fs = std::filesystem;
using omni::models::Umt5Encoder;
using omni::models::WanTransformer3DModel;

struct Options {
  std::string dir;
  int64_t blocks = 8, dim = 1024, heads = 16;
  int64_t frames = 2, height = 16, width = 16;  // latent grid; tokens = frames * height/2 * width/2
  int64_t text_len = 64, text_layers = 2;
  int forwards = 2, warmup = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (const auto& [a, v] : omni::bench::flag_values(argc, argv, "hsdp_bench")) {
    if (a == "--dir")
      o.dir = v;
    else if (a == "--blocks")
      o.blocks = std::atoll(v);
    else if (a == "--dim")
      o.dim = std::atoll(v);
    else if (a == "--heads")
      o.heads = std::atoll(v);
    else if (a == "--frames")
      o.frames = std::atoll(v);
    else if (a == "--height")
      o.height = std::atoll(v);
    else if (a == "--width")
      o.width = std::atoll(v);
    else if (a == "--text-len")
      o.text_len = std::atoll(v);
    else if (a == "--text-layers")
      o.text_layers = std::atoll(v);
    else if (a == "--forwards")
      o.forwards = std::atoi(v);
    else if (a == "--warmup")
      o.warmup = std::atoi(v);
    else
      OMNI_FAIL_USAGE("hsdp_bench: unknown option ", a);
  }
  OMNI_CHECK_USAGE(o.dim % o.heads == 0, "hsdp_bench: --dim ", o.dim, " is not a multiple of --heads ", o.heads);
  OMNI_CHECK_USAGE(o.forwards >= 1 && o.warmup >= 0, "hsdp_bench: --forwards must be >= 1 and --warmup >= 0");
  if (o.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o.dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/omni-hsdp-bench-b" + std::to_string(o.blocks) + "-d" +
            std::to_string(o.dim) + "-h" + std::to_string(o.heads) + "-t" + std::to_string(o.text_layers);
  }
  return o;
}

// The real models' ratios at width `dim`: ffn 4 x dim (13824 / 5120 is 2.7 for A14B; 14336 / 3072 = 4.7 for
// 5B), heads of dim / heads, UMT5 d_ff 2.5 x d_model with heads of 64.
omni::generator::CheckpointSpec bench_spec(const Options& o) {
  auto s = omni::generator::make_preset(omni::generator::CheckpointKind::kTi2v5b, "small");  // VAE and tokenizer small
  auto& t = s.transformer;
  t.num_layers = o.blocks;
  t.num_attention_heads = o.heads;
  t.attention_head_dim = o.dim / o.heads;
  t.ffn_dim = 4 * o.dim;
  t.text_dim = o.dim;
  auto& te = s.text_encoder;
  te.d_model = o.dim;
  te.d_kv = 64;
  te.num_heads = o.dim / 64;
  te.d_ff = o.dim * 5 / 2;
  te.num_layers = o.text_layers;
  te.vocab_size = 8192;
  return s;
}

// Per-rank figures, gathered to rank 0 for the table.
enum Field {
  kResident,
  kTotalOverShard,
  kPeakGathered,
  kDiskRead,
  kGatheredPerFwd,
  kWaitPerFwd,
  kSecPerFwd,
  kTextResident,
  kTextTotalOverShard,
  kTextDisk,
  kTextGathered,
  kTextSec,
  kWholeResident,
  kWholeDisk,
  kWholeSecPerFwd,
  kMaxDiff,
  kRssSharded,
  kRssWhole,
  kFields
};

at::Tensor seeded_randn(at::IntArrayRef shape, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat));
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  omni::dist::Communicator world = omni::dist::Communicator::world();
  const int rank = world.rank(), n = world.size();
  const auto spec = bench_spec(o);
  const std::string tdir = o.dir + "/transformer", edir = o.dir + "/text_encoder";

  omni::Timer gen_timer;
  const bool generate = !fs::exists(o.dir + "/model_index.json");  // a complete checkpoint (written atomically)
  if (rank == 0 && generate) omni::generator::generate_checkpoint(spec, o.dir);
  world.barrier();
  const double gen_s = gen_timer.seconds();

  omni::dist::ParallelConfig pc;
  pc.use_hsdp = true;
  pc.hsdp_shard_size = n;
  omni::dist::DeviceMesh mesh(omni::dist::resolve_layout(pc, n), world);
  auto shard_group = omni::dist::make_process_group(mesh.shard(), at::kCPU);
  auto pool = std::make_shared<omni::hsdp::BufferPool>(at::kCPU);

  // Inputs: one denoising step, cond + uncond batched (what the pipeline runs without cfg parallelism).
  const auto& ts = spec.transformer;
  const at::Tensor x = seeded_randn({1, ts.in_channels, o.frames, o.height, o.width}, 1).repeat({2, 1, 1, 1, 1});
  const at::Tensor t = at::tensor({500.0f, 500.0f});
  const at::Tensor ctx = seeded_randn({2, o.text_len, ts.text_dim}, 2);  // [2, L, text_dim]
  const at::Tensor ids = at::arange(o.text_len, at::kLong).remainder(spec.tokenizer_vocab_size).unsqueeze(0);
  const at::Tensor mask = at::ones_like(ids);
  const int64_t tokens = o.frames * (o.height / ts.patch_size[1]) * (o.width / ts.patch_size[2]);

  std::vector<double> f(kFields, 0.0);
  at::Tensor sharded_out;
  {
    auto stats = std::make_shared<omni::hsdp::HsdpStats>();
    auto text_stats = std::make_shared<omni::hsdp::HsdpStats>();
    // UMT5, sharded, one forward.
    auto ckpt_te = omni::io::Checkpoint::open(edir);
    auto te_config = omni::models::Umt5Config::from_json(edir + "/config.json");
    te_config.resolve_embedding(ckpt_te);
    Umt5Encoder text(te_config, at::kFloat);
    std::vector<const omni::models::Module*> te_blocks;
    for (int i = 0; i < text.num_blocks(); ++i) te_blocks.push_back(&text.block(i));
    auto text_sharded = omni::models::shard_model("text_encoder", text, te_blocks, ckpt_te, shard_group.get(),
                                                  at::kFloat, at::kCPU, pool, text_stats);
    f[kTextResident] = text_sharded->resident_bytes();
    f[kTextTotalOverShard] = static_cast<double>(ckpt_te.total_bytes()) / n;
    f[kTextDisk] = text_stats->disk_bytes_read;
    {
      omni::models::HsdpHooks hooks(text_sharded.get());
      omni::Timer tm;
      text.forward(ids, mask, &hooks);
      f[kTextSec] = tm.seconds();
      f[kTextGathered] = text_stats->received_bytes_total;
    }
    text_sharded.reset();
    pool->clear();  // the text encoder's buffers fit no transformer unit

    // The transformer, sharded.
    auto ckpt = omni::io::Checkpoint::open(tdir);
    WanTransformer3DModel model(omni::models::WanTransformerConfig::load(tdir), at::kFloat);
    std::vector<const omni::models::Module*> blocks;
    for (int i = 0; i < model.num_blocks(); ++i) blocks.push_back(&model.block(i));
    auto sharded = omni::models::shard_model("transformer", model, blocks, ckpt, shard_group.get(), at::kFloat,
                                             at::kCPU, pool, stats);
    f[kResident] = sharded->resident_bytes();
    f[kTotalOverShard] = static_cast<double>(ckpt.total_bytes()) / n;
    f[kDiskRead] = stats->disk_bytes_read;
    omni::models::HsdpHooks hooks(sharded.get());
    for (int i = 0; i < o.warmup; ++i) model.forward(x, t, ctx, &hooks);
    const int64_t recv0 = stats->received_bytes_total;
    const double wait0 = stats->gather_wait_seconds;
    omni::Timer tm;
    for (int i = 0; i < o.forwards; ++i) sharded_out = model.forward(x, t, ctx, &hooks);
    f[kSecPerFwd] = tm.seconds() / o.forwards;
    f[kGatheredPerFwd] = static_cast<double>(stats->received_bytes_total - recv0) / o.forwards;
    f[kWaitPerFwd] = (stats->gather_wait_seconds - wait0) / o.forwards;
    f[kPeakGathered] = stats->gathered_bytes_peak;
    f[kRssSharded] = static_cast<double>(omni::current_rss_bytes());  // includes the touched checkpoint pages
  }
  pool->clear();
  world.barrier();
  {
    // The same transformer loaded whole on every rank (all ranks at once: the same CPU contention).
    auto ckpt = omni::io::Checkpoint::open(tdir);
    auto whole = std::make_unique<WanTransformer3DModel>(omni::models::WanTransformerConfig::load(tdir), at::kFloat);
    omni::models::load_state(*whole, ckpt, at::kFloat);  // what WanTransformer3DModel::load does
    f[kWholeResident] = whole->parameter_bytes();
    f[kWholeDisk] = ckpt.bytes_read();
    for (int i = 0; i < o.warmup; ++i) whole->forward(x, t, ctx);
    omni::Timer tm;
    at::Tensor out;
    for (int i = 0; i < o.forwards; ++i) out = whole->forward(x, t, ctx);
    f[kWholeSecPerFwd] = tm.seconds() / o.forwards;
    f[kMaxDiff] = (out.to(at::kDouble) - sharded_out.to(at::kDouble)).abs().max().item<double>();
    f[kRssWhole] = static_cast<double>(omni::current_rss_bytes());
  }

  std::vector<double> all(static_cast<size_t>(kFields) * n);
  MPI_Gather(f.data(), kFields, MPI_DOUBLE, all.data(), kFields, MPI_DOUBLE, 0, world.comm());
  if (rank == 0) {
    const auto mib = [](double b) { return b / (1 << 20); };
    std::printf("# hsdp_bench: %d ranks, shard %d x replicate 1, float32 CPU, checkpoint %s (%s%.1f s)\n", n, n,
                o.dir.c_str(), generate ? "generated in " : "reused, waited ", gen_s);
    std::printf(
        "# transformer: %lld blocks, dim %lld, ffn %lld, %lld heads x %lld, text dim %lld; %lld tokens, "
        "batch 2 (cond + uncond), text length %lld; %d timed forwards after %d warm-up\n",
        (long long)ts.num_layers, (long long)o.dim, (long long)ts.ffn_dim, (long long)o.heads,
        (long long)ts.attention_head_dim, (long long)ts.text_dim, (long long)tokens, (long long)o.text_len, o.forwards,
        o.warmup);
    std::printf("# UMT5: %lld layers, d_model %lld, d_ff %lld, vocab %lld\n", (long long)spec.text_encoder.num_layers,
                (long long)spec.text_encoder.d_model, (long long)spec.text_encoder.d_ff,
                (long long)spec.text_encoder.vocab_size);
    std::printf(
        "# sizes in MiB. transformer sharded: resident vs total/shard, peak gathered, disk read, gathered "
        "per forward, gather wait and time per forward; te_: UMT5 sharded (one forward); whole_: the "
        "transformer unsharded; rss: resident set after each phase (mapped checkpoint pages included)\n");
    std::printf("%4s | %9s %11s %9s %9s %10s %8s %8s | %9s %11s %9s %9s %8s | %9s %9s %8s | %7s %8s %9s\n", "rank",
                "resident", "total/shard", "peak_gath", "disk", "gath/fwd", "wait_s", "s/fwd", "te_resid", "te_tot/shd",
                "te_disk", "te_gath", "te_s", "whole_res", "whole_dsk", "s/fwd", "maxdiff", "rss_shd", "rss_whole");
    for (int r = 0; r < n; ++r) {
      const double* v = &all[static_cast<size_t>(r) * kFields];
      std::printf(
          "%4d | %9.2f %11.2f %9.2f %9.2f %10.2f %8.3f %8.3f | %9.2f %11.2f %9.2f %9.2f %8.3f | %9.2f %9.2f "
          "%8.3f | %7.1g %8.1f %9.1f\n",
          r, mib(v[kResident]), mib(v[kTotalOverShard]), mib(v[kPeakGathered]), mib(v[kDiskRead]),
          mib(v[kGatheredPerFwd]), v[kWaitPerFwd], v[kSecPerFwd], mib(v[kTextResident]), mib(v[kTextTotalOverShard]),
          mib(v[kTextDisk]), mib(v[kTextGathered]), v[kTextSec], mib(v[kWholeResident]), mib(v[kWholeDisk]),
          v[kWholeSecPerFwd], v[kMaxDiff], mib(v[kRssSharded]), mib(v[kRssWhole]));
    }
  }
  double worst = f[kMaxDiff], worst_all = 0;
  MPI_Allreduce(&worst, &worst_all, 1, MPI_DOUBLE, MPI_MAX, world.comm());
  shard_group.reset();  // before MPI_Finalize
  return worst_all == 0.0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return omni::bench::bench_main(argc, argv, "hsdp_bench", run);
}
