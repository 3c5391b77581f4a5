#include "shares/share_prolog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "node_lock.h"
#include "node_model.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/core/shared_instance.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/node_state.h"

namespace vgpu::node {
namespace {

// Where the job's share stands: its group's place and type, and the instance there if made.
struct SharePlace {
  int gpu = 0;
  Placement placement;
  std::string type;
  std::optional<LedgerInstance> instance;
  bool on_released = false;  // the slot stands where a released instance waits for its scrub
  bool on_idle = false;      // the slot stands where an idle instance of the type waits
};

std::optional<SharePlace> place_of(const Ledger& l, JobId job) {
  auto groups = share_groups_of_job(l, job);
  if (groups.empty()) return std::nullopt;
  const ShareGroup& g = *groups.front();
  SharePlace out{g.gpu, g.placement, g.type, std::nullopt, false, false};
  if (const LedgerInstance* inst = share_group_instance(l, g)) out.instance = *inst;
  for (const auto& i : l.instances)
    if (i.gpu == g.gpu && i.placement == g.placement) {
      out.on_released = out.on_released || is_released(i);
      out.on_idle = out.on_idle || (is_idle(i) && i.profile == g.type);
    }
  return out;
}

using Ending = std::optional<Result<PrologResult>>;

// One share prolog's run: its request, how it ends a job, and what it has found so far.
struct ShareRun {
  ShareRun(NodeContext& context, const PrologRequest& request_, const PartitionPolicy& partition,
           const GresRequest& share, const PrologEndings& endings)
      : ctx(context),
        req(request_),
        part(partition),
        request(share),
        end(endings),
        where(fmt::format("vgpu: prolog: job {}", request_.job)) {}

  NodeContext& ctx;
  const PrologRequest& req;
  const PartitionPolicy& part;
  const GresRequest& request;
  const PrologEndings& end;
  const std::string where;
  std::optional<SharePlace> place;
  std::optional<Ledger> claimed;  // the ledger the claim wrote
  std::optional<Ledger> current;  // read under the hardware lock: another share's prolog may have made it
  std::optional<NodeLock> hardware;
  const Profile* profile = nullptr;
  std::optional<ShareLimits> limits;
  std::string pipe;  // the MPS daemon's pipe directory

