// Prolog: check the job against the partition policy, claim planned slots for what Slurm
// allocated, create the instances at exactly those placements, and write the job record the
// plugin turns into CUDA_VISIBLE_DEVICES. Idempotent: a re-run after a crash adopts what exists.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "node_lock.h"
#include "node_model.h"
#include "share_prolog.h"
#include "vgpu/contract/alloc_codec.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"
#include "vgpu/core/gres_request.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/base/text_split.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

// Instances and shares: a share counts as one toward the partition's per-user limit.
int held_by_user(const Ledger& ledger, const std::string& user, JobId except) {
  int n = 0;
  for (const auto& inst : ledger.instances)
    if (inst.job && *inst.job != except && inst.user == user) ++n;
  for (const auto& group : ledger.share_groups)
    n += static_cast<int>(std::ranges::count_if(group.holders, [&](const ShareHolder& h) {
      return h.job != except && h.user == user;
    }));
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
    held[g.type] += static_cast<int>(std::ranges::count_if(g.holders, [&](const ShareHolder& h) { return h.job == job; }));
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

// When Slurm allocated more than the plan has slots for (it should not happen: the advertisement
// never exceeds the plan), place the rest in truly free space rather than fail the job.
Result<void> claim_or_place(Ledger& l, const PartitionPolicy& part, JobId job, const GresRequest& r) {
  // Instances the job already has (a re-run after a crash) are part of what it asked for.
  int existing = static_cast<int>(std::ranges::count_if(
      l.instances, [&](const LedgerInstance& i) { return i.job == job && i.profile == r.type; }));
  if (existing >= r.count) return {};
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


}  // namespace

Result<std::string> vgpu_alloc_for_prolog(const PolicyFile& policy, SlurmClient& slurm, JobId job,
                                          std::string_view partition, std::string_view vgpu_alloc_env) {
  if (!vgpu_alloc_env.empty()) return std::string(vgpu_alloc_env);
  bool vgpu_partition = false;
  for (auto name : split_view(partition, ','))
    vgpu_partition = vgpu_partition || policy.partition(name) != nullptr;
  if (!vgpu_partition) return std::string();
  auto text = slurm.job_tres_per_node(job);
  if (!text) return std::unexpected(text.error().within(fmt::format("job {}: what it holds (squeue)", job)));
  // The last task of an array carries the array's own id, and `squeue -j <that id>` lists every
  // task of the array, one line each, spelled by its state ("vgpu:1g.20gb:3" running,
  // "gres/vgpu:1g.20gb:3" pending). Every task asks the same; lines that differ are an error.
  std::optional<std::string> alloc;
  for (auto raw : split_view(*text, '\n')) {
    std::string_view line = raw;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    std::string this_line;
    if (line != "N/A") {
      auto requests = parse_vgpu_gres(line);
      if (!requests) return std::unexpected(requests.error().within(fmt::format("job {}: squeue %b", job)));
      for (const auto& r : *requests)
        this_line = contract::append_alloc_item(this_line, r.type, static_cast<std::uint64_t>(r.count));
    }
    if (alloc && *alloc != this_line)
      return fail(ErrorCode::invalid_argument, fmt::format("job {}: squeue %b: the array's tasks differ ('{}' and '{}')",
                                                           job, *alloc, this_line));
    alloc = std::move(this_line);
  }
  return alloc.value_or(std::string());
}

Result<PrologResult> run_prolog(NodeContext& ctx, const PrologRequest& req) {
  const std::string where = fmt::format("vgpu: prolog: job {}", req.job);
  PrologResult result;
  // `why`: one of contract::kCancelClasses, for the node's metrics.
  auto reject = [&](std::string_view why, std::string reason) -> Result<PrologResult> {
    result.rejected = true;
    result.cancel_class = std::string(why);
    result.reason = "vgpu: " + reason;
    ctx.log(fmt::format("{}: rejected: {}", where, reason));
    if (auto r = ctx.slurm->reject_job(req.job, result.reason); !r)
      ctx.log(fmt::format("{}: could not cancel the job: {}", where, r.error().message));
    return result;
  };
  // A valid job Slurm started where this node has no room after all (slurmctld's view lagging the
  // node's, as right after a slurmctld restart: docs/design.md) goes back to the queue instead of
  // being cancelled; only a job Slurm will not requeue is cancelled, with both reasons.
  auto no_room = [&](std::string reason,
                     std::string_view because = "Slurm started it before the node's advertisement caught up")
      -> Result<PrologResult> {
    // A requeued job must not keep space it does not use (no write when it holds nothing).
    (void)update_for_job(ctx, [&](Ledger& l) -> Result<void> {
      release_claims(l, req.job);
      return {};
    });
    std::string why = fmt::format("vgpu: requeued: {} ({})", reason, because);
    auto requeued = ctx.slurm->requeue_job(req.job, why);
    if (!requeued) return reject("no_room", fmt::format("{}; could not requeue it: {}", reason, requeued.error().message));
    result.requeued = true;
    result.reason = std::move(why);
    ctx.log(fmt::format("{}: {}", where, result.reason));
    return result;
  };

  // The user's name goes into the ledger and its history as it is: one the ledger's own reader
  // would refuse would set the whole ledger aside at the next load (contract/names.h).
  if (auto problem = contract::record_text_problem(req.user); !problem.empty())
    return reject("policy", fmt::format("user name '{}' {}: the node cannot record it", contract::printable(req.user), problem));
  auto alloc = parse_vgpu_alloc(req.alloc);
  if (!alloc) return reject("policy", alloc.error().message);
  std::vector<GresRequest> mig, viz;
  for (const auto& r : *alloc) (node::is_viz_pool(*ctx.policy, r.type) ? viz : mig).push_back(r);
  if (mig.empty()) {
    // A viz-only job: its VM, and a job record with no instances so its steps see no GPU.
    auto refused = start_viz_sessions(ctx, req, viz);
    if (!refused) return std::unexpected(refused.error());
    if (!refused->empty()) return reject("policy", *refused);
    if (!viz.empty())
      if (auto ok = write_job_record(ctx, contract::JobRecord{req.job, {}, ""}); !ok) return std::unexpected(ok.error().within(where));
    return result;
  }

  const PartitionPolicy* part = ctx.policy->partition(req.partition);
  if (!part) return reject("policy", fmt::format("partition {}: no vgpu policy for it", req.partition));
  auto ledger = ensure_ledger(ctx);
  if (!ledger) return std::unexpected(ledger.error().within(where));
  if (ledger->gpus.empty()) return reject("node", fmt::format("node {} has no MIG-capable GPU", ctx.node));
  auto model = node::model_of(*ledger, ledger->gpus.front().index);
  if (!model) return std::unexpected(model.error().within(where));
  // A prolog for a job that already holds something here is a re-run: it may finish what the job
  // holds, never change it. One asking for something else (not what slurmd runs) is left as it is.
  if (auto held = held_by_job(*ledger, req.job); !held.empty() && held != asked_by(mig)) {
    for (const auto* inst : instances_of_job(*ledger, req.job)) result.instances.push_back(*inst);
    result.reason = fmt::format("vgpu: prolog: job {} already holds {} on node {}; a prolog asking for {} changes nothing",
                                req.job, counts_text(held), ctx.node, counts_text(asked_by(mig)));
    ctx.log(result.reason);
    return result;
  }

  std::vector<std::string> violations;
  for (const auto& r : mig)
    if (auto ok = validate_request(*part, **model, r.type, r.count); !ok) violations.push_back(ok.error().message);
  const int asked = std::accumulate(mig.begin(), mig.end(), 0, [](int s, const GresRequest& r) { return s + r.count; });
  // The per-job cap counts every instance of the job, whatever their types (validate_request above
  // holds each type to it alone).
  if (part->max_instances_per_job && mig.size() > 1 && asked > *part->max_instances_per_job)
    violations.push_back(fmt::format("partition {}: {} instances requested across {} types, at most {} per job", part->name,
                                     asked, mig.size(), *part->max_instances_per_job));
  if (part->max_instances_per_user) {
    int held = held_by_user(*ledger, req.user, req.job);
    if (held + asked > *part->max_instances_per_user)
      violations.push_back(fmt::format("user {} holds {} instance(s) on {} and asks for {}; partition {} allows {} per user",
                                       req.user, held, ctx.node, asked, part->name, *part->max_instances_per_user));
  }
  if (!violations.empty()) {
    std::string joined;
    for (const auto& v : violations) joined += (joined.empty() ? "" : "; ") + v;
    return reject("policy", joined);
  }

  // A share of a shared instance is asked alone (the submit filter holds users to that).
  if (std::ranges::any_of(mig, [&](const GresRequest& r) { return node::is_share_type(*ledger, r.type); })) {
    if (mig.size() != 1 || !viz.empty())
      return reject("policy", fmt::format("{}: a share of an instance is asked alone, one per node", req.alloc));
    return node::run_share_prolog(ctx, req, *part, mig.front(), {reject, no_room});
  }

  // Slots with an idle instance on them (kept by an epilog, or prepared ahead by the planner) are
  // taken in the claim's own write: nothing to create there, so for such a job this is the
  // prolog's only ledger write. Taking them needs no hardware lock: the hardware does not change,
  // and only the planner ever destroys an idle instance, never one on a claimed slot.
  auto claim = [&] {
    return update_for_job(ctx, [&](Ledger& l) -> Result<void> {
      for (const auto& r : mig)
        if (auto ok = claim_or_place(l, *part, req.job, r); !ok) return ok;
      auto adopted = adopt_idle_claims(l, req.job, req.user, ctx.now());
      if (!adopted) return std::unexpected(adopted.error());
      return {};
    });
  };
  // Why a claim failed: no room is the node's fault, not the job's.
  auto claim_failed = [&](const Error& e) -> Result<PrologResult> {
    if (e.code == ErrorCode::no_capacity) return no_room(fmt::format("node {}: {}", ctx.node, e.message));
    return std::unexpected(e.within(where));
  };
  auto claimed = claim();
  if (!claimed) return claim_failed(claimed.error());
  crash_point("prolog.after_claim");
  // A backed slot (the place of a job that just ended) is free once its instance is scrubbed and
  // destroyed: finish that cleanup here, behind any epilog already at it, before creating. A
  // scrub that failed quarantines the instance and takes the slot away: claim again, elsewhere.
  if (claims_released_slot(*claimed, req.job)) {
    if (auto cleaned = finish_released_instances(ctx, {.held = {}, .wait_for_others = true}); !cleaned)
      ctx.log(fmt::format("{}: finishing released instances: {}", where, cleaned.error().message));
    claimed = claim();
    if (!claimed) return claim_failed(claimed.error());
    if (claims_released_slot(*claimed, req.job))
      return no_room(fmt::format("node {}: a released instance where this job's instance goes could not be "
                                 "destroyed (see the node's log)", ctx.node));
  }

  // Create and record as one step for the planner's reconcile (node_lock.h). The claim above is
  // durable, so the instances are recorded together in one write: one that a crash leaves
  // unrecorded sits at a placement this job claimed, and the rerun adopts it (below). A job whose
  // claim took an idle instance for every slot creates nothing and takes no hardware lock, so it
  // never waits behind a create of the planner's (seconds on a real GPU).
  const auto has_open_claims = [&](const Ledger& l) {
    return std::ranges::any_of(l.plan.slots, [&](const PlanSlot& s) { return s.claimed_by_job == req.job; });
  };
  std::optional<NodeLock> hardware;
  if (has_open_claims(*claimed)) {
    hardware.emplace(hardware_lock_path(ctx));
    if (!hardware->held())
      return fail(ErrorCode::io, fmt::format("{}: cannot take {}", where, hardware_lock_path(ctx)));
    // While this prolog waited for the lock, the planner may have prepared an instance in a slot
    // it claimed (it creates under this lock): read again, so that one is adopted, not made twice.
    claimed = ctx.ledger->load();
    if (!claimed) return std::unexpected(claimed.error().within(where));
  }
  std::vector<LedgerInstance> made;
  std::vector<std::pair<int, int>> adopted;  // idle instances the job takes: GPU, GPU-instance id
  // Records what exists so far: also before a refusal, so the epilog releases it. Idle instances
  // are taken in the same write: one durable write for the whole job.
  auto record_made = [&]() -> Result<Ledger> {
    return update_for_job(ctx, [&](Ledger& l) -> Result<void> {
      for (const auto& [gpu, gi] : adopted)
        if (auto ok = adopt_idle_instance(l, gpu, gi, req.job, req.user, ctx.now()); !ok) return ok;
      for (const auto& inst : made)
        if (auto ok = add_instance(l, inst); !ok) return ok;
      return {};
    });
  };
  auto reject_after_create = [&](std::string reason) -> Result<PrologResult> {
    if (auto recorded = record_made(); !recorded)
      ctx.log(fmt::format("{}: recording the instances made so far: {}", where, recorded.error().message));
    return reject("hardware", std::move(reason));
  };
  const auto idle = idle_backings(*claimed);
  bool created_any = false;
  for (std::size_t slot_index = 0; slot_index < claimed->plan.slots.size(); ++slot_index) {
    const auto& slot = claimed->plan.slots[slot_index];
    if (slot.claimed_by_job != req.job) continue;
    // Nothing to create: a scrubbed instance already stands there (an epilog kept it). Only the
    // planner turns an idle instance into a destroying one, and never one whose slot is claimed.
    if (idle[slot_index]) {
      const auto& inst = claimed->instances[*idle[slot_index]];
      adopted.emplace_back(inst.gpu, inst.gpu_instance_id);
      continue;
    }
    auto gpu_model = node::model_of(*claimed, slot.gpu);
    if (!gpu_model) return std::unexpected(gpu_model.error().within(where));
    const Profile* profile = (*gpu_model)->find_profile(slot.profile);
    // Adopt an instance a crashed earlier run created at this placement but never recorded. A GPU
    // instance it left without a compute instance (killed between the two creates) is destroyed and
    // made again: the placement is claimed by this job, so nothing else can own it.
    std::optional<InstanceInfo> info;
    if (auto listed = ctx.backend->list_instances(slot.gpu); listed)
      for (const auto& hw : *listed) {
        bool known = std::ranges::any_of(claimed->instances, [&](const LedgerInstance& li) {
          return li.gpu == slot.gpu && li.gpu_instance_id == hw.gi_id;
        });
        if (known || hw.placement != slot.placement || hw.profile_id != profile->nvml_profile_id) continue;
        if (hw.ci_id) {
          info = hw;
        } else if (auto gone = ctx.backend->destroy_instance(slot.gpu, hw.gi_id); !gone) {
          return reject_after_create(fmt::format("node {}: GPU {}: GPU instance {} at slice {} has no compute instance and "
                                    "could not be destroyed: {}",
                                    ctx.node, slot.gpu, hw.gi_id, slot.placement.start, gone.error().message));
        } else {
          ctx.log(fmt::format("{}: GPU {}: destroyed GPU instance {} at slice {}: it had no compute instance",
                              where, slot.gpu, hw.gi_id, slot.placement.start));
        }
      }
    if (!info) {
      auto created = ctx.backend->create_instance(slot.gpu, profile->nvml_profile_id, slot.placement);
      // The device is in use by something no ledger knows (a process that outlived its job, a
      // tool run by hand): the job is valid and goes back to the queue; what was made is recorded
      // for its epilog to release.
      if (!created && created.error().code == ErrorCode::conflict) {
        if (auto recorded = record_made(); !recorded)
          ctx.log(fmt::format("{}: recording the instances made so far: {}", where, recorded.error().message));
        return no_room(fmt::format("node {}: GPU {}: creating {} at slice {}: {}", ctx.node, slot.gpu, slot.profile,
                                   slot.placement.start, created.error().message),
                       "the device is in use outside any job; the job runs once it is free");
      }
      created_any = created_any || created.has_value();
      if (!created)
        return reject_after_create(fmt::format("node {}: GPU {}: creating {} at slice {}: {}", ctx.node, slot.gpu,
                                               slot.profile, slot.placement.start, created.error().message));
      info = *created;
    }
    crash_point("prolog.after_create");
    LedgerInstance inst = instance_made_at(slot, *info, ctx.now());
    inst.job = req.job;
    inst.user = req.user;
    inst.state = InstanceState::ready;
    made.push_back(std::move(inst));
  }
  auto final_ledger = made.empty() && adopted.empty() ? claimed : record_made();
  if (!final_ledger) return std::unexpected(final_ledger.error().within(where));
  crash_point("prolog.after_record_instance");

  for (const auto* inst : instances_of_job(*final_ledger, req.job)) result.instances.push_back(*inst);
  // Only the job's user can open its instances, before the plugin names them to any step. Under
  // the access lock, which the planner's sweep of unheld capability files holds from reading the
  // ledger to its last change: the instances are the job's in the ledger already, so a sweep either
  // finished before this grant or sees them held. A refusal leaves them recorded as the job's, so
  // the epilog takes them back and scrubs them.
  std::optional<NodeLock> access;
  if (ctx.access) {
    access.emplace(access_lock_path(ctx));
    if (!access->held()) return fail(ErrorCode::io, fmt::format("{}: cannot take {}", where, access_lock_path(ctx)));
    if (!req.uid) return reject("confinement", fmt::format("node {}: no SLURM_JOB_UID, so its instances cannot be given to its user", ctx.node));
    // Creating can bring devices no job holds into being (an AMD mode switch makes all of the
    // mode's partitions at once, with the distribution's permissions): root's alone before
    // anything is granted, not a planner round later.
    if (created_any)
      if (auto secured = ctx.access->secure_unheld(*final_ledger); !secured)
        return reject("confinement", fmt::format("node {}: securing the devices no job holds: {}", ctx.node, secured.error().message));
    for (const auto& inst : result.instances)
      if (auto granted = ctx.access->grant(inst, *req.uid); !granted)
        return reject("confinement", fmt::format("node {}: GPU {} {}@{}: giving the instance to uid {}: {}", ctx.node, inst.gpu,
                                  inst.profile, inst.placement.start, *req.uid, granted.error().message));
  }
  access.reset();
  hardware.reset();

  // The record (and so the job's environment) says what the job got: model, a class's hardware
  // profile, memory and compute share.
  auto record = job_record_of(*final_ledger, req.job, result.instances);
  if (!record) return std::unexpected(record.error().within(where));
  if (auto ok = write_job_record(ctx, *record); !ok) return std::unexpected(ok.error().within(where));
  crash_point("prolog.after_job_record");
  // A MIG-backed viz VM needs the job's instances first.
  auto refused = start_viz_sessions(ctx, req, viz);
  if (!refused) return std::unexpected(refused.error().within(where));
  if (!refused->empty()) return reject("policy", *refused);
  std::string uuids;
  for (const auto& i : result.instances) uuids += (uuids.empty() ? "" : ",") + i.profile + "=" + i.mig_uuid;
  ctx.log(fmt::format("{}: user {}: ready: {}", where, req.user, uuids));
  return result;
}

}  // namespace vgpu
