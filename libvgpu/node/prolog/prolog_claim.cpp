// The prolog's claim: the job's slots in the plan, taken in one ledger write.
#include <fmt/format.h>

#include <algorithm>

#include "node_model.h"
#include "prolog_run.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"

namespace vgpu::node::prolog {
namespace {

// When Slurm allocated more than the plan has slots for (it should not happen: the advertisement
// never exceeds the plan), place the rest in truly free space rather than fail the job.
Result<void> claim_or_place(Ledger& l, const PartitionPolicy& part, JobId job, const GresRequest& r) {
  // Instances the job already has (a re-run after a crash) are part of what it asked for.
  int existing = static_cast<int>(
      std::ranges::count_if(l.instances, [&](const LedgerInstance& i) { return i.job == job && i.profile == r.type; }));
  if (existing >= r.count) return {};
  if (claim_slots(l, job, r.type, r.count - existing)) return {};
  int have = 0;
  for (const auto& s : l.plan.slots)
    if (s.claimed_by_job == job && s.profile == r.type) ++have;
  for (const auto& i : l.instances)
    if (i.job == job && i.profile == r.type) ++have;
  auto layouts = node::layouts_of(l, [](const PlanSlot&) { return true; });
  if (!layouts) return std::unexpected(layouts.error());
  for (int n = have; n < r.count; ++n) {
    bool placed = false;
    for (std::size_t g = 0; g < layouts->size() && !placed; ++g) {
      if (!part.allows_gpu(l.gpus[g].index)) continue;
      const Profile* p = (*layouts)[g].model().find_profile(r.type);
      if (!p) continue;
      if (auto where = (*layouts)[g].best_placement(*p)) {
        (void)(*layouts)[g].place(*p, *where);
        l.plan.slots.push_back({l.gpus[g].index, r.type, *where, job});
        placed = true;
      }
    }
    if (!placed)
      return fail(ErrorCode::no_capacity,
                  fmt::format("profile {}: {} of {} instance(s) fit in the free space", r.type, n, r.count));
  }
  return {};
}

// A slot of the job's stands where a released instance still is (it must be scrubbed and
// destroyed before the job's own can be made there).
bool claims_released_slot(const Ledger& l, JobId job) {
  const auto backing = slot_backings(l);
  for (std::size_t i = 0; i < l.plan.slots.size(); ++i)
    if (backing[i] && l.plan.slots[i].claimed_by_job == job && is_released(l.instances[*backing[i]])) return true;
  return false;
}

// Slots with an idle instance on them (kept by an epilog, or prepared ahead by the planner) are
// taken in the claim's own write: nothing to create there, so for such a job this is the
// prolog's only ledger write. Taking them needs no hardware lock: the hardware does not change,
// and only the planner ever destroys an idle instance, never one on a claimed slot. Why a claim
// failed: no room is the node's fault, not the job's.
Ending claim_once(Run& run, JobWork& work) {
  auto claimed = update_for_job(run.ctx, [&](Ledger& l) -> Result<void> {
    for (const auto& r : work.mig)
      if (auto ok = claim_or_place(l, *work.part, run.req.job, r); !ok) return ok;
    auto adopted = adopt_idle_claims(l, run.req.job, run.req.user, run.ctx.now());
    if (!adopted) return std::unexpected(adopted.error());
    return {};
  });
  if (!claimed) {
    if (claimed.error().code == ErrorCode::no_capacity)
      return run.no_room(fmt::format("node {}: {}", run.ctx.node, claimed.error().message));
    return std::unexpected(claimed.error().within(run.where));
  }
  work.ledger = std::move(*claimed);
  return std::nullopt;
}

}  // namespace

Ending claim_slots_for_job(Run& run, JobWork& work) {
  if (auto end = claim_once(run, work)) return end;
  crash_point("prolog.after_claim");
  // A backed slot (the place of a job that just ended) is free once its instance is scrubbed and
  // destroyed: finish that cleanup here, behind any epilog already at it, before creating. A
  // scrub that failed quarantines the instance and takes the slot away: claim again, elsewhere.
  if (!claims_released_slot(work.ledger, run.req.job)) return std::nullopt;
  if (auto cleaned = finish_released_instances(run.ctx, {.held = {}, .wait_for_others = true}); !cleaned)
    run.ctx.log(fmt::format("{}: finishing released instances: {}", run.where, cleaned.error().message));
  if (auto end = claim_once(run, work)) return end;
  if (claims_released_slot(work.ledger, run.req.job))
    return run.no_room(
        fmt::format("node {}: a released instance where this job's instance goes could not be "
                    "destroyed (see the node's log)",
                    run.ctx.node));
  return std::nullopt;
}

}  // namespace vgpu::node::prolog
