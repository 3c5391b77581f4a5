// The Prolog's flow (vgpu-prolog; slurm.conf PrologFlags=Alloc): check the job against the policy,
// claim the planned slots Slurm allocated, create the instances at exactly those placements, write
// the job record the plugin turns into CUDA_VISIBLE_DEVICES, start the job's viz VM.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/core/gres_request.h"
#include "vgpu/node/context.h"

namespace vgpu {

// VGPU_ALLOC as the prolog should use it. From Slurm 23.11 slurmctld loads gres/vgpu only when a
// node first registers after it started; a job it schedules before that gets no VGPU_ALLOC in its
// prolog although it holds vgpu here (seen on 26.05 right after a slurmctld restart). So when
// VGPU_ALLOC is empty for a job of a partition the policy gives vgpu, the job's own per-node request
// is asked from Slurm (squeue: fields Slurm formats, no user-chosen text). Empty: not a vgpu job.
Result<std::string> vgpu_alloc_for_prolog(const PolicyFile& policy, SlurmClient& slurm, JobId job,
                                          std::string_view partition, std::string_view vgpu_alloc_env);

struct PrologRequest {
  JobId job = 0;
  std::string user;
  std::string partition;
  std::string alloc;  // VGPU_ALLOC: "1g.10gb:2,3g.40gb:1"
  // SLURM_JOB_UID: who may open the job's instances. A node that confines instances
  // (NodeContext::access) refuses a job without it.
  std::optional<unsigned> uid;
};
struct PrologResult {
  std::vector<LedgerInstance> instances;  // the job's instances on this node
  bool rejected = false;                  // the job was cancelled with a reason
  bool requeued = false;                  // no room here after all: the job went back to the queue
  std::string reason;
  std::string cancel_class;  // when rejected: one of contract::kCancelClasses
};
// Never an exception; an error means the node could not act at all (the caller logs it and still
// exits 0: a failing Prolog would drain the node).
Result<PrologResult> run_prolog(NodeContext& ctx, const PrologRequest& request);

// Viz sessions of a job: every viz pool the job was given must belong to its partition and be
// asked for once; the VM is recorded in the ledger before it is started. An empty string: started
// (or none asked); otherwise why the job must be cancelled.
Result<std::string> start_viz_sessions(NodeContext& ctx, const PrologRequest& request,
                                       const std::vector<GresRequest>& viz);

}  // namespace vgpu
