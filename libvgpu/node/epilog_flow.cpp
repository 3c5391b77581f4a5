// Epilog: end the job's tenancy, then scrub and destroy every released instance. Instances in
// `scrubbing`/`destroying` are a work queue that any epilog or planner round finishes, serialized
// by a node-wide cleanup lock, so work left by a crashed epilog is never lost.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "node_lock.h"
#include "node_model.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"

namespace vgpu {
namespace {

bool scrub_required(const NodeContext& ctx) {
  for (const auto* p : node_partitions(*ctx.policy, ctx.node))
    if (p->scrub == ScrubMode::required) return true;
  return false;
}

Result<void> set_state(NodeContext& ctx, int gpu, int gi, InstanceState state) {
  auto r = ctx.ledger->update([&](Ledger& l) -> Result<void> {
    for (auto& inst : l.instances)
      if (inst.gpu == gpu && inst.gpu_instance_id == gi) inst.state = state;
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return {};
}

}  // namespace

// Scrubs and destroys every ownerless instance waiting in scrubbing/destroying.
Result<EpilogResult> finish_released_instances(NodeContext& ctx) {
  EpilogResult result;
  NodeLock lock(cleanup_lock_path(ctx));
  if (!lock.held()) return fail(ErrorCode::io, fmt::format("node {}: cannot take {}", ctx.node, cleanup_lock_path(ctx)));
  auto ledger = ctx.ledger->load();
  if (!ledger) return std::unexpected(ledger.error());
  const bool required = scrub_required(ctx);
  for (const auto& inst : ledger->instances) {
    if (inst.job || (inst.state != InstanceState::scrubbing && inst.state != InstanceState::destroying)) continue;
    std::string what = fmt::format("GPU {} {}@{} {}", inst.gpu, inst.profile, inst.placement.start, inst.mig_uuid);
    if (inst.state == InstanceState::scrubbing) {
      ScrubOutcome s = ctx.scrubber->scrub(inst.mig_uuid);
      crash_point("release.after_scrub");
      bool quarantine = s.status == ScrubStatus::failed || (s.status == ScrubStatus::unavailable && required);
      if (quarantine) {
        ctx.log(fmt::format("vgpu: epilog: {}: scrub {}: {}; QUARANTINED, never handed out again until an admin "
                            "releases it", what, s.status == ScrubStatus::failed ? "failed" : "unavailable", s.detail));
        if (auto ok = set_state(ctx, inst.gpu, inst.gpu_instance_id, InstanceState::quarantined); !ok)
          result.problems.push_back(ok.error().message);
        ++result.quarantined;
        continue;
      }
      if (s.status == ScrubStatus::unavailable)
        ctx.log(fmt::format("vgpu: epilog: {}: scrub unavailable ({}); policy says optional, destroying", what, s.detail));
      if (auto ok = set_state(ctx, inst.gpu, inst.gpu_instance_id, InstanceState::destroying); !ok) {
        result.problems.push_back(ok.error().message);
        continue;
      }
    }
    NodeLock hardware(hardware_lock_path(ctx));
    if (!hardware.held()) {
      result.problems.push_back(fmt::format("{}: cannot take {}", what, hardware_lock_path(ctx)));
      continue;
    }
    auto destroyed = ctx.backend->destroy_instance(inst.gpu, inst.gpu_instance_id);
    if (!destroyed && destroyed.error().code != ErrorCode::not_found) {
      result.problems.push_back(fmt::format("{}: destroy: {}", what, destroyed.error().message));
      continue;
    }
    crash_point("release.after_destroy");
    auto removed = ctx.ledger->update([&](Ledger& l) { return remove_instance(l, inst.gpu, inst.gpu_instance_id); });
    if (!removed) {
      result.problems.push_back(fmt::format("{}: ledger: {}", what, removed.error().message));
      continue;
    }
    crash_point("release.after_ledger_remove");
    ++result.destroyed;
  }
  return result;
}

Result<EpilogResult> run_epilog(NodeContext& ctx, JobId job, const std::string& end_reason) {
  const std::string where = fmt::format("vgpu: epilog: job {}", job);
  auto ledger = ensure_ledger(ctx);
  if (!ledger) return std::unexpected(ledger.error().within(where));
  int owned = 0;
  auto retired = ctx.ledger->update([&](Ledger& l) -> Result<void> {
    owned = retire_job(l, job, ctx.now(), end_reason);
    return {};
  });
  if (!retired) return std::unexpected(retired.error().within(where));
  crash_point("epilog.after_retire");
  std::vector<std::string> viz_problems;
  stop_viz_session(ctx, job, viz_problems);
  auto result = finish_released_instances(ctx);
  crash_point("epilog.after_release");
  if (!result) return std::unexpected(result.error().within(where));
  for (auto& p : viz_problems) result->problems.push_back(std::move(p));
  std::string record = fmt::format("{}/jobs/{}.json", ctx.node_dir(), job);
  if (std::remove(record.c_str()) != 0 && errno != ENOENT)
    result->problems.push_back(fmt::format("remove {}: {}", record, std::strerror(errno)));
  ctx.log(fmt::format("{}: {} instance(s) released, {} destroyed, {} quarantined{}", where, owned, result->destroyed,
                      result->quarantined, result->problems.empty() ? "" : "; problems: " + result->problems.front()));
  return result;
}

}  // namespace vgpu
