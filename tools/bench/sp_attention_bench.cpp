// Ring attention against Ulysses on the same tokens: each rank holds S/n tokens of q, k, v [B, H, S/n, d]
// (the self-attention of one transformer block), and both backends compute the whole-sequence attention
// for them. Prints seconds per call (max over ranks, median of --iters) and ring / ulysses. Ulysses runs the
// fused kernel on whole sequences of H/n heads; ring runs it on S/n x S/n blocks and merges them. q, k and v
// are transposes of [B, S/n, H, d] tensors, as the transformer's attention hands them over.
//
//   mpirun -np 2 build/tools/bench/sp_attention_bench --tokens 4096 --heads 8 --head-dim 64 --dtype float32
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/dtype.h"
#include "core/timer.h"
#include "dist/process_group.h"
#include "pipeline/sequence_parallel.h"

namespace {

int run(int argc, char** argv) {
  int64_t tokens = 4096, heads = 8, head_dim = 64, batch = 1;
  int iters = 5;
  std::string dtype = "float32";
  for (const auto& [flag, value] : omni::bench::flag_values(argc, argv, "sp_attention_bench")) {
    if (flag == "--tokens")
      tokens = std::stoll(value);
    else if (flag == "--heads")
      heads = std::stoll(value);
    else if (flag == "--head-dim")
      head_dim = std::stoll(value);
    else if (flag == "--batch")
      batch = std::stoll(value);
    else if (flag == "--iters")
      iters = std::stoi(value);
    else if (flag == "--dtype")
      dtype = value;
    else
      OMNI_FAIL_USAGE("sp_attention_bench: unknown flag ", flag,
                      " (--tokens, --heads, --head-dim, --batch, --iters, --dtype)");
  }
  const auto type = omni::parse_dtype(dtype, "--dtype", {at::kFloat, at::kBFloat16});
  auto world = omni::dist::Communicator::world();
  const int n = world.size();
  OMNI_CHECK_USAGE(heads % n == 0, "--heads ", heads, " must be divisible by the rank count ", n, " (Ulysses)");
  auto pg = omni::dist::make_process_group(world, at::kCPU, "bench");
  const auto chunks = omni::pipeline::token_chunks(tokens, n);

  at::manual_seed(1234 + world.rank());
  auto token_major = [&] {
    return at::randn({batch, chunks[world.rank()], heads, head_dim}).to(type).transpose(1, 2);  // [B, H, S/n, d]
  };
  auto q = token_major(), k = token_major(), v = token_major();
  omni::pipeline::RingAttention ring(pg.get(), chunks);
  omni::pipeline::UlyssesAttention ulysses(pg.get(), chunks);

  auto time = [&](omni::models::AttentionBackend& backend, at::Tensor* out) {
    std::vector<double> secs;
    for (int i = 0; i < iters + 1; ++i) {  // the first call warms up
      pg->barrier()->wait();
      omni::Timer t;
      *out = backend.attend(q, k, v, omni::models::AttentionKind::kSelf);
      double s = t.seconds();
      MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, world.comm());
      if (i > 0) secs.push_back(s);
    }
    std::sort(secs.begin(), secs.end());
    return secs[secs.size() / 2];
  };
  at::Tensor out_ring, out_ulysses;
  const double t_ulysses = time(ulysses, &out_ulysses);
  const double t_ring = time(ring, &out_ring);
  double diff = (out_ring.to(at::kFloat) - out_ulysses.to(at::kFloat)).abs().max().item<double>();
  MPI_Allreduce(MPI_IN_PLACE, &diff, 1, MPI_DOUBLE, MPI_MAX, world.comm());
  if (world.rank() == 0) {
    std::printf(
        "| ranks | batch | tokens | heads x dim | dtype    | ulysses s | ring s  | ring/ulysses | max |ring-ulysses| "
        "|\n");
    std::printf(
        "|-------|-------|--------|-------------|----------|-----------|---------|--------------|---------------------"
        "|\n");
    std::printf("| %5d | %5lld | %6lld | %4lld x %-4lld | %-8s | %9.4f | %7.4f | %12.2f | %19.3g |\n", n,
                static_cast<long long>(batch), static_cast<long long>(tokens), static_cast<long long>(heads),
                static_cast<long long>(head_dim), dtype.c_str(), t_ulysses, t_ring, t_ring / t_ulysses, diff);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return omni::bench::bench_main(argc, argv, "sp_attention_bench", run);
}
