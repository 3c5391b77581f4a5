// Epilog: end the job's tenancy, then scrub and destroy every released instance (or hand them to a
// process that does: VGPU_SCRUB_AFTER_EPILOG). Instances in `scrubbing`/`destroying` are a work
// queue that any epilog, prolog or planner round finishes, one process per instance at a time
// under that instance's cleanup lock, so work left by a crashed epilog is never lost and the
// scrubs of different jobs run at the same time.
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <ranges>
#include <utility>
#include <vector>

#include "node_lock.h"
#include "node_model.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/hook_tally_store.h"
#include "vgpu/node/node_state.h"

namespace vgpu {
namespace {

std::string_view scrub_outcome_name(ScrubStatus s) {
  switch (s) {
    case ScrubStatus::scrubbed: return "clean";
    case ScrubStatus::failed: return "failed";
    case ScrubStatus::unavailable: return "unavailable";
  }
  return "failed";
}

bool scrub_required(const NodeContext& ctx) {
  for (const auto* p : node_partitions(*ctx.policy, ctx.node))
    if (p->scrub == ScrubMode::required) return true;
  return false;
}

using InstanceKey = std::pair<int, int>;  // GPU, GPU instance id

InstanceKey key_of(const LedgerInstance& inst) { return {inst.gpu, inst.gpu_instance_id}; }

// Under the hardware lock, as a prolog opens one (share_prolog.cpp).
Result<void> close_mps_daemon(NodeContext& ctx, const std::string& device) {
  NodeLock hardware(hardware_lock_path(ctx));
  if (!hardware.held()) return fail(ErrorCode::io, fmt::format("cannot take {}", hardware_lock_path(ctx)));
  return ctx.mps->close(device);
}

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

std::string what_of(const LedgerInstance& inst) {
  return fmt::format("GPU {} {}@{} {}", inst.gpu, inst.profile, inst.placement.start, inst.mig_uuid);
}

// Scrubs the released instances this pass holds the cleanup locks of (`held`, and those whose lock
// it takes here), and destroys those in destroying; `busy` gets the released instances another
// process is working on. A scrubbed instance that still backs its plan slot is kept, idle, for
// the next job of its profile: on real hardware creating an instance takes seconds and destroying
// one a good part of a second, both on a job's way to its first command. Only a real scrub earns
// that: an instance whose scrub was unavailable (policy "optional") is destroyed as before. At most
// two ledger writes however many instances: the scrub outcomes (idle, destroying or quarantined)
// once every scrub is done, then the removals once every destroy is done. A crash in between
// repeats work, never skips it: an instance still marked scrubbing is scrubbed again, one marked
// destroying but already gone is taken as destroyed (not_found).
Result<EpilogResult> work_released(NodeContext& ctx, const std::vector<InstanceKey>& held,
                                   std::vector<InstanceKey>& busy) {
  EpilogResult result;
  auto before = ctx.ledger->load();
  if (!before) return std::unexpected(before.error());
  std::vector<InstanceKey> mine = held;
  std::deque<NodeLock> locks;  // never waits: a planner must not, and a holder may wait for ours
  for (const auto& inst : before->instances) {
    if (!is_released(inst) || std::ranges::find(held, key_of(inst)) != held.end()) continue;
    const auto path = cleanup_lock_path(ctx, inst.gpu, inst.gpu_instance_id);
    const auto& lock = locks.emplace_back(path, LockWait::try_once);
    if (lock.held()) mine.push_back(key_of(inst));
    else if (lock.busy()) busy.push_back(key_of(inst));
    else result.problems.push_back(fmt::format("{}: cannot open its cleanup lock {}", what_of(inst), path));
  }
  if (mine.empty()) return result;
  // Another pass may have finished one of them between the load above and its lock: work only
  // what is released still, now that the locks are held.
  auto ledger = ctx.ledger->load();
  if (!ledger) return std::unexpected(ledger.error());
  const bool required = scrub_required(ctx);

  std::map<InstanceKey, InstanceState> scrubbed;  // the outcome of each scrub
  std::vector<ScrubRun> scrub_runs;                // for the metrics (hook_tally_store.h)
  std::vector<const LedgerInstance*> to_destroy;
  for (const auto& inst : ledger->instances) {
    if (!is_released(inst) || std::ranges::find(mine, key_of(inst)) == mine.end()) continue;
    // A shared instance's MPS daemon goes first: its server holds the device. A daemon that will
    // not quit leaves the instance in this queue for the next pass.
    if (shares_of(*ledger, inst.profile) > 0 && ctx.mps != nullptr)
      if (auto closed = close_mps_daemon(ctx, inst.mig_uuid); !closed) {
        result.problems.push_back(fmt::format("{}: closing its MPS daemon: {}", what_of(inst), closed.error().message));
        continue;
      }
    // The job's user loses the instance first: nothing of theirs may open it while it is scrubbed,
    // kept idle for someone else, or waits to be destroyed.
    auto revoked = ctx.access ? ctx.access->revoke(inst) : Result<void>{};
    if (inst.state == InstanceState::destroying) {
      if (!revoked) result.problems.push_back(fmt::format("{}: taking it back from its user: {}", what_of(inst), revoked.error().message));
      to_destroy.push_back(&inst);
      continue;
    }
    if (!revoked) {
      ctx.log(fmt::format("vgpu: epilog: {}: cannot take it back from its last user: {}; QUARANTINED, never handed "
                          "out again until an admin releases it", what_of(inst), revoked.error().message));
      scrubbed[key_of(inst)] = InstanceState::quarantined;
      continue;
    }
    const auto scrub_started = std::chrono::steady_clock::now();
    ScrubOutcome s = ctx.scrubber->scrub(inst.mig_uuid);
    crash_point("release.after_scrub");
    scrub_runs.push_back({std::chrono::duration<double>(std::chrono::steady_clock::now() - scrub_started).count(),
                          scrub_outcome_name(s.status)});
    bool quarantine = s.status == ScrubStatus::failed || (s.status == ScrubStatus::unavailable && required);
    if (quarantine) {
      ctx.log(fmt::format("vgpu: epilog: {}: scrub {}: {}; QUARANTINED, never handed out again until an admin "
                          "releases it", what_of(inst), s.status == ScrubStatus::failed ? "failed" : "unavailable", s.detail));
      scrubbed[key_of(inst)] = InstanceState::quarantined;
      continue;
    }
    if (s.status == ScrubStatus::unavailable) {
      ctx.log(fmt::format("vgpu: epilog: {}: scrub unavailable ({}); policy says optional, destroying", what_of(inst),
                          s.detail));
      scrubbed[key_of(inst)] = InstanceState::destroying;
      to_destroy.push_back(&inst);
      continue;
    }
    scrubbed[key_of(inst)] = InstanceState::idle;  // destroyed instead if its slot is gone (below)
  }
  // Metrics only: a tally that cannot be written costs a log line, never the release.
  if (auto tallied = tally_scrubs(ctx, scrub_runs); !tallied)
    ctx.log(fmt::format("vgpu: node {}: scrub tally: {}", ctx.node, tallied.error().message));
  std::vector<InstanceKey> unbacked;  // scrubbed, but no slot to keep them for: destroyed
  if (!scrubbed.empty()) {
    auto marked = update_for_job(ctx, [&](Ledger& l) -> Result<void> {
      unbacked.clear();
      const auto backing = slot_backings(l);
      auto backs_a_slot = [&](std::size_t index) { return std::ranges::find(backing, index) != backing.end(); };
      for (const auto& [at, state] : scrubbed) {
        if (state == InstanceState::quarantined) {
          if (auto ok = quarantine_instance(l, at.first, at.second); !ok && ok.error().code != ErrorCode::not_found)
            return ok;
          continue;
        }
        for (std::size_t i = 0; i < l.instances.size(); ++i) {
          auto& inst = l.instances[i];
          if (key_of(inst) != at || inst.job) continue;
          inst.state = state;
          if (state == InstanceState::idle && !backs_a_slot(i)) {
            inst.state = InstanceState::destroying;
            unbacked.push_back(at);
          }
        }
      }
      return {};
    });
    if (!marked) {
      // Unrecorded outcomes: those instances stay in scrubbing and the next pass scrubs them again.
      result.problems.push_back(fmt::format("recording {} scrub outcome(s): {}", scrubbed.size(), marked.error().message));
      std::erase_if(to_destroy, [&](const LedgerInstance* inst) { return scrubbed.contains(key_of(*inst)); });
    } else {
      result.quarantined += static_cast<int>(std::ranges::count(scrubbed | std::views::values, InstanceState::quarantined));
      result.kept += static_cast<int>(std::ranges::count(scrubbed | std::views::values, InstanceState::idle)) -
                     static_cast<int>(unbacked.size());
      for (const auto& inst : ledger->instances)
        if (std::ranges::find(unbacked, key_of(inst)) != unbacked.end()) to_destroy.push_back(&inst);
    }
  }
  if (to_destroy.empty()) return result;

  NodeLock hardware(hardware_lock_path(ctx));
  if (!hardware.held()) {
    result.problems.push_back(fmt::format("cannot take {}", hardware_lock_path(ctx)));
    return result;
  }
  std::vector<InstanceKey> gone;
  for (const auto* inst : to_destroy) {
    auto destroyed = ctx.backend->destroy_instance(inst->gpu, inst->gpu_instance_id);
    if (!destroyed && destroyed.error().code != ErrorCode::not_found) {
      result.problems.push_back(fmt::format("{}: destroy: {}", what_of(*inst), destroyed.error().message));
      continue;
    }
    crash_point("release.after_destroy");
    gone.push_back(key_of(*inst));
  }
  if (gone.empty()) return result;
  auto removed = update_for_job(ctx, [&](Ledger& l) -> Result<void> {
    for (const auto& [gpu, gi] : gone)
      if (auto ok = remove_instance(l, gpu, gi); !ok) return ok;
    return {};
  });
  if (!removed) {
    result.problems.push_back(fmt::format("removing {} destroyed instance(s) from the ledger: {}", gone.size(),
                                          removed.error().message));
    return result;
  }
  crash_point("release.after_ledger_remove");
  result.destroyed += static_cast<int>(gone.size());
  return result;
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
    auto it = std::ranges::find_if(ledger->instances, [&](const LedgerInstance& inst) {
      return key_of(inst) == own[i] && is_released(inst);
    });
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

Result<EpilogResult> finish_released_instances(NodeContext& ctx, const ReleasePass& pass) {
  std::vector<InstanceKey> busy;
  auto result = work_released(ctx, pass.held, busy);
  if (!result || !pass.wait_for_others || busy.empty()) return result;
  // Waits holding no cleanup lock, one instance at a time, so no two passes wait for each other.
  for (const auto& [gpu, gi] : busy) NodeLock wait_for_holder(cleanup_lock_path(ctx, gpu, gi));
  // A holder that died left its instance released: finish it here.
  std::vector<InstanceKey> still_busy;
  auto rest = work_released(ctx, {}, still_busy);
  if (!rest) return rest;
  result->destroyed += rest->destroyed;
  result->quarantined += rest->quarantined;
  result->kept += rest->kept;
  for (auto& p : rest->problems) result->problems.push_back(std::move(p));
  return result;
}

Result<EpilogResult> finish_handed_off_instances(NodeContext& ctx, const std::vector<HeldCleanup>& held) {
  std::vector<InstanceKey> mine;
  std::vector<std::string> problems;
  for (const auto& h : held) {
    // Only a descriptor of that very lock file that holds its lock (flock on the holding open
    // file succeeds at once) counts as held; anything else is worked as any other pass would.
    const auto path = cleanup_lock_path(ctx, h.gpu, h.gpu_instance_id);
    struct stat by_fd {}, by_path {};
    const bool same_file = ::fstat(h.lock_fd, &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 &&
                           by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
    if (same_file && ::flock(h.lock_fd, LOCK_EX | LOCK_NB) == 0) mine.emplace_back(h.gpu, h.gpu_instance_id);
    else problems.push_back(fmt::format("descriptor {} does not hold {}", h.lock_fd, path));
  }
  auto result = finish_released_instances(ctx, {.held = mine, .wait_for_others = false});
  if (result) result->problems.insert(result->problems.begin(), problems.begin(), problems.end());
  return result;
}

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
    else access_problems.push_back(fmt::format("cannot take {} to take shared instances back", access_lock_path(ctx)));
  }
  auto retired = update_for_job(ctx, [&](Ledger& l) -> Result<void> {
    owned = retire_job(l, job, ctx.now(), end_reason);
    // A share's last holder retires the instance as retire_job does; finish_released_instances
    // closes its MPS daemon before the scrub.
    const auto shares = release_shares(l, job, ctx.now(), end_reason);
    owned += static_cast<int>(std::ranges::count_if(shares, [](const ReleasedShare& r) { return r.last && r.on_instance; }));
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
    ctx.log(fmt::format("{}: {} instance(s) released, {} handed to a cleanup process{}", where, owned, handed, problems));
  else
    ctx.log(fmt::format("{}: {} instance(s) released, {} kept idle, {} destroyed, {} quarantined{}", where, owned,
                        result->kept, result->destroyed, result->quarantined, problems));
  return result;
}

}  // namespace vgpu
