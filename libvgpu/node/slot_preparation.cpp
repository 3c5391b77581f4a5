#include "slot_preparation.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "node_lock.h"
#include "node_model.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/node_state.h"

namespace vgpu::node {
namespace {

// The first unclaimed slot with no instance on its place, on a GPU whose instances we create.
// None while a job holds a claim not yet made into an instance: its prolog is creating, or waits
// for the hardware lock, and flock is not fair, so it gets the lock before the next create.
std::optional<PlanSlot> next_unprepared(const Ledger& l) {
  if (std::ranges::any_of(l.plan.slots, [&](const PlanSlot& s) { return slot_is_held(l, s); })) return std::nullopt;
  const auto backing = slot_backings(l);
  for (std::size_t s = 0; s < l.plan.slots.size(); ++s) {
    const auto& slot = l.plan.slots[s];
    // A share type's instance is made by its first share's prolog, with its MPS daemon.
    if (backing[s] || exists_with_gpu_mode(l, Catalog::builtin(), slot.gpu, slot.profile) ||
        shares_of(l, slot.profile) > 0)
      continue;
    return slot;
  }
  return std::nullopt;
}

}  // namespace

Preparation prepare_slots(NodeContext& ctx, std::chrono::milliseconds budget) {
  Preparation out;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ctx.serve_waiting_hooks) ctx.serve_waiting_hooks();  // no lock held: a prolog goes first
    if (ctx.stop_requested()) {
      out.notes.push_back("stopping: slots left unprepared for the next start");
      break;
    }
    // Create and record as one step for the reconcile (node_lock.h); a crash between the two
    // leaves an instance nobody recorded, which the next round's reconcile destroys (unclaimed
    // place) or the claiming job's prolog adopts (it lists the hardware at its claimed places).
    NodeLock hardware(hardware_lock_path(ctx));
    if (!hardware.held()) {
      out.notes.push_back("preparing slots: cannot take " + hardware_lock_path(ctx));
      break;
    }
    auto ledger = ctx.ledger->load();
    if (!ledger) {
      out.notes.push_back("preparing slots: " + ledger.error().message);
      break;
    }
    auto slot = next_unprepared(*ledger);
    if (!slot) break;
    const std::string what =
        fmt::format("preparing {} at slice {} on GPU {}", slot->profile, slot->placement.start, slot->gpu);
    auto model = model_of(*ledger, slot->gpu);
    const Profile* profile = model ? (*model)->find_profile(slot->profile) : nullptr;
    if (!profile) {
      out.notes.push_back(
          fmt::format("{}: {}", what, model ? "not a profile of the GPU's model" : model.error().message));
      break;
    }
    auto created = ctx.backend->create_instance(slot->gpu, profile->nvml_profile_id, slot->placement);
    if (!created) {
      out.notes.push_back(fmt::format("{}: {}", what, created.error().message));
      break;
    }
    crash_point("planner.after_prepare_create");
    // Idle: never used, so nothing to scrub before its first job.
    const LedgerInstance inst = instance_made_at(*slot, *created, ctx.now());
    // A job may have claimed the slot since the load above (claims take no hardware lock): the
    // instance then backs the claimed slot, and that job's prolog, waiting for this lock, adopts it.
    auto recorded = ctx.ledger->update([&](Ledger& l) { return add_instance(l, inst); });
    if (!recorded) {
      auto gone = ctx.backend->destroy_instance(inst.gpu, inst.gpu_instance_id);
      out.notes.push_back(fmt::format("{}: recording it: {}; {}", what, recorded.error().message,
                                      gone ? "destroyed it" : "could not destroy it: " + gone.error().message));
      break;
    }
    ++out.created;
  }
  return out;
}

}  // namespace vgpu::node
