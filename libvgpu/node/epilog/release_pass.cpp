// The release pass: scrub and destroy every released instance. Instances in `scrubbing` and
// `destroying` are a work queue that any epilog, prolog or planner round finishes, one process per
// instance at a time under that instance's cleanup lock, so work left by a crashed epilog is never
// lost and the scrubs of different jobs run at the same time.
//
// A pass scrubs the released instances it holds the cleanup locks of (those the caller holds, and
// those whose lock it takes here), and destroys those in destroying. A scrubbed instance that still
// backs its plan slot is kept, idle, for the next job of its profile: on real hardware creating an
// instance takes seconds and destroying one a good part of a second, both on a job's way to its
// first command. Only a real scrub earns that: an instance whose scrub was unavailable (policy
// "optional") is destroyed. At most two ledger writes however many instances: the scrub outcomes
// (idle, destroying or quarantined) once every scrub is done, then the removals once every destroy
// is done. A crash in between repeats work, never skips it: an instance still marked scrubbing is
// scrubbed again, one marked destroying but already gone is taken as destroyed (not_found).
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <ranges>
#include <vector>

#include "epilog/release_pass.h"
#include "node_lock.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/hook_tally_store.h"
#include "vgpu/node/node_state.h"

namespace vgpu {
namespace {

using node::epilog::InstanceKey;
using node::epilog::key_of;

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

std::string what_of(const LedgerInstance& inst) {
  return fmt::format("GPU {} {}@{} {}", inst.gpu, inst.profile, inst.placement.start, inst.mig_uuid);
}

// Under the hardware lock, as a prolog opens one (shares/share_prolog.cpp).
Result<void> close_mps_daemon(NodeContext& ctx, const std::string& device) {
  NodeLock hardware(hardware_lock_path(ctx));
  if (!hardware.held()) return fail(ErrorCode::io, fmt::format("cannot take {}", hardware_lock_path(ctx)));
  return ctx.mps->close(device);
}

// What one pass decided for the instances it works.
struct PassWork {
  std::map<InstanceKey, InstanceState> scrubbed;  // the outcome of each scrub
  std::vector<ScrubRun> scrub_runs;               // for the metrics (hook_tally_store.h)
  std::vector<const LedgerInstance*> to_destroy;
};

// The released instances this pass works: those the caller holds and those whose cleanup lock is
// free (`locks` keeps them); `busy` gets those another process works on. Never waits: a planner
// must not, and a holder may wait for ours.
std::vector<InstanceKey> lock_released(NodeContext& ctx, const Ledger& ledger, const std::vector<InstanceKey>& held,
                                       std::deque<NodeLock>& locks, std::vector<InstanceKey>& busy,
                                       EpilogResult& result) {
  std::vector<InstanceKey> mine = held;
  for (const auto& inst : ledger.instances) {
    if (!is_released(inst) || std::ranges::find(held, key_of(inst)) != held.end()) continue;
    const auto path = cleanup_lock_path(ctx, inst.gpu, inst.gpu_instance_id);
    const auto& lock = locks.emplace_back(path, LockWait::try_once);
    if (lock.held()) mine.push_back(key_of(inst));
    else if (lock.busy())
      busy.push_back(key_of(inst));
    else
      result.problems.push_back(fmt::format("{}: cannot open its cleanup lock {}", what_of(inst), path));
  }
  return mine;
}

// One released instance: its MPS daemon closed, taken from its user, then scrubbed, or queued for
// its destroy.
void scrub_one(NodeContext& ctx, const Ledger& ledger, const LedgerInstance& inst, bool required, PassWork& work,
               EpilogResult& result) {
  // A shared instance's MPS daemon goes first: its server holds the device. A daemon that will
  // not quit leaves the instance in this queue for the next pass.
  if (shares_of(ledger, inst.profile) > 0 && ctx.mps != nullptr)
    if (auto closed = close_mps_daemon(ctx, inst.mig_uuid); !closed) {
      result.problems.push_back(fmt::format("{}: closing its MPS daemon: {}", what_of(inst), closed.error().message));
      return;
    }
  // The job's user loses the instance first: nothing of theirs may open it while it is scrubbed,
  // kept idle for someone else, or waits to be destroyed.
  auto revoked = ctx.access ? ctx.access->revoke(inst) : Result<void>{};
  if (inst.state == InstanceState::destroying) {
    if (!revoked)
      result.problems.push_back(
          fmt::format("{}: taking it back from its user: {}", what_of(inst), revoked.error().message));
    work.to_destroy.push_back(&inst);
    return;
  }
  if (!revoked) {
    ctx.log(
        fmt::format("vgpu: epilog: {}: cannot take it back from its last user: {}; QUARANTINED, never handed "
                    "out again until an admin releases it",
                    what_of(inst), revoked.error().message));
    work.scrubbed[key_of(inst)] = InstanceState::quarantined;
    return;
  }
  const auto scrub_started = std::chrono::steady_clock::now();
  ScrubOutcome s = ctx.scrubber->scrub(inst.mig_uuid);
  crash_point("release.after_scrub");
  work.scrub_runs.push_back({std::chrono::duration<double>(std::chrono::steady_clock::now() - scrub_started).count(),
                             scrub_outcome_name(s.status)});
  bool quarantine = s.status == ScrubStatus::failed || (s.status == ScrubStatus::unavailable && required);
  if (quarantine) {
    ctx.log(
        fmt::format("vgpu: epilog: {}: scrub {}: {}; QUARANTINED, never handed out again until an admin "
                    "releases it",
                    what_of(inst), s.status == ScrubStatus::failed ? "failed" : "unavailable", s.detail));
    work.scrubbed[key_of(inst)] = InstanceState::quarantined;
    return;
  }
  if (s.status == ScrubStatus::unavailable) {
    ctx.log(fmt::format("vgpu: epilog: {}: scrub unavailable ({}); policy says optional, destroying", what_of(inst),
                        s.detail));
    work.scrubbed[key_of(inst)] = InstanceState::destroying;
    work.to_destroy.push_back(&inst);
    return;
  }
  work.scrubbed[key_of(inst)] = InstanceState::idle;  // destroyed instead if its slot is gone (record_outcomes)
}

// The scrubs' outcomes in one ledger write; a scrubbed instance with no slot to keep it for is
// destroyed.
void record_outcomes(NodeContext& ctx, const Ledger& ledger, PassWork& work, EpilogResult& result) {
  std::vector<InstanceKey> unbacked;
  auto marked = update_for_job(ctx, [&](Ledger& l) -> Result<void> {
    unbacked.clear();
    const auto backing = slot_backings(l);
    auto backs_a_slot = [&](std::size_t index) { return std::ranges::find(backing, index) != backing.end(); };
    for (const auto& [at, state] : work.scrubbed) {
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
    result.problems.push_back(
        fmt::format("recording {} scrub outcome(s): {}", work.scrubbed.size(), marked.error().message));
    std::erase_if(work.to_destroy, [&](const LedgerInstance* inst) { return work.scrubbed.contains(key_of(*inst)); });
    return;
  }
  const auto outcomes = work.scrubbed | std::views::values;
  result.quarantined += static_cast<int>(std::ranges::count(outcomes, InstanceState::quarantined));
  result.kept +=
      static_cast<int>(std::ranges::count(outcomes, InstanceState::idle)) - static_cast<int>(unbacked.size());
  for (const auto& inst : ledger.instances)
    if (std::ranges::find(unbacked, key_of(inst)) != unbacked.end()) work.to_destroy.push_back(&inst);
}

// The destroys under the hardware lock, then their removal from the ledger in one write.
void destroy_and_remove(NodeContext& ctx, const std::vector<const LedgerInstance*>& to_destroy, EpilogResult& result) {
  NodeLock hardware(hardware_lock_path(ctx));
  if (!hardware.held()) {
    result.problems.push_back(fmt::format("cannot take {}", hardware_lock_path(ctx)));
    return;
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
  if (gone.empty()) return;
  auto removed = update_for_job(ctx, [&](Ledger& l) -> Result<void> {
    for (const auto& [gpu, gi] : gone)
      if (auto ok = remove_instance(l, gpu, gi); !ok) return ok;
    return {};
  });
  if (!removed) {
    result.problems.push_back(
        fmt::format("removing {} destroyed instance(s) from the ledger: {}", gone.size(), removed.error().message));
    return;
  }
  crash_point("release.after_ledger_remove");
  result.destroyed += static_cast<int>(gone.size());
}

Result<EpilogResult> work_released(NodeContext& ctx, const std::vector<InstanceKey>& held,
                                   std::vector<InstanceKey>& busy) {
  EpilogResult result;
  auto before = ctx.ledger->load();
  if (!before) return std::unexpected(before.error());
  std::deque<NodeLock> locks;
  const auto mine = lock_released(ctx, *before, held, locks, busy, result);
  if (mine.empty()) return result;
  // Another pass may have finished one of them between the load above and its lock: work only
  // what is released still, now that the locks are held.
  auto ledger = ctx.ledger->load();
  if (!ledger) return std::unexpected(ledger.error());
  const bool required = scrub_required(ctx);
  PassWork work;
  for (const auto& inst : ledger->instances)
    if (is_released(inst) && std::ranges::find(mine, key_of(inst)) != mine.end())
      scrub_one(ctx, *ledger, inst, required, work, result);
  // Metrics only: a tally that cannot be written costs a log line, never the release.
  if (auto tallied = tally_scrubs(ctx, work.scrub_runs); !tallied)
    ctx.log(fmt::format("vgpu: node {}: scrub tally: {}", ctx.node, tallied.error().message));
  if (!work.scrubbed.empty()) record_outcomes(ctx, *ledger, work, result);
  if (!work.to_destroy.empty()) destroy_and_remove(ctx, work.to_destroy, result);
  return result;
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
    struct stat by_fd {
    }, by_path{};
    const bool same_file = ::fstat(h.lock_fd, &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 &&
                           by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
    if (same_file && ::flock(h.lock_fd, LOCK_EX | LOCK_NB) == 0) mine.emplace_back(h.gpu, h.gpu_instance_id);
    else
      problems.push_back(fmt::format("descriptor {} does not hold {}", h.lock_fd, path));
  }
  auto result = finish_released_instances(ctx, {.held = mine, .wait_for_others = false});
  if (result) result->problems.insert(result->problems.begin(), problems.begin(), problems.end());
  return result;
}

}  // namespace vgpu
