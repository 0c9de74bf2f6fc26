#include "pipeline/time_plan.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "core/error.h"
#include "models/wan_rotary_pos_embed.h"
#include "models/wan_transformer_block.h"

namespace omni::pipeline {
namespace {

// The H200 figures we hold (diffusers, bfloat16, on one H200): GEMM 772 and SDPA 570 TFLOP/s of its datasheet's
// 989.4; Wan2.1's VAE decoding 480p x 81 frames (832 x 480 x 81 pixel-frames) in 1.93 s.
constexpr double kH200Datasheet = 989.4;
constexpr double kH200Matmul = 772;
constexpr double kH200Attention = 570;
constexpr double kH200DecodeSeconds = 1.93;
constexpr double kH200DecodeUnits = 832.0 * 480.0 * 81.0;

// A barrier whose waiting ranks sleep between polls.
void sleeping_barrier(const dist::Communicator& world) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(world.comm(), &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

// Seconds per call of `fn`, the median: one warm-up call, then calls until `budget` seconds have passed (at
// least five). The median, not the mean: a burst of another process moves it little, while the ranks' steady
// sharing of the cores (what a run sees) stays in it.
double time_per_call(const std::function<void()>& fn, double budget) {
  using Clock = std::chrono::steady_clock;
  fn();
  const auto start = Clock::now();
  std::vector<double> calls;
  for (auto t0 = start;;) {
    fn();
    const auto t1 = Clock::now();
    calls.push_back(std::chrono::duration<double>(t1 - t0).count());
    t0 = t1;
    if (calls.size() >= 5 && std::chrono::duration<double>(t1 - start).count() >= budget) break;
  }
  return median(calls);
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 10 ? "%.2f s" : "%.1f s", s);
  return buf;
}

}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

DeviceRates rates_of(const dist::GpuProfile& gpu) {
  DeviceRates r;
  const bool measured = gpu.measured_matmul_tflops > 0;
  r.matmul_tflops = measured ? gpu.measured_matmul_tflops : gpu.bf16_tflops * kH200Matmul / kH200Datasheet;
  r.attention_tflops = gpu.measured_attention_tflops > 0 ? gpu.measured_attention_tflops
                                                         : r.matmul_tflops * kH200Attention / kH200Matmul;
  r.hbm_gbps = gpu.hbm_gbps;
  r.link_gbps = gpu.link_gbps;
  r.inter_node_gbps = gpu.inter_node_gbps;
  // The VAE's convolutions are compute-bound: the H200's decode scaled by the matrix rate.
  r.decode_seconds_per_unit = kH200DecodeSeconds / kH200DecodeUnits * kH200Matmul / r.matmul_tflops;
  r.source = str_cat(gpu.name, ": matrix products ", r.matmul_tflops, " TFLOP/s",
                     measured ? " (measured)" : " (datasheet x 772/989, as the H200 measures)", ", attention ",
                     r.attention_tflops, " TFLOP/s, memory ", r.hbm_gbps, " GB/s, links ", r.link_gbps,
                     " GB/s in a node, ", r.inter_node_gbps, " GB/s across");
  return r;
}

DeviceRates calibrate(DeviceRates rates, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  OMNI_CHECK_INPUT(in.good(), path,
                   ": --calibration: cannot open the file (tools/gpu/check.sh writes it as "
                   "forward_bench.json)");
  nlohmann::json rows;
  try {
    rows = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    OMNI_FAIL_INPUT(path,
                    ": --calibration expects the JSON tools/gpu/check.sh writes (forward_bench.json): ", e.what());
  }
  OMNI_CHECK_INPUT(rows.is_array(), path, ": --calibration expects forward_bench.json's list of rows, found ",
                   rows.type_name());
  const nlohmann::json* forward = nullptr;
  const nlohmann::json* decode = nullptr;
  for (const auto& r : rows) {
    if (!r.is_object()) continue;
    const std::string w = r.value("workload", "");
    if (!forward && w == "a14b" && r.value("weights", "") == r.value("dtype", "?")) forward = &r;
    if (!decode && w == "vae21") decode = &r;
  }
  OMNI_CHECK_INPUT(forward != nullptr, path,
                   ": --calibration: no \"a14b\" row in its run dtype (forward_bench --only a14b measures one)");
  const double rate = forward->value("tflops_per_s", 0.0);
  OMNI_CHECK_INPUT(rate > 0, path, ": --calibration: the a14b row's tflops_per_s is ", rate, ", expected > 0");
  rates.matmul_tflops = rates.attention_tflops = rate;
  rates.calibrated = true;
  std::string decode_note = "decode as before";
  if (decode) {
    // The row's shape is "WxHxF": pixel-frames of Wan2.1's VAE, the decode's unit.
    int w = 0, h = 0, f = 0;
    const std::string shape = decode->value("shape", "");
    const double secs = decode->value("seconds", 0.0);
    OMNI_CHECK_INPUT(std::sscanf(shape.c_str(), "%dx%dx%d", &w, &h, &f) == 3 && w > 0 && h > 0 && f > 0 && secs > 0,
                     path, ": --calibration: the vae21 row's shape '", shape, "' and seconds ", secs,
                     " are not a measured decode (WxHxF, seconds > 0)");
    rates.decode_seconds_per_unit = secs / (static_cast<double>(w) * h * f);
    decode_note = str_cat("decode ", secs, " s at ", shape);
  }
  rates.source = str_cat(rates.source, "; calibrated by ", path, ": a14b forward ", rate, " TFLOP/s achieved at ",
                         forward->value("shape", "?"), " on ", forward->value("device", "?"), ", ", decode_note);
  return rates;
}

DeviceRates measure_cpu_rates(const CpuProbe& probe, const dist::Communicator& world) {
  const auto opt = at::TensorOptions().dtype(probe.dtype);
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  // The throughput figures at the model's widths within 256..1536 x 1024..4096 and on 128..4096 tokens (the
  // rank's, as many as keep one call near a GFLOP): what the work costs beyond its operators' dispatch, which
  // the block figure below holds. Above these sizes a CPU's rates change little; below them dispatch dominates.
  const int64_t d = std::clamp<int64_t>(probe.dim, 256, 1536), ffn = std::clamp<int64_t>(probe.ffn, 1024, 4096);
  const int64_t hd = std::clamp<int64_t>(probe.dim / std::max<int64_t>(probe.heads, 1), 32, 128), heads = d / hd;
  const int64_t m =
      std::clamp<int64_t>(std::min<int64_t>(probe.tokens, static_cast<int64_t>(1e9 / (2.0 * d * ffn))), 128, 4096);
  const int64_t ma =
      std::clamp<int64_t>(std::min<int64_t>(probe.tokens, static_cast<int64_t>(std::sqrt(5e8 / (4.0 * d)))), 128, 4096);
  constexpr double kBudget = 0.03;  // seconds per figure and round
  struct Figures {
    double matmul = 0, attention = 0, other = 0, block = 0, conv = 0;
  };
  Figures mine;
  // The ranks of a node share its cores. As many as the cores hold (each with its threads) measure at once, so
  // that what they share besides the cores (memory bandwidth, caches) is in the figures; the others wait. Each
  // rank's share of a core, where the node has more ranks than that, scales the figures after.
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_Comm_split_type(world.comm(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node_comm);
  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node_comm, &node_rank);
  MPI_Comm_size(node_comm, &node_size);
  // The node's cores: those any of its ranks may run on (a launcher may bind each rank to its own).
  cpu_set_t mask, node_mask;
  CPU_ZERO(&mask);
  CPU_ZERO(&node_mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) CPU_SET(0, &mask);
  MPI_Allreduce(&mask, &node_mask, static_cast<int>(sizeof(mask)), MPI_BYTE, MPI_BOR, node_comm);
  MPI_Comm_free(&node_comm);
  const int cores = std::max(CPU_COUNT(&node_mask), 1);
  const int slots = std::max(1, cores / std::max(at::get_num_threads(), 1));
  const bool active = node_rank < slots;
  const double share = std::min(1.0, static_cast<double>(slots) / node_size);
  world.barrier();
  // Two rounds: a round that another process slowed (the node's other work, this process's own start-up
  // threads) does not stand for the machine.
  const auto start = std::chrono::steady_clock::now();
  std::vector<Figures> rounds;
  for (int round = 0; active && round < 2; ++round) {
    Figures f;
    {
      // A feed-forward product ([tokens, dim] x [dim, ffn]), as the blocks' largest.
      const at::Tensor x = at::full({m, d}, 0.5, opt), w = at::full({ffn, d}, 0.01, opt);
      f.matmul = 2.0 * m * d * ffn / time_per_call([&] { at::linear(x, w); }, kBudget);
    }
    {
      // Self-attention over the rank's tokens, all heads (the kernel the CPU runs).
      const at::Tensor q = at::full({1, heads, ma, hd}, 0.1, opt), k = at::full({1, heads, ma, hd}, 0.2, opt),
                       v = at::full({1, heads, ma, hd}, 0.3, opt);
      f.attention = 4.0 * ma * ma * d / time_per_call([&] { at::scaled_dot_product_attention(q, k, v); }, kBudget);
    }
    {
      // The element-wise operators of one block on the rank's tokens in float32, as StepWork::other_bytes counts
      // them (20 dim-wide reads and writes per token, the GELU's 2 ffn-wide): three norms with their modulation,
      // the gated residual adds, the GELU.
      const at::Tensor h = at::rand({m, d}, f32), shift = at::full({d}, 0.1, f32), scale = at::full({d}, 0.2, f32);
      at::Tensor hidden = at::rand({m, ffn}, f32);
      const double bytes = static_cast<double>(m) * (20.0 * d + 2.0 * ffn) * 4;
      f.other = bytes / time_per_call(
                            [&] {
                              for (int i = 0; i < 3; ++i) {
                                at::Tensor y = at::layer_norm(h, {d}).mul_(scale).add_(shift);
                                at::Tensor r = h + y * scale;
                              }
                              at::gelu_(hidden, "tanh");
                            },
                            kBudget);
    }
    {
      // A transformer block's dispatch: the model's own block (its operators in their order) on 16 tokens at a
      // width of heads x 16, where the arithmetic is negligible.
      const int64_t bh = std::clamp<int64_t>(probe.heads, 1, 16), bd = bh * 16;
      models::WanTransformerBlock block(bd, 4 * bd, bh, /*cross_attn_norm=*/true, 1e-6);
      for (const models::ParamRef& p : block.parameters())
        *p.tensor = at::full(p.shape, 0.01, p.dtype_rule == models::ParamDtype::kFloat32 ? f32 : opt);
      const models::WanRotaryPosEmbed rope_table(16, 64);
      const models::RotaryEmbedding rope = rope_table.forward(1, 4, 4, at::kCPU);  // 16 tokens
      const at::Tensor x = at::full({2, 16, bd}, 0.1, opt), context = at::full({2, 512, bd}, 0.1, opt),
                       tproj = at::full({2, 6, bd}, 0.01, f32);
      f.block = time_per_call([&] { block.forward(x, context, tproj, models::TokenRuns{}, rope); }, kBudget / 2);
    }
    {
      // The VAE decoder's convolutions: a 3x3x3 convolution at its top width on a few frames.
      const int64_t c = std::clamp<int64_t>(probe.vae_dim, 8, 128);
      const at::Tensor x = at::full({1, c, 3, 18, 18}, 0.5, f32), w = at::full({c, c, 3, 3, 3}, 0.01, f32);
      const double flops = 2.0 * c * c * 27 * 16 * 16;  // valid output [1, c, 1, 16, 16]
      f.conv = flops / time_per_call([&] { at::conv3d(x, w); }, kBudget / 2);
    }
    rounds.push_back(f);
  }
  if (active) {
    // Two rounds within 25% of each other: their mean; else the better one.
    auto pick = [](double a, double b) {
      return std::max(a, b) > 1.25 * std::min(a, b) ? std::max(a, b) : (a + b) / 2;
    };
    mine.matmul = pick(rounds[0].matmul, rounds[1].matmul);
    mine.attention = pick(rounds[0].attention, rounds[1].attention);
    mine.other = pick(rounds[0].other, rounds[1].other);
    mine.block = 1 / pick(1 / rounds[0].block, 1 / rounds[1].block);  // a time: the rate of blocks
    mine.conv = pick(rounds[0].conv, rounds[1].conv);
  }
  // The waiting ranks sleep (an MPI barrier spins, and would take the cores from those measuring).
  sleeping_barrier(world);
  double link = 0, latency = 0;
  if (world.size() > 1) {
    // An all-to-all of 1 MiB to each peer, as Ulysses exchanges: bytes this rank sends over the time.
    const size_t chunk = size_t{1} << 20;
    std::vector<char> send(chunk * static_cast<size_t>(world.size())), recv(send.size());
    // A fixed number of calls (each is collective: every rank makes as many), the median of each kind.
    auto per_call = [&](int bytes, int calls) {
      std::vector<double> times;
      for (int i = 0; i <= calls; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        MPI_Alltoall(send.data(), bytes, MPI_BYTE, recv.data(), bytes, MPI_BYTE, world.comm());
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0) times.push_back(t);  // the first warms the buffers up
      }
      return median(times);
    };
    world.barrier();
    link = static_cast<double>(chunk) * (world.size() - 1) / per_call(static_cast<int>(chunk), 8);
    latency = per_call(64, 32);  // 64 bytes to each peer
  }
  // The measuring ranks' mean, at each rank's share of the cores.
  const std::vector<Figures> all = world.all_gather(mine);
  Figures mean;
  double measured = 0;
  for (const Figures& f : all)
    if (f.matmul > 0) {
      mean.matmul += f.matmul;
      mean.attention += f.attention;
      mean.other += f.other;
      mean.block += f.block;
      mean.conv += f.conv;
      ++measured;
    }
  mean.matmul *= share / measured;
  mean.attention *= share / measured;
  mean.other *= share / measured;
  mean.block /= share * measured;  // seconds: longer on a share of a core
  mean.conv *= share / measured;
  const std::vector<double> links = world.all_gather(link);
  link = *std::min_element(links.begin(), links.end());
  const std::vector<double> latencies = world.all_gather(latency);
  latency = *std::max_element(latencies.begin(), latencies.end());
  DeviceRates r;
  r.matmul_tflops = mean.matmul / 1e12;
  r.attention_tflops = mean.attention / 1e12;
  r.hbm_gbps = mean.other / 1e9;
  r.block_seconds = mean.block;
  r.collective_seconds = latency;
  r.overlaps_gathers = false;
  r.link_gbps = r.inter_node_gbps = link > 0 ? link / 1e9 : 1e9;  // one rank: no exchange
  // The H200's decode at its GEMM rate, as FLOPs of Wan2.1's VAE per pixel-frame, at this CPU's convolution rate.
  r.decode_seconds_per_unit = kH200DecodeSeconds / kH200DecodeUnits * kH200Matmul * 1e12 / mean.conv;
  char buf[384];
  std::snprintf(
      buf, sizeof(buf),
      "this CPU, %d of %d rank(s) on %d core(s) measuring at once, each rank with %.2g of the cores' time: "
      "%.2f s: matrix products %.1f GFLOP/s, attention %.1f GFLOP/s, "
      "element-wise %.2f GB/s, %.0f us per block's dispatch, convolutions %.1f GFLOP/s, links %.2f GB/s after %.0f us",
      static_cast<int>(measured), world.size(), cores, share,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), mean.matmul / 1e9,
      mean.attention / 1e9, mean.other / 1e9, mean.block * 1e6, mean.conv / 1e9, link / 1e9, latency * 1e6);
  r.source = buf;
  return r;
}

