// The planner's backstop for a missing epilog: whatever a job holds on this node after Slurm
// stopped running it here is released as the epilog would have. Slurm is asked, not guessed:
// a job counts as ended only when `squeue -w <node>` (running, configuring, completing or
// suspended jobs) has left it out twice in a row.
#include <fmt/format.h>

#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/planner.h"

namespace vgpu {

void release_ended_jobs(NodeContext& ctx, PlannerState& state, std::vector<std::string>& notes) {
  auto ledger = ctx.ledger->load();
  if (!ledger) return;
  std::set<JobId> holders;  // jobs holding instances or claims (MIG) here
  for (const auto& i : ledger->instances)
    if (i.job) holders.insert(*i.job);
  for (const auto& s : ledger->plan.slots)
    if (s.claimed_by_job) holders.insert(*s.claimed_by_job);
  for (const auto& g : ledger->share_groups)
    for (const auto& h : g.holders) holders.insert(h.job);
  // A record whose epilog died after retiring the instances (epilog.after_retire) holds nothing
  // in the ledger but would stay forever.
  for (const auto& [j, uuids] : read_job_records(ctx)) holders.insert(j);
  std::set<JobId> vm_jobs;
  for (const auto& vm : ledger->vms) vm_jobs.insert(vm.job);
  std::set<JobId> sessions;
  if (ctx.viz != nullptr) {
    auto listed = ctx.viz->sessions();
    if (listed) sessions = *listed;
    else
      notes.push_back("viz: " + listed.error().message);
  }
  vm_jobs.insert(sessions.begin(), sessions.end());

  const std::int64_t now = ctx.now();
  const bool check_holders = !holders.empty() && now - state.last_ended_job_check >= state.ended_job_check_s;
  if (vm_jobs.empty() && !check_holders) {
    if (holders.empty()) state.missing_once.clear();
    return;  // nothing to ask Slurm about this round
  }
  auto live = ctx.slurm->jobs_on_node(ctx.node);
  if (!live) {
    notes.push_back("ended jobs: not checked: " + live.error().message);
    return;
  }
  if (check_holders) state.last_ended_job_check = now;
  std::set<JobId> asked = vm_jobs;
  if (check_holders) asked.insert(holders.begin(), holders.end());

  std::set<JobId> ended, missing_now;
  for (JobId j : asked) {
    if (live->contains(j)) continue;
    missing_now.insert(j);
    if (state.missing_once.contains(j)) ended.insert(j);
  }
  // Remember this round's misses; jobs not asked about this round keep their earlier mark.
  for (JobId j : asked)
    if (!missing_now.contains(j)) state.missing_once.erase(j);
  state.missing_once.insert(missing_now.begin(), missing_now.end());
  if (ended.empty()) return;

  for (JobId j : ended) {
    // The epilog's own path: release, scrub and destroy the instances, stop the VM, drop the
    // job record. Idempotent, so a late real epilog finds nothing left to do.
    auto done = run_epilog(ctx, j, "ended without epilog (released by the planner)");
    if (!done) {
      notes.push_back(fmt::format("ended job {}: {}", j, done.error().message));
      continue;
    }
    state.missing_once.erase(j);
    ctx.log(
        fmt::format("vgpu: planner: node {}: job {} is no longer running here; released what it held "
                    "({} instance(s) destroyed)",
                    ctx.node, j, done->destroyed));
  }
  // Sessions vgpu-viz knows but the ledger never recorded (a prolog that died in between).
  if (ctx.viz != nullptr) {
    std::set<JobId> unrecorded;
    for (JobId j : ended)
      if (sessions.contains(j)) unrecorded.insert(j);
    if (!unrecorded.empty()) {
      auto removed = ctx.viz->reap(*live);
      if (!removed) notes.push_back("viz: reap: " + removed.error().message);
      else
        for (JobId j : *removed)
          ctx.log(fmt::format("vgpu: planner: node {}: viz VM of ended job {} removed", ctx.node, j));
    }
  }
}

}  // namespace vgpu
