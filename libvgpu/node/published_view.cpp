#include "vgpu/node/published_view.h"

#include <algorithm>

#include "vgpu/contract/cluster_view.h"

namespace vgpu {

bool view_predates(const std::optional<std::int64_t>& published_at, std::int64_t event_at) {
  return published_at && *published_at < event_at + contract::kClusterViewClockMarginS;
}

std::set<JobId> holders_of(const Ledger& ledger) {
  std::set<JobId> holders;
  for (const auto& i : ledger.instances)
    if (i.job) holders.insert(*i.job);
  for (const auto& s : ledger.plan.slots)
    if (s.claimed_by_job) holders.insert(*s.claimed_by_job);
  for (const auto& g : ledger.share_groups)
    for (const auto& h : g.holders) holders.insert(h.job);
  return holders;
}

void note_holders(PlannerState& state, const std::set<JobId>& holders, std::int64_t now) {
  std::erase_if(state.holder_first_seen, [&](const auto& seen) { return !holders.contains(seen.first); });
  for (JobId j : holders) state.holder_first_seen.try_emplace(j, now);
}

Ledger without_holders_newer_than(const Ledger& ledger, const PlannerState& state,
                                  const std::optional<std::int64_t>& published_at) {
  if (!published_at) return ledger;
  const auto too_new = [&](JobId j) {
    auto seen = state.holder_first_seen.find(j);
    return seen == state.holder_first_seen.end() || view_predates(published_at, seen->second);
  };
  Ledger out = ledger;
  for (auto& i : out.instances)
    if (i.job && too_new(*i.job)) i.job.reset();
  for (auto& s : out.plan.slots)
    if (s.claimed_by_job && too_new(*s.claimed_by_job)) s.claimed_by_job.reset();
  for (auto& g : out.share_groups) std::erase_if(g.holders, [&](const ShareHolder& h) { return too_new(h.job); });
  return out;
}

}  // namespace vgpu
