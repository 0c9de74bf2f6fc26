#include "io/clip_image_processor.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "io/json_file.h"

namespace omni::io {

namespace {

// PIL.Image.Resampling's numbers, as preprocessor_config.json stores `resample`.
ResizeFilter pil_filter(int64_t code, const std::string& source) {
  switch (code) {
    case 1:
      return ResizeFilter::kLanczos;
    case 2:
      return ResizeFilter::kBilinear;
    case 3:
      return ResizeFilter::kBicubic;
    case 4:
      return ResizeFilter::kBox;
    case 5:
      return ResizeFilter::kHamming;
    default:
      break;
  }
  OMNI_FAIL_INPUT(source, ": 'resample' is ", code,
                  "; supported: 1 (LANCZOS), 2 (BILINEAR), 3 (BICUBIC), 4 (BOX), 5 (HAMMING)");
}

std::array<double, 3> three_numbers(ConfigFile& file, const char* key, const std::array<double, 3>& fallback) {
  const nlohmann::json* v = file.find(key);
  if (v == nullptr) return fallback;
  OMNI_CHECK_INPUT(v->is_array() && v->size() == 3 && (*v)[0].is_number() && (*v)[1].is_number() && (*v)[2].is_number(),
                   file.source(), ": '", key, "' must be a list of 3 numbers, found ", v->dump());
  return {(*v)[0].get<double>(), (*v)[1].get<double>(), (*v)[2].get<double>()};
}

}  // namespace

ClipImageProcessorConfig ClipImageProcessorConfig::from_json(const std::string& path) {
  return from_json(read_json(path), path);
}

ClipImageProcessorConfig ClipImageProcessorConfig::from_json(const nlohmann::json& j, const std::string& source) {
  ConfigFile file(j, source, "CLIPImageProcessor");
  ClipImageProcessorConfig c;
  c.do_convert_rgb = file.bool_or("do_convert_rgb", c.do_convert_rgb);
  c.do_resize = file.bool_or("do_resize", c.do_resize);
  if (const nlohmann::json* size = file.find("size")) {
    // transformers also accepts a bare integer (shortest edge); {"height", "width"} would be a square resize,
    // which no CLIP processor of a Wan repository uses.
    if (size->is_number_integer()) {
      c.shortest_edge = size->get<int64_t>();
    } else {
      OMNI_CHECK_INPUT(size->is_object() && size->contains("shortest_edge") && size->size() == 1 &&
                           (*size)["shortest_edge"].is_number_integer(),
                       source, ": 'size' is ", size->dump(), "; only {\"shortest_edge\": N} is supported");
      c.shortest_edge = (*size)["shortest_edge"].get<int64_t>();
    }
    OMNI_CHECK_INPUT(c.shortest_edge > 0, source, ": 'size.shortest_edge' must be positive");
  }
  c.resample = pil_filter(file.int_or("resample", 3), source);
  c.do_center_crop = file.bool_or("do_center_crop", c.do_center_crop);
  if (const nlohmann::json* crop = file.find("crop_size")) {
    if (crop->is_number_integer()) {
      c.crop_height = c.crop_width = crop->get<int64_t>();
    } else {
      OMNI_CHECK_INPUT(crop->is_object() && crop->contains("height") && crop->contains("width") &&
                           (*crop)["height"].is_number_integer() && (*crop)["width"].is_number_integer(),
                       source, ": 'crop_size' is ", crop->dump(), "; expected {\"height\": H, \"width\": W}");
      c.crop_height = (*crop)["height"].get<int64_t>();
      c.crop_width = (*crop)["width"].get<int64_t>();
    }
    OMNI_CHECK_INPUT(c.crop_height > 0 && c.crop_width > 0, source, ": 'crop_size' must be positive");
  }
  c.do_rescale = file.bool_or("do_rescale", c.do_rescale);
  c.rescale_factor = file.number_or("rescale_factor", c.rescale_factor);
  c.do_normalize = file.bool_or("do_normalize", c.do_normalize);
  c.image_mean = three_numbers(file, "image_mean", c.image_mean);
  c.image_std = three_numbers(file, "image_std", c.image_std);
  for (double s : c.image_std) OMNI_CHECK_INPUT(s != 0, source, ": 'image_std' has a zero");
  OMNI_CHECK_INPUT(!file.bool_or("do_pad", false), source, ": 'do_pad' true is not supported");
  file.known({"image_processor_type", "feature_extractor_type", "processor_class", "input_data_format", "data_format",
              "default_to_square", "return_tensors", "device", "disable_grouping"});
  file.warn_unknown();
  return c;
}

at::Tensor clip_preprocess(const at::Tensor& image, const ClipImageProcessorConfig& config) {
  OMNI_CHECK(image.dim() == 3 && image.size(2) == 3 && image.scalar_type() == at::kByte,
             "CLIP preprocessing needs an RGB image [H, W, 3] uint8, got ", image.sizes(), " ",
             at::toString(image.scalar_type()));
  at::Tensor pixels = image;  // [H, W, 3] uint8
  if (config.do_resize) {
    // get_resize_output_image_size(default_to_square=False): the shorter side becomes shortest_edge, the
    // longer int(shortest_edge * long / short) (Python's true division, truncated).
    const int64_t h = pixels.size(0), w = pixels.size(1);
    const int64_t short_side = std::min(h, w), long_side = std::max(h, w);
    const auto new_long =
        static_cast<int64_t>(static_cast<double>(config.shortest_edge * long_side) / static_cast<double>(short_side));
    const int64_t out_h = w <= h ? new_long : config.shortest_edge;
    const int64_t out_w = w <= h ? config.shortest_edge : new_long;
    pixels = resize_image(pixels, out_h, out_w, config.resample);
  }
  if (config.do_center_crop) {
    const int64_t h = pixels.size(0), w = pixels.size(1);
    OMNI_CHECK_INPUT(h >= config.crop_height && w >= config.crop_width, "the image is ", w, "x", h,
                     " after resizing, smaller than the CLIP processor's crop ", config.crop_width, "x",
                     config.crop_height);
    const int64_t top = (h - config.crop_height) / 2, left = (w - config.crop_width) / 2;
    pixels = pixels.narrow(0, top, config.crop_height).narrow(1, left, config.crop_width);  // [ch, cw, 3]
  }
  // rescale: image.astype(float64) * factor, then float32.
  at::Tensor x = config.do_rescale ? (pixels.to(at::kDouble) * config.rescale_factor).to(at::kFloat)
                                   : pixels.to(at::kFloat);  // [h, w, 3]
  if (config.do_normalize) {
    // normalize: mean and std as float32 arrays, (x - mean) / std in float32.
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    const auto mean =
        at::tensor(std::vector<double>(config.image_mean.begin(), config.image_mean.end()), opts).to(at::kFloat);
    const auto std_dev =
        at::tensor(std::vector<double>(config.image_std.begin(), config.image_std.end()), opts).to(at::kFloat);
    x = (x - mean) / std_dev;
  }
  return x.permute({2, 0, 1}).unsqueeze(0).contiguous();  // [1, 3, h, w]
}

}  // namespace omni::io
