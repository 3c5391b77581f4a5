// Epilog: end the job's tenancy (its instances and shares retired in the ledger, its viz VM
// stopped), then scrub and destroy what it released (release_pass.cpp), or hand that to a process
// of its own (VGPU_SCRUB_AFTER_EPILOG).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

#include "epilog/release_pass.h"
#include "node_lock.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"

namespace vgpu {
namespace {

using node::epilog::InstanceKey;
using node::epilog::key_of;

// The instances `job` shares with other jobs' shares (share_across_users puts several users into
// one): the job's user loses each one where no other share of theirs is left. Called under the
// access lock, before the job's shares are retired, with the lock held until they are: a death in
// between leaves the share recorded and its user already out, and the planner's backstop
// (ended_jobs.cpp) retires it; retiring first would leave the user in until the instance's last
// share ends. Prologs grant under the same lock from the ledger they read there, so none puts the
// user back in between. A failure is the epilog's problem to report, not the job's: the user then
// keeps access until the instance's last share ends and it is revoked.
std::vector<std::string> take_shared_instances_from(NodeContext& ctx, JobId job) {
  auto ledger = ctx.ledger->load();
  if (!ledger) return {ledger.error().message};
  std::vector<std::string> problems;
  for (const ShareGroup* group : share_groups_of_job(*ledger, job)) {
    const LedgerInstance* inst = share_group_instance(*ledger, *group);
    if (inst == nullptr) continue;
    ShareGroup others = *group;
    std::string user;
    std::erase_if(others.holders, [&](const ShareHolder& h) {
      if (h.job == job) user = h.user;
      return h.job == job;
    });
    const auto users = share_group_users(others);
    // The last share's end revokes the whole instance as it is released; a user with another
    // share there keeps it.
    if (users.empty() || std::ranges::find(users, user) != users.end()) continue;
    if (auto granted = ctx.access->grant_users(*inst, users); !granted)
      problems.push_back(fmt::format("GPU {} {}@{} {}: giving it to its remaining users: {}", inst->gpu, inst->profile,
                                     inst->placement.start, inst->mig_uuid, granted.error().message));
  }
  return problems;
}

bool shares_an_instance_with_others(const Ledger& ledger, JobId job) {
  return std::ranges::any_of(share_groups_of_job(ledger, job), [&](const ShareGroup* g) {
    return g->holders.size() > 1 && share_group_instance(ledger, *g) != nullptr;
  });
}

// VGPU_SCRUB_AFTER_EPILOG: the job's released instances go, each with the cleanup lock this epilog
// took before releasing it, to a process of their own (ports.h, CleanupHandoff). How many went;
// none when none is released (a share whose instance others still use) or the hand-off failed,
// which is logged: this epilog then cleans them up itself, as without the setting.
// The job's user loses each instance here, before the epilog returns, not in that process: once
// the epilog has returned Slurm counts the job as ended, and another job of the same user on the
// node must not be able to open the instance meanwhile. A shared instance's MPS daemon must quit
// before that (work_released), so a job with one is not handed off; nor is one whose revoke fails
// (the epilog quarantines it).
int hand_off_released(NodeContext& ctx, const std::vector<InstanceKey>& own, const std::deque<NodeLock>& own_locks,
                      const std::string& where) {
  auto ledger = ctx.ledger->load();
  if (!ledger) {
    ctx.log(fmt::format("{}: not handing the cleanup off: {}", where, ledger.error().message));
    return 0;
  }
  std::vector<HeldCleanup> held;
  std::vector<const LedgerInstance*> released;
  for (std::size_t i = 0; i < own.size(); ++i) {
    auto it = std::ranges::find_if(
        ledger->instances, [&](const LedgerInstance& inst) { return key_of(inst) == own[i] && is_released(inst); });
    if (it == ledger->instances.end()) continue;
    if (shares_of(*ledger, it->profile) > 0) return 0;
    released.push_back(&*it);
    held.push_back({own[i].first, own[i].second, own_locks[i].fd()});
  }
  if (held.empty()) return 0;
  if (ctx.access != nullptr)
    for (const auto* inst : released)
      if (!ctx.access->revoke(*inst)) return 0;
  if (auto handed = ctx.cleanup_handoff->hand_off(held); !handed) {
    ctx.log(fmt::format("{}: handing {} instance(s) to a cleanup process: {}; cleaning up here", where, held.size(),
                        handed.error().message));
    return 0;
  }
  return static_cast<int>(held.size());
}

}  // namespace

Result<EpilogResult> run_epilog(NodeContext& ctx, JobId job, const std::string& end_reason) {
  const std::string where = fmt::format("vgpu: epilog: job {}", job);
  auto ledger = ensure_ledger(ctx);
  if (!ledger) return std::unexpected(ledger.error().within(where));
  // The job's instances are locked for their cleanup before they are released, so no planner
  // round takes one between the retire and this epilog's scrub, and this epilog scrubs its own
  // while other jobs' epilogs scrub theirs. A share job holds one instance, a job of its own
  // instances locks them in key order: no two epilogs wait for each other.
  std::vector<InstanceKey> own;
  for (const auto& inst : ledger->instances)
    if (inst.job == job) own.push_back(key_of(inst));
  for (const ShareGroup* group : share_groups_of_job(*ledger, job))
    if (const LedgerInstance* inst = share_group_instance(*ledger, *group)) own.push_back(key_of(*inst));
  std::ranges::sort(own);
  own.erase(std::ranges::unique(own).begin(), own.end());
  std::deque<NodeLock> own_locks;
  for (const auto& [gpu, gi] : own)
    if (!own_locks.emplace_back(cleanup_lock_path(ctx, gpu, gi)).held())
      return fail(ErrorCode::io, fmt::format("{}: cannot take {}", where, cleanup_lock_path(ctx, gpu, gi)));
  int owned = 0;
  std::vector<std::string> access_problems;
  std::optional<NodeLock> access;
  if (ctx.access != nullptr && shares_an_instance_with_others(*ledger, job)) {
    access.emplace(access_lock_path(ctx));
    if (access->held()) access_problems = take_shared_instances_from(ctx, job);
    else
      access_problems.push_back(fmt::format("cannot take {} to take shared instances back", access_lock_path(ctx)));
  }
  auto retired = update_for_job(ctx, [&](Ledger& l) -> Result<void> {
    owned = retire_job(l, job, ctx.now(), end_reason);
    // A share's last holder retires the instance as retire_job does; finish_released_instances
    // closes its MPS daemon before the scrub.
    const auto shares = release_shares(l, job, ctx.now(), end_reason);
    owned +=
        static_cast<int>(std::ranges::count_if(shares, [](const ReleasedShare& r) { return r.last && r.on_instance; }));
    return {};
  });
  access.reset();
  if (!retired) return std::unexpected(retired.error().within(where));
  crash_point("epilog.after_retire");
  std::vector<std::string> viz_problems;
  stop_viz_session(ctx, job, viz_problems);
  const int handed = ctx.cleanup_handoff != nullptr ? hand_off_released(ctx, own, own_locks, where) : 0;
  auto result = handed > 0 ? Result<EpilogResult>(EpilogResult{.handed_off = handed, .problems = {}})
                           : finish_released_instances(ctx, {.held = own, .wait_for_others = false});
  own_locks.clear();
  crash_point("epilog.after_release");
  if (!result) return std::unexpected(result.error().within(where));
  for (auto& p : viz_problems) result->problems.push_back(std::move(p));
  for (auto& p : access_problems) result->problems.push_back(std::move(p));
  std::string record = fmt::format("{}/jobs/{}.json", ctx.node_dir(), job);
  if (std::remove(record.c_str()) != 0 && errno != ENOENT)
    result->problems.push_back(fmt::format("remove {}: {}", record, std::strerror(errno)));
  const std::string problems = result->problems.empty() ? "" : "; problems: " + result->problems.front();
  if (handed > 0)
    ctx.log(
        fmt::format("{}: {} instance(s) released, {} handed to a cleanup process{}", where, owned, handed, problems));
  else
    ctx.log(fmt::format("{}: {} instance(s) released, {} kept idle, {} destroyed, {} quarantined{}", where, owned,
                        result->kept, result->destroyed, result->quarantined, problems));
  return result;
}

}  // namespace vgpu
