// Prolog: check the job against the partition policy, claim planned slots for what Slurm
// allocated, create the instances at exactly those placements, and write the job record the
// plugin turns into CUDA_VISIBLE_DEVICES. Idempotent: a re-run after a crash adopts what exists.
// This file is the flow's driver and how it ends a job; each phase has a file of its own
// (prolog_run.h).
#include <fmt/format.h>

#include <algorithm>

#include "prolog_run.h"
#include "vgpu/node/node_state.h"

namespace vgpu {
namespace node::prolog {

Run::Run(NodeContext& context, const PrologRequest& request)
    : ctx(context), req(request), where(fmt::format("vgpu: prolog: job {}", request.job)) {}

Result<PrologResult> Run::reject(std::string_view why, std::string reason) {
  result.rejected = true;
  result.cancel_class = std::string(why);
  result.reason = "vgpu: " + reason;
  ctx.log(fmt::format("{}: rejected: {}", where, reason));
  if (auto r = ctx.slurm->reject_job(req.job, result.reason); !r)
    ctx.log(fmt::format("{}: could not cancel the job: {}", where, r.error().message));
  return result;
}

Result<PrologResult> Run::no_room(std::string reason, std::string_view because) {
  // A requeued job must not keep space it does not use (no write when it holds nothing).
  (void)update_for_job(ctx, [&](Ledger& l) -> Result<void> {
    release_claims(l, req.job);
    return {};
  });
  std::string why = fmt::format("vgpu: requeued: {} ({})", reason, because);
  auto requeued = ctx.slurm->requeue_job(req.job, why);
  if (!requeued)
    return reject("no_room", fmt::format("{}; could not requeue it: {}", reason, requeued.error().message));
  result.requeued = true;
  result.reason = std::move(why);
  ctx.log(fmt::format("{}: {}", where, result.reason));
  return result;
}

PrologEndings Run::endings() {
  return {[this](std::string_view why, std::string reason) { return reject(why, std::move(reason)); },
          [this](std::string reason) { return no_room(std::move(reason)); }};
}

}  // namespace node::prolog

Result<PrologResult> run_prolog(NodeContext& ctx, const PrologRequest& req) {
  using namespace node::prolog;
  Run run(ctx, req);
  JobWork work;
  if (auto end = check_request(run, work)) return *end;
  // A share of a shared instance is asked alone (the submit filter holds users to that).
  if (std::ranges::any_of(work.mig, [&](const GresRequest& r) { return node::is_share_type(work.ledger, r.type); })) {
    if (work.mig.size() != 1 || !work.viz.empty())
      return run.reject("policy", fmt::format("{}: a share of an instance is asked alone, one per node", req.alloc));
    return node::run_share_prolog(ctx, req, *work.part, work.mig.front(), run.endings());
  }
  if (auto end = claim_slots_for_job(run, work)) return *end;
  if (auto end = create_and_record(run, work)) return *end;
  if (auto end = confine_to_user(run, work)) return *end;
  return write_record_and_start_viz(run, work);
}

}  // namespace vgpu
