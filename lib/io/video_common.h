// Small helpers shared by video_writer.cpp and video_reader.cpp (libav error text, libav log level).
#pragma once

#include <string>

namespace omni::io {

// av_strerror's text for a libav return code, with the code itself.
std::string av_error_string(int code);

// libav* print encoder banners and statistics at info level; keep them to errors unless --log-level is debug.
void quiet_libav_logs();

}  // namespace omni::io
