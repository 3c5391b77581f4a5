#include "moving_in.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

namespace vgpu::node {
namespace {

bool unowned(const LedgerInstance& i) { return !i.job && i.orphaned; }

// The one Slurm job whose processes use an instance, or why there is none.
struct Owner {
  std::optional<ProcessJob> job;
  std::string why_not;
};

// A question Slurm could not answer leaves the instance quarantined, not failed: the rebuild runs
// in hooks too, and an epilog that fails drains the node.
Owner owner_of(const NodeContext& ctx, const std::vector<int>& pids) {
  if (ctx.slurm == nullptr) return {std::nullopt, "no Slurm client to ask which job uses it"};
  std::map<JobId, ProcessJob> jobs;
  std::vector<int> outside;
  for (int pid : pids) {
    auto job = ctx.slurm->job_of_process(pid);
    if (!job) return {std::nullopt, fmt::format("process {}: {}", pid, job.error().message)};
    if (*job) jobs.emplace((*job)->job, **job);
    else
      outside.push_back(pid);
  }
  if (!outside.empty())
    return {std::nullopt, fmt::format("used by process {}, which no Slurm job of this node runs", outside.front())};
  if (jobs.size() > 1)
    return {std::nullopt, fmt::format("used by jobs {} and {} at once", jobs.begin()->first, jobs.rbegin()->first)};
  return {jobs.begin()->second, ""};
}

}  // namespace

MovingIn adopt_instances_in_use(const NodeContext& ctx, Ledger& rebuilt) {
  MovingIn out;
  std::set<int> gpus;
  for (const auto& i : rebuilt.instances)
    if (unowned(i)) gpus.insert(i.gpu);
  for (int gpu : gpus) {
    auto processes = ctx.backend->compute_processes(gpu);
    if (!processes) {
      out.notes.push_back(fmt::format("GPU {}: who uses its instances is unknown ({}): they are taken as unused", gpu,
                                      processes.error().message));
      continue;
    }
    std::map<int, std::vector<int>> pids_by_gi;
    for (const auto& p : *processes)
      if (p.gi_id) pids_by_gi[*p.gi_id].push_back(p.pid);
    for (auto& inst : rebuilt.instances) {
      if (inst.gpu != gpu || !unowned(inst)) continue;
      auto used = pids_by_gi.find(inst.gpu_instance_id);
      if (used == pids_by_gi.end()) continue;
      inst.orphaned = false;
      inst.adopted = true;
      Owner owner = owner_of(ctx, used->second);
      if (!owner.job) {
        inst.state = InstanceState::quarantined;
        ++out.quarantined;
        out.notes.push_back(fmt::format("GPU {} {}@{} {}: {}: quarantined until an admin destroys it", gpu,
                                        inst.profile, inst.placement.start, inst.mig_uuid, owner.why_not));
        continue;
      }
      inst.job = owner.job->job;
      inst.user = owner.job->user;
      inst.state = InstanceState::ready;
      ++out.for_jobs;
      out.grants.emplace_back(inst.mig_uuid, owner.job->uid);
    }
  }
  return out;
}

}  // namespace vgpu::node
