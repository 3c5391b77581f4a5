// Cross-checks the node's four records of the truth: ledger, hardware, advertisement, job records.
#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/split_publisher.h"
#include "vgpu/node/node_state.h"

namespace vgpu {

Result<std::vector<std::string>> verify_node(NodeContext& ctx) {
  std::vector<std::string> problems;
  auto ledger = ctx.ledger->load();
  if (!ledger) return std::unexpected(ledger.error());
  auto snap = take_snapshot(*ctx.backend);
  if (!snap) return std::unexpected(snap.error());
  for (const auto& d : reconcile(*ledger, hardware_view_from_snapshot(*snap, Catalog::builtin())))
    problems.push_back(fmt::format("ledger vs hardware: {} on GPU {}: {}", to_string(d.kind), d.gpu, d.detail));

  auto advertised = read_advertised_counts(ctx);
  // What the planner leaves out while slurmctld does not count jobs' instances (PlannerState).
  std::map<std::string, int> uncounted;
  std::optional<int> total;
  if (ctx.slurm != nullptr)
    if (auto node = ctx.slurm->node_gres_now(ctx.node); node) {
      uncounted = uncounted_by_slurm(*ledger, *node);
      total = node_total_of(ctx, *node);
    }
  auto expected = node_advertisement(ctx, *ledger, uncounted, total);
  std::erase_if(expected, [](const auto& kv) { return kv.second == 0; });
  if (!advertised) {
    problems.push_back("advertisement: " + advertised.error().message);
  } else if (*advertised != expected) {
    std::string a, e;
    for (const auto& [k, v] : *advertised) a += fmt::format(" {}:{}", k, v);
    for (const auto& [k, v] : expected) e += fmt::format(" {}:{}", k, v);
    // Below the ledger in every type is what a planner's handover looks like while slurmctld takes
    // the shrink (the ledger keeps the dropped slots claimable until then): safe, and usually over
    // in seconds. Say so, so an admin checks again before suspecting the node.
    const bool only_below = std::ranges::all_of(*advertised, [&](const auto& kv) {
      auto it = expected.find(kv.first);
      return it != expected.end() && kv.second <= it->second;
    });
    problems.push_back(fmt::format("advertisement{} != ledger{}{}", a, e,
                                   only_below ? " (only below it: a handover may be open; check again shortly)" : ""));
  }

  // Job records: each names exactly the instances its job owns in the ledger.
  std::vector<std::string> unreadable;
  auto recorded = read_job_records(ctx, &unreadable);
  for (const auto& name : unreadable) problems.push_back(fmt::format("job record {}: unreadable", name));
  std::map<JobId, std::set<std::string>> owned;
  for (const auto& i : ledger->instances)
    if (i.job) owned[*i.job].insert(i.mig_uuid);
  for (const auto& g : ledger->share_groups)
    if (const LedgerInstance* i = share_group_instance(*ledger, g))
      for (const auto& h : g.holders) owned[h.job].insert(i->mig_uuid);
  for (const auto& [job, uuids] : recorded)
    if (owned[job] != uuids) problems.push_back(fmt::format("job {}: record and ledger name different instances", job));
  for (const auto& [job, uuids] : owned)
    if (!recorded.contains(job))
      problems.push_back(fmt::format("job {}: owns {} instance(s) but has no job record", job, uuids.size()));
  // Viz VMs: the ledger's records and the sessions vgpu-viz knows name the same jobs.
  if (ctx.viz != nullptr) {
    auto sessions = ctx.viz->sessions();
    std::set<JobId> recorded_vms;
    for (const auto& vm : ledger->vms) recorded_vms.insert(vm.job);
    if (!sessions) problems.push_back("viz: " + sessions.error().message);
    else if (*sessions != recorded_vms)
      problems.push_back(fmt::format("viz: ledger records VMs of {} job(s), vgpu-viz has {} session(s)",
                                     recorded_vms.size(), sessions->size()));
  }
  // A node that quarantines everything its jobs release is not consistent, however tidy its records.
  std::ranges::move(required_scrub_problems(ctx), std::back_inserter(problems));
  return problems;
}

}  // namespace vgpu