  // A share that cannot be placed after all goes back with nothing held.
  Result<PrologResult> give_back(std::string reason) {
    (void)update_for_job(ctx, [&](Ledger& l) -> Result<void> {
      release_shares(l, req.job, ctx.now(), "requeued");
      return {};
    });
    return end.no_room(std::move(reason));
  }
  Ending lock_hardware() {
    hardware.emplace(hardware_lock_path(ctx));
    if (!hardware->held())
      return fail(ErrorCode::io, fmt::format("{}: cannot take {}", where, hardware_lock_path(ctx)));
    return std::nullopt;
  }
};

Ending check_share_request(ShareRun& r) {
  if (r.request.count != 1)
    return r.end.reject("policy", fmt::format("{} is a share of an instance: a job holds one share per node, not {} "
                                              "(ask for a larger type or a whole instance)",
                                              r.request.type, r.request.count));
  if (r.ctx.mps == nullptr)
    return r.end.reject("node", fmt::format("node {}: {} is a share type, but this node runs no MPS control",
                                            r.ctx.node, r.request.type));
  return std::nullopt;
}

Ending claim_share(ShareRun& r) {
  auto claimed = update_for_job(r.ctx, [&](Ledger& l) {
    return claim_shares(l, Catalog::builtin(), r.req.job, r.req.user, r.request.type, 1, r.part.share_across_users,
                        r.ctx.now());
  });
  if (!claimed) {
    if (claimed.error().code == ErrorCode::no_capacity)
      return r.end.no_room(fmt::format("node {}: {}", r.ctx.node, claimed.error().message));
    return std::unexpected(claimed.error().within(r.where));
  }
  crash_point("prolog.after_share_claim");
  r.claimed = std::move(*claimed);
  r.place = place_of(*r.claimed, r.req.job);
  if (!r.place) return fail(ErrorCode::internal, r.where + ": the claimed share is not in the ledger");
  return std::nullopt;
}

// The slot of a job that just ended is free once its instance is scrubbed and destroyed; a
// scrubbed instance kept there by the last share's epilog is taken by the group as it is.
Ending settle_place(ShareRun& r) {
  if (!r.place->instance && r.place->on_released) {
    if (auto cleaned = finish_released_instances(r.ctx, {.held = {}, .wait_for_others = true}); !cleaned)
      r.ctx.log(fmt::format("{}: finishing released instances: {}", r.where, cleaned.error().message));
    auto now = r.ctx.ledger->load();
    if (!now) return std::unexpected(now.error().within(r.where));
    r.place = place_of(*now, r.req.job);
    if (!r.place) return fail(ErrorCode::internal, r.where + ": the claimed share left the ledger");
    if (!r.place->instance && r.place->on_released)
      return r.give_back(
          fmt::format("node {}: a released instance where this share's instance goes could not be "
                      "destroyed (see the node's log)",
                      r.ctx.node));
  }
  if (!r.place->instance && r.place->on_idle) {
    auto adopted = update_for_job(
        r.ctx, [&](Ledger& l) { return adopt_idle_for_share_group(l, r.place->gpu, r.place->placement); });
    if (!adopted) return std::unexpected(adopted.error().within(r.where));
    r.place = place_of(*adopted, r.req.job);
  }
  auto model = model_of(*r.claimed, r.place->gpu);
  if (!model) return std::unexpected(model.error().within(r.where));
  r.profile = (*model)->find_profile(r.place->type);
  if (!r.profile || r.profile->shares < 1)
    return fail(ErrorCode::internal,
                fmt::format("{}: {} is not a share type of {}", r.where, r.place->type, (*model)->name));
  return std::nullopt;
}

// The first share makes the instance; as for whole instances, create and record under the
// hardware lock (the planner's reconcile leaves a held slot's place alone), and a crashed run's
// unrecorded instance at the place is adopted.
Ending make_instance_if_first(ShareRun& r) {
  if (r.place->instance) return std::nullopt;
  if (auto end = r.lock_hardware()) return end;
  auto now = r.ctx.ledger->load();
  if (!now) return std::unexpected(now.error().within(r.where));
  r.current = std::move(*now);
  r.place = place_of(*r.current, r.req.job);
  if (!r.place) return fail(ErrorCode::internal, r.where + ": the claimed share left the ledger");
  if (r.place->instance) return std::nullopt;
  std::optional<InstanceInfo> info;
  if (auto listed = r.ctx.backend->list_instances(r.place->gpu); listed)
    for (const auto& hw : *listed) {
      const bool known = std::ranges::any_of(r.current->instances, [&](const LedgerInstance& li) {
        return li.gpu == r.place->gpu && li.gpu_instance_id == hw.gi_id;
      });
      if (!known && hw.placement == r.place->placement && hw.profile_id == r.profile->nvml_profile_id && hw.ci_id)
        info = hw;
    }
  if (!info) {
    auto created = r.ctx.backend->create_instance(r.place->gpu, r.profile->nvml_profile_id, r.place->placement);
    if (!created)
      return r.give_back(fmt::format("node {}: GPU {}: creating {} at slice {}: {}", r.ctx.node, r.place->gpu,
                                     r.place->type, r.place->placement.start, created.error().message));
    info = *created;
  }
  crash_point("prolog.after_share_create");
  LedgerInstance inst =
      instance_made_at(PlanSlot{r.place->gpu, r.place->type, r.place->placement, std::nullopt}, *info, r.ctx.now());
  inst.state = InstanceState::ready;
  auto recorded = update_for_job(r.ctx, [&](Ledger& l) { return add_instance(l, inst); });
  if (!recorded) return std::unexpected(recorded.error().within(r.where));
  r.place = place_of(*recorded, r.req.job);
  if (!r.place || !r.place->instance)
    return fail(ErrorCode::internal, r.where + ": the share's new instance is not the group's");
  return std::nullopt;
}

// The daemon after the record: the planner closes any daemon whose instance the ledger does not
// show held, and reads the ledger after listing the daemons. Under the hardware lock, which every
// open and close of a daemon takes: two shares' prologs starting together must not both start one.
Ending open_daemon(ShareRun& r) {
  if (!r.hardware)
    if (auto end = r.lock_hardware()) return end;
  auto limits = share_limits(*r.profile, r.profile->shares);
  auto pipe = limits ? r.ctx.mps->open(r.place->instance->mig_uuid, *limits)
                     : Result<std::string>(std::unexpected(limits.error()));
  r.hardware.reset();
  if (!limits)
    return r.end.reject("policy", fmt::format("node {}: {}: {}", r.ctx.node, r.place->type, limits.error().message));
  if (!pipe)
    return r.end.reject("hardware", fmt::format("node {}: GPU {} {}: starting its MPS control daemon: {}", r.ctx.node,
                                                r.place->gpu, r.place->instance->mig_uuid, pipe.error().message));
  crash_point("prolog.after_mps_open");
  r.limits = *limits;
  r.pipe = *pipe;
  return std::nullopt;
}

// The holders are read under the access lock: a claim or release written after this read grants
// again under the same lock once it is written, so the last grant sees the latest ones.
Ending confine_share(ShareRun& r) {
  auto& ctx = r.ctx;
  if (!ctx.access) return std::nullopt;
  NodeLock access(access_lock_path(ctx));
  if (!access.held()) return fail(ErrorCode::io, fmt::format("{}: cannot take {}", r.where, access_lock_path(ctx)));
  if (!r.req.uid)
    return r.end.reject(
        "confinement", fmt::format("node {}: no SLURM_JOB_UID, so its instance cannot be given to its user", ctx.node));
  auto now = ctx.ledger->load();
  if (!now) return std::unexpected(now.error().within(r.where));
  const auto& place = *r.place;
  const ShareGroup* group = share_group_at(*now, place.gpu, place.placement);
  const auto users = group ? share_group_users(*group) : std::vector<std::string>{r.req.user};
  const bool alone = users.size() == 1 && users.front() == r.req.user;
  auto granted =
      alone ? ctx.access->grant(*place.instance, *r.req.uid) : ctx.access->grant_users(*place.instance, users);
  if (!granted)
    return r.end.reject("confinement", fmt::format("node {}: GPU {} {}@{}: giving the instance to {}: {}", ctx.node,
                                                   place.gpu, place.type, place.placement.start,
                                                   alone ? fmt::format("uid {}", *r.req.uid)
                                                         : fmt::format("users {}", fmt::join(users, ", ")),
                                                   granted.error().message));
  return std::nullopt;
}

// What the job got is its share: the daemon caps its memory so.
Result<PrologResult> write_share_record(ShareRun& r) {
  auto final_ledger = r.ctx.ledger->load();
  if (!final_ledger) return std::unexpected(final_ledger.error().within(r.where));
  auto record = job_record_of(*final_ledger, r.req.job, {*r.place->instance});
  if (!record) return std::unexpected(record.error().within(r.where));
  record->instances.front().memory_mib = static_cast<std::uint64_t>(r.limits->memory_mib);
  record->mps_pipe_directory = r.pipe;
  if (auto ok = write_job_record(r.ctx, *record); !ok) return std::unexpected(ok.error().within(r.where));
  PrologResult result;
  result.instances.push_back(*r.place->instance);
  r.ctx.log(fmt::format("{}: user {}: ready: a share of {} ({} MiB, {} % of its SMs) on {}", r.where, r.req.user,
                        r.place->type, r.limits->memory_mib, r.limits->thread_percentage, r.place->instance->mig_uuid));
  return result;
}

}  // namespace

bool is_share_type(const Ledger& ledger, std::string_view type) { return shares_of(ledger, type) > 0; }

Result<PrologResult> run_share_prolog(NodeContext& ctx, const PrologRequest& req, const PartitionPolicy& part,
                                      const GresRequest& request, const PrologEndings& end) {
  ShareRun r(ctx, req, part, request, end);
  if (auto e = check_share_request(r)) return *e;
  if (auto e = claim_share(r)) return *e;
  if (auto e = settle_place(r)) return *e;
  if (auto e = make_instance_if_first(r)) return *e;
  crash_point("prolog.after_share_record_instance");
  if (auto e = open_daemon(r)) return *e;
  if (auto e = confine_share(r)) return *e;
  return write_share_record(r);
}

}  // namespace vgpu::node
