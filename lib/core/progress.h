// Progress of the denoising loop on rank 0: a redrawn bar (step, expert, seconds per step, ETA) when stderr is
// a terminal, plain log lines otherwise (batch jobs, CI logs).
#pragma once

#include <string>

namespace omni {

// A duration as people read it in a log: "0.35 s", "3.47 s" below 10 s, "34.7 s" below 90 s, then "2 min 5 s",
// "1 h 3 min". Never "0 s" for a duration that was not zero ("< 0.01 s").
std::string format_duration(double seconds);

class Progress {
 public:
  // `enabled` false: prints nothing (ranks other than 0).
  Progress(std::string label, int total, bool enabled);
  ~Progress();
  // Step `done` (1-based count of finished steps) took `seconds`; `detail` is shown beside it ("transformer_2").
  void update(int done, double seconds, const std::string& detail);
  void finish();

 private:
  std::string label_;
  int total_;
  bool enabled_;
  bool tty_;
  bool open_ = false;
  double elapsed_ = 0.0;
};

}  // namespace omni
