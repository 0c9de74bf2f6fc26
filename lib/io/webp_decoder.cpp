#include "io/webp_decoder.h"

#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <memory>

#include "core/error.h"

namespace omni::io {
namespace {

struct AnimDecoderDelete {
  void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

std::string chunk(const WebPDemuxer* demux, const char* fourcc) {
  WebPChunkIterator it;
  if (!WebPDemuxGetChunk(demux, fourcc, 1, &it)) return {};
  std::string bytes(reinterpret_cast<const char*>(it.chunk.bytes), it.chunk.size);
  WebPDemuxReleaseChunkIterator(&it);
  return bytes;
}

}  // namespace

bool is_webp(const uint8_t* data, size_t size) {
  if (size < 16 || std::memcmp(data, "RIFF", 4) != 0 || std::memcmp(data + 8, "WEBP", 4) != 0) return false;
  return std::memcmp(data + 12, "VP8 ", 4) == 0 || std::memcmp(data + 12, "VP8L", 4) == 0 ||
         std::memcmp(data + 12, "VP8X", 4) == 0;
}

std::pair<int, int> webp_size(const uint8_t* data, size_t size, const std::string& path, ImageMetadata* metadata) {
  WebPData d{data, size};
  std::unique_ptr<WebPDemuxer, void (*)(WebPDemuxer*)> demux(WebPDemux(&d), WebPDemuxDelete);
  OMNI_CHECK_INPUT(demux != nullptr, "image '", path, "' cannot be decoded as WebP (libwebp's demuxer refuses it)");
  // The canvas: what the animation decoder's first frame has (decode_webp).
  const int w = static_cast<int>(WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_WIDTH));
  const int h = static_cast<int>(WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_HEIGHT));
  if (metadata != nullptr) {
    metadata->exif = chunk(demux.get(), "EXIF");
    metadata->xmp = chunk(demux.get(), "XMP ");
  }
  return {h, w};
}

at::Tensor decode_webp(const uint8_t* data, size_t size, const std::string& path, ImageMetadata* metadata) {
  WebPData src{data, size};
  // Default options, as Pillow passes none: MODE_RGBA (not premultiplied), single-threaded.
  std::unique_ptr<WebPAnimDecoder, AnimDecoderDelete> dec(WebPAnimDecoderNew(&src, nullptr));
  OMNI_CHECK_INPUT(dec != nullptr, "image '", path, "' cannot be decoded as WebP (libwebp refused its structure)");
  WebPAnimInfo info;
  OMNI_CHECK_INPUT(WebPAnimDecoderGetInfo(dec.get(), &info), "image '", path, "': WebP header unreadable");
  const int64_t w = info.canvas_width, h = info.canvas_height;
  OMNI_CHECK_INPUT(w * h <= kMaxImagePixels, "image '", path, "' has ", w, " x ", h, " pixels, more than the ",
                   kMaxImagePixels, " Pillow opens");
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  OMNI_CHECK_INPUT(WebPAnimDecoderGetNext(dec.get(), &rgba, &timestamp), "image '", path,
                   "' cannot be decoded as WebP (its first frame is corrupt or truncated)");
  at::Tensor image = at::empty({h, w, 3}, at::kByte);  // [H, W, 3]
  uint8_t* out = image.data_ptr<uint8_t>();
  for (int64_t i = 0; i < w * h; ++i) std::memcpy(out + 3 * i, rgba + 4 * i, 3);
  if (metadata != nullptr) {
    const WebPDemuxer* demux = WebPAnimDecoderGetDemuxer(dec.get());
    metadata->exif = chunk(demux, "EXIF");
    metadata->xmp = chunk(demux, "XMP ");
  }
  return image;
}

}  // namespace omni::io
