// The prolog's first phase: whether the node may serve the job at all, before it claims anything.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "node_model.h"
#include "prolog_run.h"
#include "vgpu/contract/alloc_codec.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/node_state.h"

namespace vgpu::node::prolog {
namespace {

// Instances and shares: a share counts as one toward the partition's per-user limit.
int held_by_user(const Ledger& ledger, const std::string& user, JobId except) {
  int n = 0;
  for (const auto& inst : ledger.instances)
    if (inst.job && *inst.job != except && inst.user == user) ++n;
  for (const auto& group : ledger.share_groups)
    n += static_cast<int>(
        std::ranges::count_if(group.holders, [&](const ShareHolder& h) { return h.job != except && h.user == user; }));
  return n;
}

// What the job holds on this node, type -> count: its claimed slots, its live instances and its
// shares. A prolog run again for the job (after a crash) asks for exactly this; one that asks for
// anything else must not change it.
std::map<std::string, int> held_by_job(const Ledger& l, JobId job) {
  std::map<std::string, int> held;
  for (const auto& s : l.plan.slots)
    if (s.claimed_by_job == job) ++held[s.profile];
  for (const auto& i : l.instances)
    if (i.job == job && (i.state == InstanceState::creating || i.state == InstanceState::ready)) ++held[i.profile];
  for (const auto& g : l.share_groups)
    held[g.type] +=
        static_cast<int>(std::ranges::count_if(g.holders, [&](const ShareHolder& h) { return h.job == job; }));
  std::erase_if(held, [](const auto& entry) { return entry.second == 0; });
  return held;
}

std::map<std::string, int> asked_by(const std::vector<GresRequest>& requests) {
  std::map<std::string, int> asked;
  for (const auto& r : requests) asked[r.type] += r.count;
  return asked;
}

std::string counts_text(const std::map<std::string, int>& counts) {
  std::string out;
  for (const auto& [type, n] : counts) out = contract::append_alloc_item(out, type, static_cast<std::uint64_t>(n));
  return out;
}

// The user's name goes into the ledger and its history as it is: one the ledger's own reader
// would refuse would set the whole ledger aside at the next load (contract/names.h). Splits what
// was allocated into instances and viz pools.
Ending check_user_and_alloc(Run& run, JobWork& work) {
  if (auto problem = contract::record_text_problem(run.req.user); !problem.empty())
    return run.reject("policy", fmt::format("user name '{}' {}: the node cannot record it",
                                            contract::printable(run.req.user), problem));
  auto alloc = parse_vgpu_alloc(run.req.alloc);
  if (!alloc) return run.reject("policy", alloc.error().message);
  for (const auto& r : *alloc) (node::is_viz_pool(*run.ctx.policy, r.type) ? work.viz : work.mig).push_back(r);
  return std::nullopt;
}

// A viz-only job: its VM, and a job record with no instances so its steps see no GPU.
Result<PrologResult> serve_viz_only(Run& run, const JobWork& work) {
  auto refused = start_viz_sessions(run.ctx, run.req, work.viz);
  if (!refused) return std::unexpected(refused.error());
  if (!refused->empty()) return run.reject("policy", *refused);
  if (!work.viz.empty())
    if (auto ok = write_job_record(run.ctx, contract::JobRecord{run.req.job, {}, ""}); !ok)
      return std::unexpected(ok.error().within(run.where));
  return run.result;
}

// The partition's limits: each type's, the per-job cap over every type, and the per-user cap.
Ending check_limits(Run& run, const JobWork& work, const GpuModel& model) {
  const auto& part = *work.part;
  std::vector<std::string> violations;
  for (const auto& r : work.mig)
    if (auto ok = validate_request(part, model, r.type, r.count); !ok) violations.push_back(ok.error().message);
  const int asked =
      std::accumulate(work.mig.begin(), work.mig.end(), 0, [](int s, const GresRequest& r) { return s + r.count; });
  // The per-job cap counts every instance of the job, whatever their types (validate_request above
  // holds each type to it alone).
  if (part.max_instances_per_job && work.mig.size() > 1 && asked > *part.max_instances_per_job)
    violations.push_back(fmt::format("partition {}: {} instances requested across {} types, at most {} per job",
                                     part.name, asked, work.mig.size(), *part.max_instances_per_job));
  if (part.max_instances_per_user) {
    int held = held_by_user(work.ledger, run.req.user, run.req.job);
    if (held + asked > *part.max_instances_per_user)
      violations.push_back(
          fmt::format("user {} holds {} instance(s) on {} and asks for {}; partition {} allows {} per user",
                      run.req.user, held, run.ctx.node, asked, part.name, *part.max_instances_per_user));
  }
  if (violations.empty()) return std::nullopt;
  std::string joined;
  for (const auto& v : violations) joined += (joined.empty() ? "" : "; ") + v;
  return run.reject("policy", joined);
}

}  // namespace

Ending check_request(Run& run, JobWork& work) {
  if (auto end = check_user_and_alloc(run, work)) return end;
  if (work.mig.empty()) return serve_viz_only(run, work);
  work.part = run.ctx.policy->partition(run.req.partition);
  if (!work.part) return run.reject("policy", fmt::format("partition {}: no vgpu policy for it", run.req.partition));
  auto ledger = ensure_ledger(run.ctx);
  if (!ledger) return std::unexpected(ledger.error().within(run.where));
  if (ledger->gpus.empty()) return run.reject("node", fmt::format("node {} has no MIG-capable GPU", run.ctx.node));
  work.ledger = std::move(*ledger);
  auto model = node::model_of(work.ledger, work.ledger.gpus.front().index);
  if (!model) return std::unexpected(model.error().within(run.where));
  // A prolog for a job that already holds something here is a re-run: it may finish what the job
  // holds, never change it. One asking for something else (not what slurmd runs) is left as it is.
  if (auto held = held_by_job(work.ledger, run.req.job); !held.empty() && held != asked_by(work.mig)) {
    for (const auto* inst : instances_of_job(work.ledger, run.req.job)) run.result.instances.push_back(*inst);
    run.result.reason =
        fmt::format("vgpu: prolog: job {} already holds {} on node {}; a prolog asking for {} changes nothing",
                    run.req.job, counts_text(held), run.ctx.node, counts_text(asked_by(work.mig)));
    run.ctx.log(run.result.reason);
    return run.result;
  }
  return check_limits(run, work, **model);
}

}  // namespace vgpu::node::prolog
