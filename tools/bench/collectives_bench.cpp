// collectives_bench: all_gather_into_flat and all_to_all through omni's ProcessGroup, reported like
// nccl-tests (size, time, algorithm and bus bandwidth, wrong elements).
//
//   mpirun -np 4 collectives_bench [--device cpu|cuda] [--dtype f32|bf16] [--min-bytes 1024]
//                                  [--max-bytes 16777216] [--factor 4] [--iters 20] [--warmup 3]
//
// size is the whole buffer in bytes (all_gather: the gathered output; all_to_all: the send buffer), so each
// rank contributes size/ranks. algbw = size / time; busbw = algbw * (ranks - 1) / ranks, the fraction every
// rank must receive from others, comparable across rank counts (nccl-tests' PERFORMANCE.md). time is the
// slowest rank's mean per iteration. #wrong counts elements that differ from the expected pattern after the
// last iteration.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "dist/mpi_check.h"
#include "dist/process_group.h"
#ifdef OMNI_WITH_NCCL
#include "dist/cuda_check.h"
#endif

namespace {

using omni::dist::Communicator;
using omni::dist::ProcessGroup;
using omni::dist::WorkHandle;

struct Options {
  std::string device = "cpu";
  std::string dtype = "f32";
  int64_t min_bytes = 1024;
  int64_t max_bytes = 16 << 20;
  int factor = 4;
  int iters = 20;
  int warmup = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  for (const auto& [a, v] : omni::bench::flag_values(argc, argv, "collectives_bench")) {
    if (a == "--device")
      o.device = v;
    else if (a == "--dtype")
      o.dtype = v;
    else if (a == "--min-bytes")
      o.min_bytes = std::atoll(v);
    else if (a == "--max-bytes")
      o.max_bytes = std::atoll(v);
    else if (a == "--factor")
      o.factor = std::atoi(v);
    else if (a == "--iters")
      o.iters = std::atoi(v);
    else if (a == "--warmup")
      o.warmup = std::atoi(v);
    else
      OMNI_FAIL_USAGE("collectives_bench: unknown option ", a);
  }
  OMNI_CHECK_USAGE(o.device == "cpu" || o.device == "cuda", "--device: expected cpu or cuda, got ", o.device);
  OMNI_CHECK_USAGE(o.dtype == "f32" || o.dtype == "bf16", "--dtype: expected f32 or bf16, got ", o.dtype);
  OMNI_CHECK_USAGE(o.min_bytes > 0 && o.max_bytes >= o.min_bytes && o.factor >= 2 && o.iters > 0 && o.warmup >= 0,
                   "collectives_bench: need 0 < --min-bytes <= --max-bytes, --factor >= 2, --iters > 0");
  return o;
}

// Buffers live on the benchmark's device. CUDA memory comes from cudaMalloc and is wrapped without ATen's
// CUDA library, so the benchmark also runs with a CPU-only LibTorch; host-side patterns are copied across.
class Buffers {
 public:
  explicit Buffers(at::Device device) : device_(device) {}
  at::Tensor empty(int64_t n, at::ScalarType t) const {
    if (device_.is_cpu()) return at::empty({n}, at::TensorOptions().dtype(t));
#ifdef OMNI_WITH_NCCL
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, std::max<int64_t>(n, 1) * at::elementSize(t)));
    auto opts = at::TensorOptions().dtype(t).device(device_);
    return at::for_blob(p, {n})
        .options(opts)
        .target_device(device_)
        .deleter([](void* q) { cudaFree(q); })
        .make_tensor();
#else
    OMNI_FAIL_USAGE("--device cuda needs a build with NCCL");
#endif
  }
  void upload(const at::Tensor& dst, const at::Tensor& host) const {
    if (device_.is_cpu()) return (void)dst.copy_(host);
#ifdef OMNI_WITH_NCCL
    CUDA_CHECK(cudaMemcpy(dst.data_ptr(), host.data_ptr(), host.numel() * host.element_size(), cudaMemcpyHostToDevice));
#endif
  }
  at::Tensor download(const at::Tensor& src) const {
    if (device_.is_cpu()) return src;
    at::Tensor host = at::empty({src.numel()}, at::TensorOptions().dtype(src.scalar_type()));
#ifdef OMNI_WITH_NCCL
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(host.data_ptr(), src.data_ptr(), src.numel() * src.element_size(), cudaMemcpyDeviceToHost));
#endif
    return host;
  }

 private:
  at::Device device_;
};

// Small integers: exact in bfloat16, so the check is exact. Element k of the block src sends to dst.
at::Tensor pattern(at::ScalarType t, int src, int dst, int64_t n) {
  return (at::arange(n, at::kLong) * 7 + (src * 131 + dst * 71)).remainder(61).to(t);
}

int64_t count_wrong(const at::Tensor& got, const at::Tensor& want) {
  return got.ne(want).sum().item<int64_t>();
}

struct Result {
  double us = 0;
  int64_t wrong = 0;
};

