// The planner's backstop for a missing epilog: whatever a job holds on this node after Slurm
// stopped running it here is released as the epilog would have. Slurm is asked, not guessed:
// a job counts as ended only when `squeue -w <node>` (running, configuring, completing or
// suspended jobs), or two published cluster views, have left it out twice in a row. A view counts
// only for jobs this planner saw here before it was taken (published_view.h).
#include <fmt/format.h>

#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/published_view.h"

namespace vgpu {
namespace {

// Of the jobs `asked` about, those `live` has left out twice in a row. This answer's misses are
// remembered; jobs not asked about this time keep their earlier mark.
std::set<JobId> missing_twice(PlannerState& state, const std::set<JobId>& asked, const std::set<JobId>& live) {
  std::set<JobId> ended, missing_now;
  for (JobId j : asked) {
    if (live.contains(j)) continue;
    missing_now.insert(j);
    if (state.missing_once.contains(j)) ended.insert(j);
  }
  for (JobId j : asked)
    if (!missing_now.contains(j)) state.missing_once.erase(j);
  state.missing_once.insert(missing_now.begin(), missing_now.end());
  return ended;
}

// Sessions vgpu-viz knows but the ledger never recorded (a prolog that died in between). Only the
// ended ones go: a session of a job newer than a published view is not in it.
void reap_unrecorded_sessions(NodeContext& ctx, const std::set<JobId>& sessions, const std::set<JobId>& ended,
                              const std::set<JobId>& live, std::vector<std::string>& notes) {
  if (ctx.viz == nullptr) return;
  std::set<JobId> unrecorded;
  for (JobId j : ended)
    if (sessions.contains(j)) unrecorded.insert(j);
  if (unrecorded.empty()) return;
  std::set<JobId> keep = live;
  for (JobId j : sessions)
    if (!ended.contains(j)) keep.insert(j);
  auto removed = ctx.viz->reap(keep);
  if (!removed) notes.push_back("viz: reap: " + removed.error().message);
  else
    for (JobId j : *removed)
      ctx.log(fmt::format("vgpu: planner: node {}: viz VM of ended job {} removed", ctx.node, j));
}

}  // namespace

void release_ended_jobs(NodeContext& ctx, PlannerState& state, std::vector<std::string>& notes) {
  auto ledger = ctx.ledger->load();
  if (!ledger) return;
  std::set<JobId> holders = holders_of(*ledger);
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
  std::set<JobId> everyone = holders;
  everyone.insert(vm_jobs.begin(), vm_jobs.end());
  note_holders(state, everyone, now);
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
  // The view this round read was read before: it says nothing new.
  if (live->published_at && live->published_at == state.ended_job_check_view) return;
  state.ended_job_check_view = live->published_at;
  std::set<JobId> asked = vm_jobs;
  if (check_holders) asked.insert(holders.begin(), holders.end());
  // A job first seen here after the view was taken may have started after it.
  std::erase_if(asked, [&](JobId j) {
    auto seen = state.holder_first_seen.find(j);
    return live->published_at &&
           (seen == state.holder_first_seen.end() || view_predates(live->published_at, seen->second));
  });

  const auto ended = missing_twice(state, asked, live->jobs);
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
  reap_unrecorded_sessions(ctx, sessions, ended, live->jobs, notes);
}

}  // namespace vgpu
