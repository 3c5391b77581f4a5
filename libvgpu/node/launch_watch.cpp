#include "vgpu/node/launch_watch.h"

namespace vgpu {

std::set<JobId> LaunchWatch::in_flight(const std::set<JobId>& on_node, const Ledger& ledger, std::int64_t now) {
  std::erase_if(unknown_since_, [&](const auto& entry) { return !on_node.contains(entry.first); });
  std::set<JobId> out;
  for (JobId job : on_node) {
    if (names_job(ledger, job)) {
      unknown_since_.erase(job);
      continue;
    }
    auto [it, first_time] = unknown_since_.try_emplace(job, now);
    if (now - it->second < window_s_) out.insert(job);
  }
  return out;
}

}  // namespace vgpu
