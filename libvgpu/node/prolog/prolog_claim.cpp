// The prolog's claim: the job's slots in the plan, taken in one ledger write.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "node_model.h"
#include "prolog_run.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/core/whole_gpu_placement.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"

namespace vgpu::node::prolog {
namespace {

// A job's whole GPUs: of one NVLink domain where the node has several, and a single one where it
// leaves free NVLink pairs whole (vgpu/core/whole_gpu_placement.h). Chosen among the unclaimed
// whole-GPU slots that are free or hold an idle instance (not one still being scrubbed) and marked
// the job's, so claim_slots finds them claimed. Without links, on a retried claim, or with too few
// such slots, claim_slots chooses as for any profile. Returns the choice.
std::optional<WholeGpuChoice> claim_linked_whole_gpus(Ledger& l, JobId job, const GresRequest& r,
                                                      const std::optional<GpuLinks>& links) {
  if (!links || r.count < 1 || !names_whole_gpu(r.type)) return std::nullopt;
  if (std::ranges::any_of(l.plan.slots,
                          [&](const PlanSlot& s) { return s.claimed_by_job == job && s.profile == r.type; }))
    return std::nullopt;
  const auto backing = slot_backings(l);
  const auto idle = idle_backings(l);
  std::map<int, PlanSlot*> slot_on;  // by GPU, ascending
  for (std::size_t i = 0; i < l.plan.slots.size(); ++i) {
    auto& s = l.plan.slots[i];
    if (s.profile == r.type && !s.claimed_by_job && (!backing[i] || idle[i])) slot_on.try_emplace(s.gpu, &s);
  }
  std::vector<int> free;
  for (const auto& [gpu, slot] : slot_on) free.push_back(gpu);
  auto choice = choose_whole_gpus(*links, free, r.count);
  if (choice)
    for (int gpu : choice->gpus) slot_on[gpu]->claimed_by_job = job;
  return choice;
}

// When Slurm allocated more than the plan has slots for (it should not happen: the advertisement
// never exceeds the plan), place the rest in truly free space rather than fail the job.
Result<void> claim_or_place(Ledger& l, const PartitionPolicy& part, JobId job, const GresRequest& r,
                            const std::optional<GpuLinks>& links, std::optional<WholeGpuChoice>& linked) {
  // Instances the job already has (a re-run after a crash) are part of what it asked for.
  int existing = static_cast<int>(
      std::ranges::count_if(l.instances, [&](const LedgerInstance& i) { return i.job == job && i.profile == r.type; }));
  if (existing >= r.count) return {};
  if (existing == 0) linked = claim_linked_whole_gpus(l, job, r, links);
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
  // Read before the ledger write, never under it: NVML answers in milliseconds, the lock is shared.
  const bool wants_whole = std::ranges::any_of(work.mig, [](const GresRequest& r) { return names_whole_gpu(r.type); });
  const auto links = wants_whole ? run.ctx.backend->gpu_links() : std::nullopt;
  std::optional<WholeGpuChoice> linked;
  auto claimed = update_for_job(run.ctx, [&](Ledger& l) -> Result<void> {
    for (const auto& r : work.mig)
      if (auto ok = claim_or_place(l, *work.part, run.req.job, r, links, linked); !ok) return ok;
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
  if (linked && linked->gpus.size() > 1)
    run.ctx.log(fmt::format("{}: whole GPUs {}: {}", run.where, fmt::join(linked->gpus, ","),
                            linked->one_nvlink_domain ? "one NVLink domain" : "no NVLink domain has that many free"));
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
