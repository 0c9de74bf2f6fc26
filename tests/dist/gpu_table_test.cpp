// --plan-for's parsing (dist/gpu_table.h): names from the table in any case, xN for the GPUs of a node, custom
// figures in the documented units, and a usage error naming the known GPUs for anything else.
#include "dist/gpu_table.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace {

using omni::dist::parse_plan_for;

TEST(GpuTable, NamesAndNodeSizes) {
  const auto h100 = parse_plan_for("h100-80gb");
  EXPECT_EQ(h100.gpu.product, "NVIDIA H100 80GB HBM3 (SXM)");
  EXPECT_EQ(h100.gpu.memory_bytes, int64_t{81559} << 20);  // nvidia-smi's total on the lent H100
  EXPECT_EQ(h100.per_node, 0);
  const auto h200 = parse_plan_for("H200x8");
  EXPECT_EQ(h200.gpu.name, "h200");
  EXPECT_EQ(h200.gpu.memory_bytes, int64_t{143771} << 20);
  EXPECT_EQ(h200.per_node, 8);
  EXPECT_EQ(h200.describe(), "h200 x 8 per node: NVIDIA H200 (SXM), 140.40 GiB");
  for (const auto& g : omni::dist::gpu_table()) {
    EXPECT_EQ(parse_plan_for(g.name).gpu.name, g.name);
    EXPECT_GT(g.memory_bytes, int64_t{40} << 30) << g.name;
    EXPECT_GT(g.bf16_tflops, 100) << g.name;
    EXPECT_GT(g.hbm_gbps, 500) << g.name;
    EXPECT_GT(g.link_gbps, 0) << g.name;
    EXPECT_GT(g.inter_node_gbps, 0) << g.name;
    EXPECT_FALSE(g.source.empty()) << g.name;
  }
}

// A run on a GPU finds its rates by the name CUDA gives the card (cudaDeviceProp::name, as nvidia-smi lists it).
TEST(GpuTable, ByCudaName) {
  using omni::dist::gpu_by_cuda_name;
  ASSERT_NE(gpu_by_cuda_name("NVIDIA H100 80GB HBM3"), nullptr);  // the lent H100's name
  EXPECT_EQ(gpu_by_cuda_name("NVIDIA H100 80GB HBM3")->name, "h100-80gb");
  ASSERT_NE(gpu_by_cuda_name("NVIDIA H200"), nullptr);  // the lent H200's name
  EXPECT_EQ(gpu_by_cuda_name("NVIDIA H200")->name, "h200");
  EXPECT_EQ(gpu_by_cuda_name("NVIDIA A100-SXM4-80GB")->name, "a100-80gb");
  EXPECT_EQ(gpu_by_cuda_name("NVIDIA L40S")->name, "l40s");
  EXPECT_EQ(gpu_by_cuda_name("NVIDIA H100 PCIe"), nullptr);  // another card: its rates are not the SXM's
  EXPECT_EQ(gpu_by_cuda_name("NVIDIA A100-SXM4-40GB"), nullptr);
  EXPECT_EQ(gpu_by_cuda_name(""), nullptr);
}

TEST(GpuTable, Custom) {
  const auto c = parse_plan_for("custom:80,989,3350,450x4");
  EXPECT_EQ(c.gpu.memory_bytes, int64_t{80000000000});  // GB of 10^9 bytes, as datasheets
  EXPECT_DOUBLE_EQ(c.gpu.bf16_tflops, 989);
  EXPECT_DOUBLE_EQ(c.gpu.hbm_gbps, 3350);
  EXPECT_DOUBLE_EQ(c.gpu.link_gbps, 450);
  EXPECT_EQ(c.per_node, 4);
}

TEST(GpuTable, Errors) {
  auto message = [](const std::string& spec) {
    try {
      parse_plan_for(spec);
    } catch (const omni::Error& e) {
      EXPECT_EQ(e.exit_code(), 2) << spec;
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("h100").find("unknown GPU 'h100'; known: h100-80gb, h200, b200, a100-80gb, l40s"),
            std::string::npos);
  EXPECT_NE(message("custom:80,989,3350").find("custom takes four numbers"), std::string::npos);
  EXPECT_NE(message("custom:80,989,-1,450").find("HBM_GBPS must be a positive number"), std::string::npos);
  EXPECT_NE(message("h200x0").find("GPUs per node"), std::string::npos);
  EXPECT_NE(message("").find("unknown GPU"), std::string::npos);
}

}  // namespace
