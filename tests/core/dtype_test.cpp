// core/dtype.h: round_to_dtype against LibTorch's own rounding (a one-element tensor of the dtype filled with
// the value, which is how diffusers' scales reach the model: torch.tensor(scale, dtype=...)).
#include "core/dtype.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace {

TEST(RoundToDtype, AgreesWithATensorOfTheDtype) {
  std::vector<double> values = {0.7, 1.0, 0.5, 1.0 / 3.0, 0.1, 2.5e-3, -0.7, 65519.0, 1e-8, 3.0e38, 0.999999};
  for (int i = 0; i < 2000; ++i) values.push_back((i - 1000) * 0.001234567);  // ties and near-ties among them
  for (auto t : {at::kFloat, at::kBFloat16, at::kHalf}) {
    for (double v : values) {
      const double want = at::scalar_tensor(v, at::TensorOptions().dtype(t)).item<double>();
      EXPECT_EQ(omni::round_to_dtype(v, t), want) << v << " in " << t;
    }
  }
  EXPECT_EQ(omni::round_to_dtype(0.7, at::kBFloat16), 0.69921875);  // the VACE scale diffusers ends up with
  EXPECT_EQ(omni::round_to_dtype(0.7, at::kDouble), 0.7);
}

}  // namespace
