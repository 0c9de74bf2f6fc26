#include "job/video_queue.h"

#include <algorithm>

#include "core/error.h"
#include "dist/communicator.h"

namespace omni::job {

const char* status_name(VideoStatus status) {
  switch (status) {
    case VideoStatus::kGenerated:
      return "generated";
    case VideoStatus::kSkipped:
      return "skipped";
    case VideoStatus::kFailed:
      return "failed";
    default:
      return "not run";
  }
}

VideoQueue::VideoQueue(std::vector<VideoSpec> videos, const std::vector<bool>& written)
    : videos_(std::move(videos)), status_(videos_.size(), VideoStatus::kPending) {
  for (size_t i = 0; i < status_.size() && i < written.size(); ++i)
    if (written[i]) status_[i] = VideoStatus::kSkipped;
}

int VideoQueue::count(VideoStatus s) const {
  return static_cast<int>(std::count(status_.begin(), status_.end(), s));
}

std::vector<Assignment> VideoQueue::assignments_of(int dp_index, int dp) const {
  std::vector<int> pending;
  for (size_t i = 0; i < videos_.size(); ++i)
    if (status_[i] == VideoStatus::kPending) pending.push_back(static_cast<int>(i));
  const int n = static_cast<int>(pending.size());
  const int rounds = (n + dp - 1) / dp;
  std::vector<Assignment> out;
  int last = n == 0 ? -1 : pending[static_cast<size_t>(std::min(dp_index, n - 1))];
  for (int k = 0; k < rounds; ++k) {
    const int idx = k * dp + dp_index;
    if (idx < n) {
      last = pending[static_cast<size_t>(idx)];
      out.push_back({last, true});
    } else {
      out.push_back({last, false});
    }
  }
  return out;
}

std::string VideoQueue::interrupt_message(bool resumable) const {
  std::string line =
      str_cat("the video in progress is abandoned (no partial file is left); ", count(VideoStatus::kSkipped),
              " video(s) written by earlier runs and ", count(VideoStatus::kGenerated), " by this rank are kept");
  if (resumable) line += "; run the same command again to make the rest (written videos are skipped)";
  return line;
}

pipeline::VideoParams VideoQueue::largest_video() const {
  pipeline::VideoParams largest;
  int64_t most = -1;
  for (const auto& v : videos_) {
    const pipeline::VideoParams p = v.params();
    const int64_t area = static_cast<int64_t>(p.height) * p.width * p.num_frames;
    if (area > most) most = area, largest = p;
  }
  return largest;
}

std::vector<VideoStatus> VideoQueue::agreed_statuses(const dist::Communicator& world) const {
  // The statuses are ordered (pending < generated < skipped < failed), and each video's is raised by at most
  // one rank, so the maximum is the truth.
  std::vector<int> s(status_.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<int>(status_[i]);
  world.all_reduce_max(s);
  std::vector<VideoStatus> out;
  for (int v : s) out.push_back(static_cast<VideoStatus>(v));
  return out;
}

}  // namespace omni::job
