#include "io/jpeg_decoder.h"

#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "io/image_metadata.h"

namespace omni::io {
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: jump back to decode_jpeg's setjmp. Its
// warnings are counted, not printed; only a premature end of data matters (Pillow refuses a truncated file), the
// others (a corrupt Huffman code, extraneous bytes) Pillow decodes through, as libjpeg does.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool premature_end = false;
};

void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void on_message(j_common_ptr cinfo, int msg_level) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (msg_level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->premature_end = true;
}

// What decode_rows found; filled inside the setjmp region, which holds no object with a destructor.
struct Decoded {
  int width = 0;
  int height = 0;
  int components = 0;  // 1 (gray), 3 (RGB), 4 (CMYK as libjpeg outputs it)
  bool truncated = false;
  bool too_large = false;
};

// The libjpeg part: header, decompression, rows into `rows` (resized by the caller between the two passes through
// `grow`, which is called once with the image's size). Returns false with err.message set on a libjpeg error.
// A zeroed decompressor whose errors and warnings go to `err` (each caller then sets its own setjmp point: it
// must be in the frame that is alive while libjpeg runs).
void attach_errors(jpeg_decompress_struct& cinfo, ErrorManager& err) {
  std::memset(&cinfo, 0, sizeof(cinfo));
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
}

bool decode_rows(const uint8_t* data, size_t size, ErrorManager& err, Decoded& out, std::vector<uint8_t>* rows) {
  jpeg_decompress_struct cinfo;
  attach_errors(cinfo, err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  out.components = cinfo.num_components;
  // Pillow names the mode from the frame header's component count (1: L, 3: RGB, 4: CMYK) and asks libjpeg for
  // that colour space; the library picks the file's own (JFIF YCbCr, Adobe transform, component ids) and converts.
  if (cinfo.num_components == 1) {
    cinfo.out_color_space = JCS_GRAYSCALE;
  } else if (cinfo.num_components == 3) {
    cinfo.out_color_space = JCS_RGB;
  } else if (cinfo.num_components == 4) {
    cinfo.out_color_space = JCS_CMYK;
  } else {
    jpeg_destroy_decompress(&cinfo);
    return true;  // the caller reports the component count
  }
  if (int64_t{cinfo.image_width} * cinfo.image_height > kMaxImagePixels) {
    out.width = static_cast<int>(cinfo.image_width);
    out.height = static_cast<int>(cinfo.image_height);
    out.too_large = true;
    jpeg_destroy_decompress(&cinfo);
    return true;
  }
  // Defaults kept as Pillow keeps them (it changes them only in draft mode): JDCT_ISLOW, fancy upsampling, block
  // smoothing, no scaling.
  jpeg_start_decompress(&cinfo);
  out.width = static_cast<int>(cinfo.output_width);
  out.height = static_cast<int>(cinfo.output_height);
  const size_t stride = static_cast<size_t>(out.width) * cinfo.output_components;
  rows->resize(stride * out.height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = rows->data() + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  // Data that ended before the last row was filled with gray by libjpeg; Pillow refuses such a file. A missing
  // EOI after complete rows is accepted by both.
  out.truncated = err.premature_end;
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

void pillow_cmyk_row_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t pixels) {
  // Pillow: unpack "CMYK;I" inverts every byte (c' = 255 - c), then cmyk2rgb with nk = 255 - k' (= k):
  // out = CLIP8(nk - MULDIV255(c', nk)), MULDIV255(a, b) = ((t >> 8) + t) >> 8 with t = a * b + 128.
  for (size_t i = 0; i < pixels; ++i, cmyk += 4, rgb += 3) {
    const int nk = 255 - (255 - cmyk[3]);
    for (int c = 0; c < 3; ++c) {
      const int t = (255 - cmyk[c]) * nk + 128;
      const int v = nk - (((t >> 8) + t) >> 8);
      rgb[c] = static_cast<uint8_t>(v <= 0 ? 0 : (v < 256 ? v : 255));
    }
  }
}

std::pair<int, int> jpeg_size(const uint8_t* data, size_t size, const std::string& path) {
  ErrorManager err;
  jpeg_decompress_struct cinfo;
  attach_errors(cinfo, err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    OMNI_FAIL_INPUT("image '", path, "' cannot be decoded as JPEG (libjpeg: ", err.message, ")");
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const std::pair<int, int> hw{static_cast<int>(cinfo.image_height), static_cast<int>(cinfo.image_width)};
  jpeg_destroy_decompress(&cinfo);
  return hw;
}

at::Tensor decode_jpeg(const uint8_t* data, size_t size, const std::string& path) {
  ErrorManager err;
  Decoded d;
  std::vector<uint8_t> rows;
  const bool ok = decode_rows(data, size, err, d, &rows);
  OMNI_CHECK_INPUT(ok, "image '", path, "' cannot be decoded as JPEG (libjpeg: ", err.message, ")");
  OMNI_CHECK_INPUT(d.components == 1 || d.components == 3 || d.components == 4, "image '", path, "' is a JPEG with ",
                   d.components, " components; expected 1 (gray), 3 (colour) or 4 (CMYK)");
  OMNI_CHECK_INPUT(!d.too_large, "image '", path, "' has ", d.width, " x ", d.height, " pixels, more than the ",
                   kMaxImagePixels, " Pillow opens");
  OMNI_CHECK_INPUT(!d.truncated, "image '", path, "' is truncated: its JPEG data ends before the last row");
  at::Tensor image = at::empty({d.height, d.width, 3}, at::kByte);  // [H, W, 3]
  uint8_t* out = image.data_ptr<uint8_t>();
  const size_t pixels = static_cast<size_t>(d.width) * d.height;
  if (d.components == 3) {
    std::memcpy(out, rows.data(), pixels * 3);
  } else if (d.components == 1) {
    for (size_t i = 0; i < pixels; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = rows[i];
  } else {
    pillow_cmyk_row_to_rgb(rows.data(), out, pixels);
  }
  return image;
}

}  // namespace omni::io
