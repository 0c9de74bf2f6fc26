#include "job/run_report.h"

namespace omni::job {

nlohmann::json RankStats::to_json(bool cuda) const {
  nlohmann::json j = {{"param_bytes_resident", param_bytes_resident},
                      {"gathered_bytes_peak", gathered_bytes_peak},
                      {"disk_bytes_read", disk_bytes_read},
                      {"gathered_bytes_per_step", gathered_bytes_per_step},
                      {"gather_wait_seconds", gather_wait_seconds},
                      {"peak_rss_bytes", peak_rss_bytes},
                      {"peak_device_bytes", peak_device_bytes},
                      {"load_peak_rss_bytes", load_peak_rss_bytes},
                      {"load_peak_device_bytes", load_peak_device_bytes},
                      {"vae_peak_bytes", vae_peak_bytes},
                      {"decode_seconds", decode_seconds},
                      {"baseline_rss_bytes", baseline_rss_bytes},
                      {"compute_seconds", compute_seconds}};
  if (cuda) j["cuda_peak_allocated_bytes"] = peak_device_bytes;
  return j;
}

nlohmann::json report_header(const config::Layout& l, const std::string& device, const std::string& layout_choice,
                             const dist::MemoryBudget& budget) {
  nlohmann::json r;
  r["world_size"] = l.world_size;
  r["device"] = device;
  r["layout"] = {{"dp", l.dp},
                 {"cfg", l.cfg},
                 {"ring", l.ring},
                 {"ulysses", l.ulysses},
                 {"hsdp_shard", l.hsdp_shard},
                 {"hsdp_replicate", l.hsdp_replicate},
                 {"choice", layout_choice}};
  if (budget.bytes > 0) r["memory_budget"] = {{"bytes", budget.bytes}, {"what", budget.what}};
  return r;
}

}  // namespace omni::job
