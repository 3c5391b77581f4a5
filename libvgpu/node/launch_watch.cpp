#include "vgpu/node/launch_watch.h"

namespace vgpu {

void LaunchWatch::hook_arrived(JobId job, std::int64_t now) {
  arrived_[job] = now;
  unknown_since_.erase(job);
}

std::set<JobId> LaunchWatch::in_flight(const std::set<JobId>& on_node, const Ledger& ledger, std::int64_t now) {
  std::erase_if(unknown_since_, [&](const auto& entry) { return !on_node.contains(entry.first); });
  std::erase_if(arrived_, [&](const auto& entry) {
    return !on_node.contains(entry.first) && now - entry.second > kArrivalKeptS;
  });
  std::set<JobId> out;
  for (JobId job : on_node) {
    if (arrived_.contains(job) || names_job(ledger, job)) continue;
    auto [since, first_time] = unknown_since_.try_emplace(job, now);
    if (now - since->second < window_s_) out.insert(job);
  }
  return out;
}

}  // namespace vgpu
