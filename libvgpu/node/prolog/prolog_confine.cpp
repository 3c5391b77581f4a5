// The prolog's last phases: the job's instances given to its user alone, then the job record the
// plugin turns into the job's environment, then the job's viz VM.
#include <fmt/format.h>

#include "prolog_run.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/node/node_state.h"

namespace vgpu::node::prolog {

// Only the job's user can open its instances, before the plugin names them to any step. Under
// the access lock, which the planner's sweep of unheld capability files holds from reading the
// ledger to its last change: the instances are the job's in the ledger already, so a sweep either
// finished before this grant or sees them held. A refusal leaves them recorded as the job's, so
// the epilog takes them back and scrubs them. The hardware lock is let go here too.
Ending confine_to_user(Run& run, JobWork& work) {
  auto& ctx = run.ctx;
  if (ctx.access) {
    NodeLock access(access_lock_path(ctx));
    if (!access.held()) return fail(ErrorCode::io, fmt::format("{}: cannot take {}", run.where, access_lock_path(ctx)));
    if (!run.req.uid)
      return run.reject(
          "confinement",
          fmt::format("node {}: no SLURM_JOB_UID, so its instances cannot be given to its user", ctx.node));
    // Creating can bring devices no job holds into being (an AMD mode switch makes all of the
    // mode's partitions at once, with the distribution's permissions): root's alone before
    // anything is granted, not a planner round later.
    if (work.created_any)
      if (auto secured = ctx.access->secure_unheld(work.ledger); !secured)
        return run.reject("confinement", fmt::format("node {}: securing the devices no job holds: {}", ctx.node,
                                                     secured.error().message));
    for (const auto& inst : run.result.instances)
      if (auto granted = ctx.access->grant(inst, *run.req.uid); !granted)
        return run.reject("confinement",
                          fmt::format("node {}: GPU {} {}@{}: giving the instance to uid {}: {}", ctx.node, inst.gpu,
                                      inst.profile, inst.placement.start, *run.req.uid, granted.error().message));
  }
  work.hardware.reset();
  return std::nullopt;
}

// The record (and so the job's environment) says what the job got: model, a class's hardware
// profile, memory and compute share. A MIG-backed viz VM needs the job's instances first.
Result<PrologResult> write_record_and_start_viz(Run& run, JobWork& work) {
  auto record = job_record_of(work.ledger, run.req.job, run.result.instances);
  if (!record) return std::unexpected(record.error().within(run.where));
  if (auto ok = write_job_record(run.ctx, *record); !ok) return std::unexpected(ok.error().within(run.where));
  crash_point("prolog.after_job_record");
  auto refused = start_viz_sessions(run.ctx, run.req, work.viz);
  if (!refused) return std::unexpected(refused.error().within(run.where));
  if (!refused->empty()) return run.reject("policy", *refused);
  std::string uuids;
  for (const auto& i : run.result.instances) uuids += (uuids.empty() ? "" : ",") + i.profile + "=" + i.mig_uuid;
  run.ctx.log(fmt::format("{}: user {}: ready: {}", run.where, run.req.user, uuids));
  return run.result;
}

}  // namespace vgpu::node::prolog
