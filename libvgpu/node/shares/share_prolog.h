// The prolog of a job that holds a share of a shared instance (private to libvgpu/node; the
// design is docs/shared-instances.md). run_prolog() hands such a job here once the policy checks
// passed; this file owns the order of the steps and their crash points.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "vgpu/core/gres_request.h"
#include "vgpu/node/context.h"
#include "vgpu/node/prolog.h"

namespace vgpu::node {

// How run_prolog() ends a job it will not start: cancel it (`why` is one of
// contract::kCancelClasses) or send it back to the queue (no room here after all).
struct PrologEndings {
  std::function<Result<PrologResult>(std::string_view why, std::string reason)> reject;
  std::function<Result<PrologResult>(std::string reason)> no_room;
};

// Whether `type` is a share type on this node's GPUs.
bool is_share_type(const Ledger& ledger, std::string_view type);

// Takes one share of `request.type` for the job (joining an instance of the same user's with
// room, else an unheld slot), makes the instance where there is none yet, starts or re-opens its
// MPS control daemon with each share's limits, gives the instance to the job's user and writes
// the job record with the daemon's pipe directory. Idempotent: a rerun after a crash takes
// nothing twice, adopts the instance a crashed run made but did not record, and re-opens the
// daemon (which keeps a running one).
Result<PrologResult> run_share_prolog(NodeContext& ctx, const PrologRequest& req, const PartitionPolicy& part,
                                      const GresRequest& request, const PrologEndings& end);

}  // namespace vgpu::node
