// The prolog's create-and-record: the job's instances made (or adopted) at its claimed placements
// and recorded, as one step for the planner's reconcile (node_lock.h). The claim is durable, so
// the instances are recorded together in one write: one that a crash leaves unrecorded sits at a
// placement this job claimed, and the rerun adopts it. A job whose claim took an idle instance for
// every slot creates nothing and takes no hardware lock, so it never waits behind a create of the
// planner's (seconds on a real GPU).
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "node_model.h"
#include "prolog_run.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/node/node_state.h"

namespace vgpu::node::prolog {
namespace {

struct Creation {
  std::vector<LedgerInstance> made;
  std::vector<std::pair<int, int>> adopted;  // idle instances the job takes: GPU, GPU-instance id
};

// Records what exists so far: also before a refusal, so the epilog releases it. Idle instances
// are taken in the same write: one durable write for the whole job.
Result<Ledger> record_made(const Run& run, const Creation& c) {
  return update_for_job(run.ctx, [&](Ledger& l) -> Result<void> {
    for (const auto& [gpu, gi] : c.adopted)
      if (auto ok = adopt_idle_instance(l, gpu, gi, run.req.job, run.req.user, run.ctx.now()); !ok) return ok;
    for (const auto& inst : c.made)
      if (auto ok = add_instance(l, inst); !ok) return ok;
    return {};
  });
}

void record_made_or_log(const Run& run, const Creation& c) {
  if (auto recorded = record_made(run, c); !recorded)
    run.ctx.log(fmt::format("{}: recording the instances made so far: {}", run.where, recorded.error().message));
}

Result<PrologResult> reject_after_create(Run& run, const Creation& c, std::string reason) {
  record_made_or_log(run, c);
  return run.reject("hardware", std::move(reason));
}

// Adopts an instance a crashed earlier run created at this placement but never recorded. A GPU
// instance it left without a compute instance (killed between the two creates) is destroyed and
// made again: the placement is claimed by this job, so nothing else can own it.
Ending adopt_unrecorded(Run& run, const JobWork& work, const Creation& c, const PlanSlot& slot, const Profile& profile,
                        std::optional<InstanceInfo>& info) {
  auto listed = run.ctx.backend->list_instances(slot.gpu);
  if (!listed) return std::nullopt;
  for (const auto& hw : *listed) {
    bool known = std::ranges::any_of(work.ledger.instances, [&](const LedgerInstance& li) {
      return li.gpu == slot.gpu && li.gpu_instance_id == hw.gi_id;
    });
    if (known || hw.placement != slot.placement || hw.profile_id != profile.nvml_profile_id) continue;
    if (hw.ci_id) {
      info = hw;
    } else if (auto gone = run.ctx.backend->destroy_instance(slot.gpu, hw.gi_id); !gone) {
      return reject_after_create(
          run, c,
          fmt::format("node {}: GPU {}: GPU instance {} at slice {} has no compute instance "
                      "and could not be destroyed: {}",
                      run.ctx.node, slot.gpu, hw.gi_id, slot.placement.start, gone.error().message));
    } else {
      run.ctx.log(fmt::format("{}: GPU {}: destroyed GPU instance {} at slice {}: it had no compute instance",
                              run.where, slot.gpu, hw.gi_id, slot.placement.start));
    }
  }
  return std::nullopt;
}

// The device is in use by something no ledger knows (a process that outlived its job, a tool run
// by hand): the job is valid and goes back to the queue; what was made is recorded for its epilog
// to release.
Ending create_at(Run& run, JobWork& work, const Creation& c, const PlanSlot& slot, const Profile& profile,
                 std::optional<InstanceInfo>& info) {
  auto created = run.ctx.backend->create_instance(slot.gpu, profile.nvml_profile_id, slot.placement);
  const auto what = [&] {
    return fmt::format("node {}: GPU {}: creating {} at slice {}: {}", run.ctx.node, slot.gpu, slot.profile,
                       slot.placement.start, created.error().message);
  };
  if (!created && created.error().code == ErrorCode::conflict) {
    record_made_or_log(run, c);
    return run.no_room(what(), "the device is in use outside any job; the job runs once it is free");
  }
  if (!created) return reject_after_create(run, c, what());
  work.created_any = true;
  info = *created;
  return std::nullopt;
}

Ending make_for_slot(Run& run, JobWork& work, Creation& c, const PlanSlot& slot) {
  auto gpu_model = node::model_of(work.ledger, slot.gpu);
  if (!gpu_model) return std::unexpected(gpu_model.error().within(run.where));
  const Profile* profile = (*gpu_model)->find_profile(slot.profile);
  std::optional<InstanceInfo> info;
  if (auto end = adopt_unrecorded(run, work, c, slot, *profile, info)) return end;
  if (!info)
    if (auto end = create_at(run, work, c, slot, *profile, info)) return end;
  crash_point("prolog.after_create");
  LedgerInstance inst = instance_made_at(slot, *info, run.ctx.now());
  inst.job = run.req.job;
  inst.user = run.req.user;
  inst.state = InstanceState::ready;
  c.made.push_back(std::move(inst));
  return std::nullopt;
}

// While this prolog waited for the lock, the planner may have prepared an instance in a slot it
// claimed (it creates under this lock): read again, so that one is adopted, not made twice.
Ending lock_hardware_if_creating(Run& run, JobWork& work) {
  const bool has_open_claims =
      std::ranges::any_of(work.ledger.plan.slots, [&](const PlanSlot& s) { return s.claimed_by_job == run.req.job; });
  if (!has_open_claims) return std::nullopt;
  work.hardware.emplace(hardware_lock_path(run.ctx));
  if (!work.hardware->held())
    return fail(ErrorCode::io, fmt::format("{}: cannot take {}", run.where, hardware_lock_path(run.ctx)));
  auto reread = run.ctx.ledger->load();
  if (!reread) return std::unexpected(reread.error().within(run.where));
  work.ledger = std::move(*reread);
  return std::nullopt;
}

}  // namespace

Ending create_and_record(Run& run, JobWork& work) {
  if (auto end = lock_hardware_if_creating(run, work)) return end;
  Creation c;
  const auto idle = idle_backings(work.ledger);
  for (std::size_t slot_index = 0; slot_index < work.ledger.plan.slots.size(); ++slot_index) {
    const auto& slot = work.ledger.plan.slots[slot_index];
    if (slot.claimed_by_job != run.req.job) continue;
    // Nothing to create: a scrubbed instance already stands there (an epilog kept it). Only the
    // planner turns an idle instance into a destroying one, and never one whose slot is claimed.
    if (idle[slot_index]) {
      const auto& inst = work.ledger.instances[*idle[slot_index]];
      c.adopted.emplace_back(inst.gpu, inst.gpu_instance_id);
      continue;
    }
    if (auto end = make_for_slot(run, work, c, slot)) return end;
  }
  if (!c.made.empty() || !c.adopted.empty()) {
    auto recorded = record_made(run, c);
    if (!recorded) return std::unexpected(recorded.error().within(run.where));
    work.ledger = std::move(*recorded);
  }
  crash_point("prolog.after_record_instance");
  for (const auto* inst : instances_of_job(work.ledger, run.req.job)) run.result.instances.push_back(*inst);
  return std::nullopt;
}

}  // namespace vgpu::node::prolog
