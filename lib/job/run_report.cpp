#include "job/run_report.h"

#include <algorithm>

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
  nlohmann::json traffic = nlohmann::json::object();
  for (int k = 0; k < kKinds; ++k) {
    if (collectives[k] == 0) continue;
    traffic[dist::DeviceMesh::kinds()[static_cast<size_t>(k)]] = {
        {"collectives", collectives[k]},
        {"sent_intra_node_bytes", sent_intra_node[k]},
        {"sent_inter_node_bytes", sent_inter_node[k]},
        {"step_sent_intra_node_bytes", step_sent_intra_node[k]},
        {"step_sent_inter_node_bytes", step_sent_inter_node[k]}};
  }
  j["traffic"] = traffic;
  return j;
}

nlohmann::json report_header(const dist::DeviceMesh& mesh, const std::string& device, const std::string& layout_choice,
                             const dist::MemoryBudget& budget) {
  const dist::Layout& l = mesh.layout();
  nlohmann::json r;
  r["world_size"] = l.world_size;
  r["device"] = device;
  r["float32_math"] = dist::float32_math();  // CUDA float32 matmuls and convolutions: ieee, or tf32 (--tf32)
  r["cpu_kernels"] = dist::cpu_kernels();    // ATen's vector level (and oneDNN's cap): the last bits follow it
  r["layout"] = {{"dp", l.dp},
                 {"cfg", l.cfg},
                 {"ring", l.ring},
                 {"ulysses", l.ulysses},
                 {"hsdp_shard", l.hsdp_shard},
                 {"hsdp_replicate", l.hsdp_replicate},
                 {"choice", layout_choice}};
  if (budget.bytes > 0) r["memory_budget"] = {{"bytes", budget.bytes}, {"what", budget.what}};
  const dist::Topology& t = mesh.topology();
  nlohmann::json nodes = nlohmann::json::array();
  for (int n = 0; n < t.nodes(); ++n) {
    const std::vector<int> ranks = t.ranks_of(n);
    nodes.push_back({{"host", t.hostnames[static_cast<size_t>(ranks.front())]}, {"ranks", ranks}});
  }
  nlohmann::json groups = nlohmann::json::object();
  for (const char* kind : {"shard", "replicate", "ulysses", "ring", "cfg", "dp", "video"}) {
    nlohmann::json list = nlohmann::json::array();
    int span = 0;
    for (const auto& g : l.groups(kind)) {
      std::vector<int> ranks;
      std::vector<int> seen;
      for (int pos : g) {
        const int r = mesh.placement().rank_at[static_cast<size_t>(pos)];
        ranks.push_back(r);
        const int node = t.node_of[static_cast<size_t>(r)];
        if (std::find(seen.begin(), seen.end(), node) == seen.end()) seen.push_back(node);
      }
      span = std::max(span, static_cast<int>(seen.size()));
      list.push_back(ranks);
    }
    groups[kind] = {{"groups", list}, {"max_nodes_spanned", span}};
  }
  r["topology"] = {{"nodes", nodes}, {"groups", groups}};
  return r;
}

}  // namespace omni::job
