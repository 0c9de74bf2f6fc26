#include "io/video_common.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
}

#include "core/log.h"

namespace omni::io {

std::string av_error_string(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  // The description alone ("Invalid data found when processing input"): the number means nothing to a user.
  if (av_strerror(code, buf, sizeof(buf)) < 0) return "libav error " + std::to_string(code);
  return buf;
}

void quiet_libav_logs() {
  av_log_set_level(omni::log::enabled(omni::log::Level::kDebug) ? AV_LOG_INFO : AV_LOG_ERROR);
}

}  // namespace omni::io
