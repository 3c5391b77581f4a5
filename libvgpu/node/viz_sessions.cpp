// Viz sessions tied to Slurm jobs: the prolog starts the job's VM, the epilog stops it, and the
// planner's round removes any VM whose job Slurm no longer runs here (ended_jobs.cpp), the same
// path that releases MIG instances an epilog left behind.
#include <fmt/format.h>

#include <algorithm>

#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

Result<void> set_vm(NodeContext& ctx, const VizVm& vm) {
  auto r = ctx.ledger->update([&](Ledger& l) -> Result<void> {
    auto it = std::ranges::find(l.vms, vm.job, &VizVm::job);
    if (it == l.vms.end()) l.vms.push_back(vm);
    else
      *it = vm;
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return {};
}

Result<void> drop_vms(NodeContext& ctx, const std::set<JobId>& jobs) {
  auto r = ctx.ledger->update([&](Ledger& l) -> Result<void> {
    std::erase_if(l.vms, [&](const VizVm& vm) { return jobs.contains(vm.job); });
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return {};
}

}  // namespace

Result<std::string> start_viz_sessions(NodeContext& ctx, const PrologRequest& req,
                                       const std::vector<GresRequest>& viz) {
  if (viz.empty()) return std::string{};
  const PartitionPolicy* part = ctx.policy->partition(req.partition);
  std::vector<std::string> problems;
  for (const auto& r : viz) {
    if (part == nullptr || part->find_viz_pool(r.type) == nullptr)
      problems.push_back(fmt::format("viz pool {} is not offered by partition {}", r.type, req.partition));
    if (r.count != 1)
      problems.push_back(fmt::format("viz pool {}: a job gets one session per node, asked for {}", r.type, r.count));
  }
  if (viz.size() > 1) problems.push_back("a job may ask for one viz pool");
  if (ctx.viz == nullptr) problems.push_back(fmt::format("node {} runs no viz sessions", ctx.node));
  if (!problems.empty()) {
    std::string joined;
    for (const auto& p : problems) joined += (joined.empty() ? "" : "; ") + p;
    return joined;
  }
  const std::string where = fmt::format("vgpu: prolog: job {}: viz pool {}", req.job, viz.front().type);
  if (auto ledger = ensure_ledger(ctx); !ledger) return std::unexpected(ledger.error().within(where));
  // In the ledger before it exists, so a crash in between leaves a record the reap finds.
  VizVm vm{req.job, fmt::format("vgpu-viz-{}", req.job), "", VmState::starting};
  if (auto ok = set_vm(ctx, vm); !ok) return std::unexpected(ok.error().within(where));
  auto started = ctx.viz->start({req.job, viz.front().type, req.user});
  if (!started) {
    (void)ctx.viz->stop(req.job);
    (void)drop_vms(ctx, {req.job});
    return fmt::format("node {}: viz pool {}: {}", ctx.node, viz.front().type, started.error().message);
  }
  vm.domain = started->domain;
  vm.device = started->device;
  vm.state = VmState::running;
  if (auto ok = set_vm(ctx, vm); !ok) return std::unexpected(ok.error().within(where));
  ctx.log(fmt::format("{}: user {}: VM {} running ({})", where, req.user, vm.domain, vm.device));
  return std::string{};
}

void stop_viz_session(NodeContext& ctx, JobId job, std::vector<std::string>& problems) {
  if (ctx.viz == nullptr) return;
  auto ledger = ctx.ledger->load();
  const bool recorded = ledger && std::ranges::any_of(ledger->vms, [&](const VizVm& vm) { return vm.job == job; });
  if (!recorded) return;  // the common case: a job without a viz session
  if (auto it = std::ranges::find(ledger->vms, job, &VizVm::job); it != ledger->vms.end()) {
    VizVm stopping = *it;
    stopping.state = VmState::stopping;
    (void)set_vm(ctx, stopping);
  }
  if (auto ok = ctx.viz->stop(job); !ok) {
    // Left as "stopping": the planner's reap retries.
    problems.push_back(fmt::format("viz VM of job {}: {}", job, ok.error().message));
    ctx.log(fmt::format("vgpu: epilog: job {}: viz VM of job {} not stopped (the planner retries): {}", job, job,
                        ok.error().message));
    return;
  }
  if (auto ok = drop_vms(ctx, {job}); !ok) problems.push_back(ok.error().message);
  ctx.log(fmt::format("vgpu: epilog: job {}: viz VM stopped", job));
}

}  // namespace vgpu