TimePlan plan_time(const StepWork& work, const VideoParams& video, const StepBytes& bytes, int decode_group,
                   const DeviceRates& rates) {
  TimePlan t;
  t.steps = video.steps_run() * static_cast<int>(work.segments);  // Animate: every segment's
  t.flops = work.matmul_flops + work.attention_flops;
  const double attention = work.attention_flops / (rates.attention_tflops * 1e12);
  t.compute_seconds = work.matmul_flops / (rates.matmul_tflops * 1e12) + attention +
                      (rates.calibrated ? 0 : work.other_bytes / (rates.hbm_gbps * 1e9)) +
                      work.blocks * rates.block_seconds;
  // The ring passes each block's K and V on while the attention computes on the last (RingAttention): that
  // much of its time is hidden.
  const double hidden = std::min(bytes.ring / (rates.link_gbps * 1e9), attention);
  const double intra = bytes.intra_node / (rates.link_gbps * 1e9) - hidden;
  const double latency = work.collectives * rates.collective_seconds;
  t.exchange_seconds = latency + intra + bytes.inter_node / (rates.inter_node_gbps * 1e9);
  const double exchange_slow = latency + intra + bytes.inter_node / (rates.inter_node_gbps * 0.5e9);
  // HSDP gathers the next block while this one computes: on a GPU a step takes the longer of the two.
  t.gather_seconds = bytes.gather / (rates.link_gbps * 1e9);
  t.gathers_overlapped = rates.overlaps_gathers;
  if (rates.overlaps_gathers) {
    t.step_seconds = std::max(t.compute_seconds + t.exchange_seconds, t.gather_seconds);
    t.step_seconds_slow = std::max(t.compute_seconds + exchange_slow, t.gather_seconds);
  } else {
    t.step_seconds = t.compute_seconds + t.exchange_seconds + t.gather_seconds;
    t.step_seconds_slow = t.compute_seconds + exchange_slow + t.gather_seconds;
  }
  t.text_encode_seconds = work.text_encode_flops / (rates.matmul_tflops * 1e12);
  t.decode_seconds = work.segments * work.decode_units * rates.decode_seconds_per_unit / std::max(decode_group, 1);
  t.video_seconds = t.text_encode_seconds + t.steps * t.step_seconds + t.decode_seconds;
  t.video_seconds_slow = t.text_encode_seconds + t.steps * t.step_seconds_slow + t.decode_seconds;
  return t;
}

nlohmann::json TimePlan::to_json() const {
  return {{"steps", steps},
          {"step_flops", flops},
          {"step_seconds", step_seconds},
          {"step_compute_seconds", compute_seconds},
          {"step_exchange_seconds", exchange_seconds},
          {"step_gather_seconds", gather_seconds},
          {"text_encode_seconds", text_encode_seconds},
          {"decode_seconds", decode_seconds},
          {"video_seconds", video_seconds},
          {"video_seconds_slow_fabric", video_seconds_slow}};
}

std::string TimePlan::describe() const {
  std::string range = video_seconds_slow > video_seconds * 1.005
                          ? str_cat(" (up to ", seconds(video_seconds_slow), " on a fabric at half its rate)")
                          : "";
  return str_cat(seconds(video_seconds), " per video", range, ": text encode ", seconds(text_encode_seconds),
                 ", denoise ", steps, " x ", seconds(step_seconds), " (compute ", seconds(compute_seconds),
                 ", exchanges ", seconds(exchange_seconds), ", HSDP gathers ", seconds(gather_seconds),
                 gathers_overlapped ? " overlapped" : "", "), decode ", seconds(decode_seconds));
}

}  // namespace omni::pipeline
