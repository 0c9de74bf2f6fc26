// LPIPS (lpips.h), step for step as lpips 0.1.4's LPIPS.forward (lpips/lpips.py) and its alexnet trunk
// (lpips/pretrained_networks.py) compute it, with the same ATen operations in the same order, so that the float32
// results differ from the package's only where a kernel sums in another order.
#include "lpips.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "io/safetensors.h"

namespace omni::compare {
namespace {

// The AlexNet convolutions of the five slices (torchvision's alexnet().features indices 0, 3, 6, 8, 10) and
// the channels each slice puts out, which the linear layers take in.
struct ConvSpec {
  int slice, index;  // net.slice<slice>.<index>.weight
  int64_t out, in, kernel, stride, padding;
  bool pool_before;  // features[index - 1] is MaxPool2d(3, stride 2): slices 2 and 3 begin with it
};
constexpr ConvSpec kConvs[Lpips::kLayers] = {
    {1, 0, 64, 3, 11, 4, 2, false},   {2, 3, 192, 64, 5, 1, 2, true},    {3, 6, 384, 192, 3, 1, 1, true},
    {4, 8, 256, 384, 3, 1, 1, false}, {5, 10, 256, 256, 3, 1, 1, false},
};

std::string conv_name(const ConvSpec& c, const char* what) {
  return str_cat("net.slice", c.slice, ".", c.index, ".", what);
}
std::string lin_name(int k) {
  return str_cat("lin", k, ".model.1.weight");
}

// The package's lpips.normalize_tensor: each position's feature vector over its channel norm, plus 1e-10 so
// that an all-zero vector (every ReLU off) stays zero.
at::Tensor normalize(const at::Tensor& f) {
  return f / (at::sqrt(at::sum(at::pow(f, 2), {1}, true)) + 1e-10);
}

// [N, H, W, 3] (or [H, W, 3]) frames of any dtype -> [N, 3, H, W] float32, contiguous as the package's input.
at::Tensor to_nchw(const at::Tensor& frames) {
  return frames.to(at::kFloat).permute({0, 3, 1, 2}).contiguous();
}

}  // namespace

Lpips::Lpips(const std::string& path) {
  io::SafetensorsFile file(path);
  // Every tensor the file must hold, with its shape.
  std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {{"scaling_layer.shift", {1, 3, 1, 1}},
                                                                        {"scaling_layer.scale", {1, 3, 1, 1}}};
  for (const ConvSpec& c : kConvs) {
    expected.push_back({conv_name(c, "weight"), {c.out, c.in, c.kernel, c.kernel}});
    expected.push_back({conv_name(c, "bias"), {c.out}});
  }
  for (int k = 0; k < kLayers; ++k) expected.push_back({lin_name(k), {1, kConvs[k].out, 1, 1}});

  std::string missing, unexpected, wrong;
  for (const auto& [name, shape] : expected) {
    if (!file.contains(name)) {
      missing += str_cat(missing.empty() ? "" : ", ", "'", name, "' ", at::IntArrayRef(shape));
    } else if (file.info(name).shape != shape) {
      wrong += str_cat(wrong.empty() ? "" : ", ", "'", name, "' is ", at::IntArrayRef(file.info(name).shape),
                       ", expected ", at::IntArrayRef(shape));
    }
  }
  for (const std::string& name : file.names()) {
    const bool known = std::any_of(expected.begin(), expected.end(), [&](const auto& e) { return e.first == name; });
    if (!known) unexpected += str_cat(unexpected.empty() ? "" : ", ", "'", name, "'");
  }
  std::string problems;
  for (const auto& [what, list] : {std::pair<const char*, const std::string&>{"missing tensors ", missing},
                                   {"unexpected tensors ", unexpected},
                                   {"wrong shapes: ", wrong}})
    if (!list.empty()) problems += str_cat(problems.empty() ? " " : "; ", what, list);
  OMNI_CHECK_INPUT(problems.empty(), path,
                   ": not the LPIPS AlexNet v0.1 weights tools/lpips/convert_weights.py writes:", problems);

  shift_ = file.read("scaling_layer.shift", at::kFloat).contiguous();
  scale_ = file.read("scaling_layer.scale", at::kFloat).contiguous();
  for (int k = 0; k < kLayers; ++k) {
    conv_w_[k] = file.read(conv_name(kConvs[k], "weight"), at::kFloat).contiguous();
    conv_b_[k] = file.read(conv_name(kConvs[k], "bias"), at::kFloat).contiguous();
    lin_w_[k] = file.read(lin_name(k), at::kFloat).contiguous();
  }
}

at::Tensor Lpips::scale_input(const at::Tensor& x) const {
  // LPIPS.forward(normalize=True): 2 * x - 1 from [0, 1] to [-1, 1]; then version 0.1's ScalingLayer,
  // (x - shift) / scale, which brings [-1, 1] to roughly ImageNet's normalised range. A division as the package
  // does it, not a multiplication by the reciprocal, to round alike.
  return (x * 2 - 1 - shift_) / scale_;
}

std::array<at::Tensor, Lpips::kLayers> Lpips::features(const at::Tensor& x) const {
  // The slices of lpips' alexnet: conv (+ pool before it in slices 2 and 3), ReLU; the output of each slice's
  // ReLU is a feature map and the next slice's input. The package's ReLUs are in place, but every slice begins
  // with an operation that does not write its input, so the returned maps are never overwritten there either.
  std::array<at::Tensor, kLayers> out;
  at::Tensor h = x;  // [n, 3, H, W]
  for (int k = 0; k < kLayers; ++k) {
    const ConvSpec& c = kConvs[k];
    if (c.pool_before) h = at::max_pool2d(h, {3, 3}, {2, 2});
    // ReLU in place on the convolution's fresh output, as the package's ReLU(inplace=True): one map less.
    h = at::conv2d(h, conv_w_[k], conv_b_[k], {c.stride, c.stride}, {c.padding, c.padding}).relu_();
    out[k] = h;  // [n, c.out, h_k, w_k]
  }
  return out;
}

std::vector<double> Lpips::distances(const at::Tensor& a_in, const at::Tensor& b_in) const {
  OMNI_CHECK(a_in.sizes() == b_in.sizes(), "LPIPS: the two frame sets differ in shape: ", a_in.sizes(), " and ",
             b_in.sizes());
  OMNI_CHECK((a_in.dim() == 4 || a_in.dim() == 3) && a_in.size(-1) == 3,
             "LPIPS: frames must be [N, H, W, 3] or [H, W, 3], got ", a_in.sizes());
  const at::Tensor a = a_in.dim() == 3 ? a_in.unsqueeze(0) : a_in;  // [N, H, W, 3]
  const at::Tensor b = b_in.dim() == 3 ? b_in.unsqueeze(0) : b_in;
  OMNI_CHECK_INPUT(a.size(1) >= kLpipsMinSize && a.size(2) >= kLpipsMinSize, "LPIPS: frames of ", a.size(2), "x",
                   a.size(1), " are too small for its AlexNet trunk (at least ", kLpipsMinSize, "x", kLpipsMinSize,
                   ")");
  const int64_t n = a.size(0);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t begin = 0; begin < n; begin += kBatch) {
    const int64_t m = std::min(kBatch, n - begin);
    // The two sides through the trunk separately, as the package runs them: identical frames then give identical
    // features bit for bit (the same shapes take the same kernels), so a distance of exactly 0.
    std::array<at::Tensor, kLayers> fa = features(scale_input(to_nchw(a.narrow(0, begin, m))));
    std::array<at::Tensor, kLayers> fb = features(scale_input(to_nchw(b.narrow(0, begin, m))));
    at::Tensor val;  // [m, 1, 1, 1]: the package's `val = 0; val += res[l]`, in layer order, in float32
    for (int k = 0; k < kLayers; ++k) {
      const at::Tensor diff = at::pow(normalize(fa[k]) - normalize(fb[k]), 2);  // [m, C_k, h_k, w_k]
      fa[k].reset(), fb[k].reset();  // the maps of this layer are no longer needed
      // The linear layer (a 1x1 convolution to one channel), then the spatial mean: [m, 1, h_k, w_k] -> [m, 1, 1, 1].
      const at::Tensor res = at::conv2d(diff, lin_w_[k]).mean({2, 3}, /*keepdim=*/true);
      val = k == 0 ? res : val + res;
    }
    const at::Tensor v = val.reshape({m}).to(at::kDouble);  // [m, 1, 1, 1] -> [m]
    const double* p = v.data_ptr<double>();
    out.insert(out.end(), p, p + m);
  }
  return out;
}

double Lpips::distance(const at::Tensor& a, const at::Tensor& b) const {
  OMNI_CHECK(a.dim() == 3, "LPIPS: distance() takes one frame [H, W, 3], got ", a.sizes());
  return distances(a, b).at(0);
}

}  // namespace omni::compare
