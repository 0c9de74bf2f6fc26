#include "io/video_common.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
}

#include "core/log.h"

namespace omni::io {

std::string av_error_string(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buf, sizeof(buf));
  return std::string(buf) + " (" + std::to_string(code) + ")";
}

void quiet_libav_logs() {
  av_log_set_level(omni::log::enabled(omni::log::Level::kDebug) ? AV_LOG_INFO : AV_LOG_ERROR);
}

}  // namespace omni::io
