// The run report (--report, docs/DESIGN.md section 5): every rank's figures, gathered to rank 0 as one typed
// struct per rank, next to its memory plan; the layout, the timings, the videos' statuses.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dist/device.h"
#include "dist/device_mesh.h"

namespace omni::job {

// One rank's measured figures (the report's "ranks" entries, less the plan).
struct RankStats {
  int64_t param_bytes_resident = 0;
  int64_t gathered_bytes_peak = 0;
  int64_t disk_bytes_read = 0;
  int64_t gathered_bytes_per_step = 0;
  double gather_wait_seconds = 0;
  int64_t peak_rss_bytes = 0;
  int64_t peak_device_bytes = 0;
  int64_t load_peak_rss_bytes = 0;
  int64_t load_peak_device_bytes = 0;
  int64_t vae_peak_bytes = 0;  // the largest decode peak of this rank's videos
  double decode_seconds = 0;
  int64_t baseline_rss_bytes = 0;  // resident bytes before any weight was read
  double compute_seconds = 0;      // text encoding, denoising and decoding of the videos this rank helped make
  // Bytes this rank sent per group kind (DeviceMesh::kinds() order), to peers on its node and on others
  // (dist::TrafficCounts): over the whole run, and over its last denoising step.
  static constexpr int kKinds = 8;
  int64_t sent_intra_node[kKinds] = {};
  int64_t sent_inter_node[kKinds] = {};
  int64_t collectives[kKinds] = {};
  int64_t step_sent_intra_node[kKinds] = {};
  int64_t step_sent_inter_node[kKinds] = {};

  // The report entry; `cuda`: also cuda_peak_allocated_bytes (peak_device_bytes on a GPU).
  nlohmann::json to_json(bool cuda) const;
};

// The head every report has (the run's and the dry run's): world size, device, layout and its choice, memory
// budget (when known), and the topology: the nodes with their ranks, and per group kind the world ranks of each
// group and the most nodes one spans.
nlohmann::json report_header(const dist::DeviceMesh& mesh, const std::string& device, const std::string& layout_choice,
                             const dist::MemoryBudget& budget);

}  // namespace omni::job
