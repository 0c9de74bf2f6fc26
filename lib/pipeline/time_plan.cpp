#include "pipeline/time_plan.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace omni::pipeline {
namespace {

// The H200 figures we hold (diffusers, bfloat16, on one H200): GEMM 772 and SDPA 570 TFLOP/s of its datasheet's
// 989.4; Wan2.1's VAE decoding 480p x 81 frames (832 x 480 x 81 pixel-frames) in 1.93 s.
constexpr double kH200Datasheet = 989.4;
constexpr double kH200Matmul = 772;
constexpr double kH200Attention = 570;
constexpr double kH200DecodeSeconds = 1.93;
constexpr double kH200DecodeUnits = 832.0 * 480.0 * 81.0;

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 10 ? "%.2f s" : "%.1f s", s);
  return buf;
}

}  // namespace

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

TimePlan plan_time(const StepWork& work, const VideoParams& video, double intra_bytes, double inter_node_bytes,
                   double gather_bytes, int decode_group, const DeviceRates& rates) {
  TimePlan t;
  t.steps = video.steps_run();
  t.flops = work.matmul_flops + work.attention_flops;
  t.compute_seconds = work.matmul_flops / (rates.matmul_tflops * 1e12) +
                      work.attention_flops / (rates.attention_tflops * 1e12) +
                      (rates.calibrated ? 0 : work.other_bytes / (rates.hbm_gbps * 1e9));
  const double intra = intra_bytes / (rates.link_gbps * 1e9);
  t.exchange_seconds = intra + inter_node_bytes / (rates.inter_node_gbps * 1e9);
  const double exchange_slow = intra + inter_node_bytes / (rates.inter_node_gbps * 0.5e9);
  // HSDP gathers the next block while this one computes: a step takes the longer of the two.
  t.gather_seconds = gather_bytes / (rates.link_gbps * 1e9);
  t.step_seconds = std::max(t.compute_seconds + t.exchange_seconds, t.gather_seconds);
  t.step_seconds_slow = std::max(t.compute_seconds + exchange_slow, t.gather_seconds);
  t.text_encode_seconds = work.text_encode_flops / (rates.matmul_tflops * 1e12);
  t.decode_seconds = work.decode_units * rates.decode_seconds_per_unit / std::max(decode_group, 1);
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
                 " overlapped), decode ", seconds(decode_seconds));
}

}  // namespace omni::pipeline