// Mean time per iteration of `issue` (each returning a Work that is waited), slowest rank.
template <typename Issue>
double time_us(ProcessGroup& pg, const Options& o, Issue issue) {
  for (int i = 0; i < o.warmup; ++i) issue()->synchronize();
  pg.barrier()->wait();
  const auto t0 = std::chrono::steady_clock::now();
  WorkHandle last;
  for (int i = 0; i < o.iters; ++i) {
    last = issue();
    last->wait();
  }
  last->synchronize();
  const double local =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / o.iters;
  double slowest = local;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

Result bench_all_gather(ProcessGroup& pg, const Buffers& buf, const Options& o, int64_t count, at::ScalarType t) {
  const int n = pg.size();
  const int64_t per_rank = count / n;
  at::Tensor in = buf.empty(per_rank, t), out = buf.empty(per_rank * n, t);
  buf.upload(in, pattern(t, pg.rank(), 0, per_rank));
  Result r;
  r.us = time_us(pg, o, [&] { return pg.all_gather_into_flat(out, in); });
  std::vector<at::Tensor> want;
  for (int s = 0; s < n; ++s) want.push_back(pattern(t, s, 0, per_rank));
  r.wrong = count_wrong(buf.download(out), at::cat(want));
  return r;
}

Result bench_all_to_all(ProcessGroup& pg, const Buffers& buf, const Options& o, int64_t count, at::ScalarType t) {
  const int n = pg.size();
  const int64_t chunk = count / n;
  std::vector<at::Tensor> send, want;
  for (int j = 0; j < n; ++j) send.push_back(pattern(t, pg.rank(), j, chunk));
  for (int j = 0; j < n; ++j) want.push_back(pattern(t, j, pg.rank(), chunk));
  at::Tensor in = buf.empty(chunk * n, t), out = buf.empty(chunk * n, t);
  buf.upload(in, at::cat(send));
  Result r;
  r.us = time_us(pg, o, [&] { return pg.all_to_all(out, in); });
  r.wrong = count_wrong(buf.download(out), at::cat(want));
  return r;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Communicator world = Communicator::world();
  at::Device device(at::kCPU);
  if (o.device == "cuda") {
#ifdef OMNI_WITH_NCCL
    // One GPU per rank on a node: the node-local rank picks it.
    MPI_Comm node = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node));
    Communicator local(node, true);
    int gpus = 0;
    CUDA_CHECK(cudaGetDeviceCount(&gpus));
    OMNI_CHECK_USAGE(gpus > 0, "--device cuda: no CUDA device visible");
    device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local.rank() % gpus));
    CUDA_CHECK(cudaSetDevice(device.index()));
#endif
  }
  const Buffers buf(device);
  auto pg = omni::dist::make_process_group(world, device);
  const at::ScalarType t = o.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  const int n = pg->size();
  const int64_t es = at::elementSize(t);
  if (world.rank() == 0) {
    std::printf("# omni collectives_bench: backend %s, %d ranks, dtype %s, iters %d, warmup %d\n", pg->backend_name(),
                n, o.dtype.c_str(), o.iters, o.warmup);
    std::printf("#%31s%34s%34s\n", "", "all_gather_into_flat", "all_to_all");
    std::printf("# %10s %12s %5s %10s %7s %7s %6s %10s %7s %7s %6s\n", "size", "count", "type", "time", "algbw",
                "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s %12s %5s %10s %7s %7s %6s %10s %7s %7s %6s\n", "(B)", "(elements)", "", "(us)", "(GB/s)",
                "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  double busbw_sum = 0;
  int rows = 0;
  int64_t wrong_total = 0;
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    // Round down to whole elements per rank; sizes too small for one element per rank are skipped.
    const int64_t count = bytes / es / n * n;
    if (count == 0) continue;
    const double size = static_cast<double>(count * es);
    const Result ag = bench_all_gather(*pg, buf, o, count, t);
    const Result a2a = bench_all_to_all(*pg, buf, o, count, t);
    const double bus = static_cast<double>(n - 1) / n;
    const double ag_alg = size / ag.us / 1e3, a2a_alg = size / a2a.us / 1e3;  // bytes/us/1e3 = GB/s
    int64_t wrong[2] = {ag.wrong, a2a.wrong}, wrong_all[2] = {0, 0};
    MPI_Allreduce(wrong, wrong_all, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    wrong_total += wrong_all[0] + wrong_all[1];
    busbw_sum += (ag_alg + a2a_alg) * bus / 2;
    ++rows;
    if (world.rank() == 0)
      std::printf("  %10lld %12lld %5s %10.1f %7.2f %7.2f %6lld %10.1f %7.2f %7.2f %6lld\n",
                  static_cast<long long>(count * es), static_cast<long long>(count), o.dtype.c_str(), ag.us, ag_alg,
                  ag_alg * bus, static_cast<long long>(wrong_all[0]), a2a.us, a2a_alg, a2a_alg * bus,
                  static_cast<long long>(wrong_all[1]));
  }
  if (world.rank() == 0) {
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong_total),
                wrong_total ? "ERROR" : "OK");
    std::printf("# Avg bus bandwidth    : %g GB/s\n", rows ? busbw_sum / rows : 0.0);
  }
  pg.reset();  // before MPI_Finalize
  return wrong_total == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return omni::bench::bench_main(argc, argv, "collectives_bench", run);
}
