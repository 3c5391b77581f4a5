#include "share_prolog.h"

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

}  // namespace

bool is_share_type(const Ledger& ledger, std::string_view type) { return shares_of(ledger, type) > 0; }

Result<PrologResult> run_share_prolog(NodeContext& ctx, const PrologRequest& req, const PartitionPolicy& part,
                                      const GresRequest& request, const PrologEndings& end) {
  const std::string where = fmt::format("vgpu: prolog: job {}", req.job);
  PrologResult result;
  if (request.count != 1)
    return end.reject("policy", fmt::format("{} is a share of an instance: a job holds one share per node, not {} "
                                            "(ask for a larger type or a whole instance)", request.type, request.count));
  if (ctx.mps == nullptr)
    return end.reject("node", fmt::format("node {}: {} is a share type, but this node runs no MPS control", ctx.node,
                                          request.type));
  // A share that cannot be placed after all goes back with nothing held.
  auto give_back = [&](std::string reason) {
    (void)update_for_job(ctx, [&](Ledger& l) -> Result<void> {
      release_shares(l, req.job, ctx.now(), "requeued");
      return {};
    });
    return end.no_room(std::move(reason));
  };

  auto claim = [&] {
    return update_for_job(ctx, [&](Ledger& l) {
      return claim_shares(l, Catalog::builtin(), req.job, req.user, request.type, 1, part.share_across_users, ctx.now());
    });
  };
  auto claimed = claim();
  if (!claimed) {
    if (claimed.error().code == ErrorCode::no_capacity)
      return end.no_room(fmt::format("node {}: {}", ctx.node, claimed.error().message));
    return std::unexpected(claimed.error().within(where));
  }
  crash_point("prolog.after_share_claim");
  auto place = place_of(*claimed, req.job);
  if (!place) return fail(ErrorCode::internal, where + ": the claimed share is not in the ledger");

  // The slot of a job that just ended is free once its instance is scrubbed and destroyed.
  if (!place->instance && place->on_released) {
    if (auto cleaned = finish_released_instances(ctx, {.held = {}, .wait_for_others = true}); !cleaned)
      ctx.log(fmt::format("{}: finishing released instances: {}", where, cleaned.error().message));
    auto now = ctx.ledger->load();
    if (!now) return std::unexpected(now.error().within(where));
    place = place_of(*now, req.job);
    if (!place) return fail(ErrorCode::internal, where + ": the claimed share left the ledger");
    if (!place->instance && place->on_released)
      return give_back(fmt::format("node {}: a released instance where this share's instance goes could not be "
                                   "destroyed (see the node's log)", ctx.node));
  }
  // A scrubbed instance kept there by the last share's epilog: the group takes it as it is.
  if (!place->instance && place->on_idle) {
    auto adopted = update_for_job(ctx, [&](Ledger& l) { return adopt_idle_for_share_group(l, place->gpu, place->placement); });
    if (!adopted) return std::unexpected(adopted.error().within(where));
    place = place_of(*adopted, req.job);
  }
  auto model = model_of(*claimed, place->gpu);
  if (!model) return std::unexpected(model.error().within(where));
  const Profile* profile = (*model)->find_profile(place->type);
  if (!profile || profile->shares < 1)
    return fail(ErrorCode::internal, fmt::format("{}: {} is not a share type of {}", where, place->type, (*model)->name));

  // The first share makes the instance; as for whole instances, create and record under the
  // hardware lock (the planner's reconcile leaves a held slot's place alone), and a crashed run's
  // unrecorded instance at the place is adopted.
  std::optional<NodeLock> hardware;
  std::optional<Ledger> current;  // read under the lock: another share's prolog may have made it
  if (!place->instance) {
    hardware.emplace(hardware_lock_path(ctx));
    if (!hardware->held()) return fail(ErrorCode::io, fmt::format("{}: cannot take {}", where, hardware_lock_path(ctx)));
    auto now = ctx.ledger->load();
    if (!now) return std::unexpected(now.error().within(where));
    current = std::move(*now);
    place = place_of(*current, req.job);
    if (!place) return fail(ErrorCode::internal, where + ": the claimed share left the ledger");
  }
  if (!place->instance) {
    std::optional<InstanceInfo> info;
    if (auto listed = ctx.backend->list_instances(place->gpu); listed)
      for (const auto& hw : *listed) {
        const bool known = std::ranges::any_of(current->instances, [&](const LedgerInstance& li) {
          return li.gpu == place->gpu && li.gpu_instance_id == hw.gi_id;
        });
        if (!known && hw.placement == place->placement && hw.profile_id == profile->nvml_profile_id && hw.ci_id) info = hw;
      }
    if (!info) {
      auto created = ctx.backend->create_instance(place->gpu, profile->nvml_profile_id, place->placement);
      if (!created)
        return give_back(fmt::format("node {}: GPU {}: creating {} at slice {}: {}", ctx.node, place->gpu, place->type,
                                     place->placement.start, created.error().message));
      info = *created;
    }
    crash_point("prolog.after_share_create");
    LedgerInstance inst = instance_made_at(PlanSlot{place->gpu, place->type, place->placement, std::nullopt}, *info, ctx.now());
    inst.state = InstanceState::ready;
    auto recorded = update_for_job(ctx, [&](Ledger& l) { return add_instance(l, inst); });
    if (!recorded) return std::unexpected(recorded.error().within(where));
    place = place_of(*recorded, req.job);
    if (!place || !place->instance)
      return fail(ErrorCode::internal, where + ": the share's new instance is not the group's");
  }
  crash_point("prolog.after_share_record_instance");

  // The daemon after the record: the planner closes any daemon whose instance the ledger does not
  // show held, and reads the ledger after listing the daemons. Under the hardware lock, which every
  // open and close of a daemon takes: two shares' prologs starting together must not both start one.
  if (!hardware) {
    hardware.emplace(hardware_lock_path(ctx));
    if (!hardware->held()) return fail(ErrorCode::io, fmt::format("{}: cannot take {}", where, hardware_lock_path(ctx)));
  }
  auto limits = share_limits(*profile, profile->shares);
  auto pipe = limits ? ctx.mps->open(place->instance->mig_uuid, *limits) : Result<std::string>(std::unexpected(limits.error()));
  hardware.reset();
  if (!limits) return end.reject("policy", fmt::format("node {}: {}: {}", ctx.node, place->type, limits.error().message));
  if (!pipe)
    return end.reject("hardware", fmt::format("node {}: GPU {} {}: starting its MPS control daemon: {}", ctx.node,
                                              place->gpu, place->instance->mig_uuid, pipe.error().message));
  crash_point("prolog.after_mps_open");

  if (ctx.access) {
    NodeLock access(access_lock_path(ctx));
    if (!access.held()) return fail(ErrorCode::io, fmt::format("{}: cannot take {}", where, access_lock_path(ctx)));
    if (!req.uid)
      return end.reject("confinement", fmt::format("node {}: no SLURM_JOB_UID, so its instance cannot be given to its user", ctx.node));
    // The holders are read under the access lock: a claim or release written after this read
    // grants again under the same lock once it is written, so the last grant sees the latest ones.
    auto now = ctx.ledger->load();
    if (!now) return std::unexpected(now.error().within(where));
    const ShareGroup* group = share_group_at(*now, place->gpu, place->placement);
    const auto users = group ? share_group_users(*group) : std::vector<std::string>{req.user};
    const bool alone = users.size() == 1 && users.front() == req.user;
    auto granted = alone ? ctx.access->grant(*place->instance, *req.uid) : ctx.access->grant_users(*place->instance, users);
    if (!granted)
      return end.reject("confinement", fmt::format("node {}: GPU {} {}@{}: giving the instance to {}: {}", ctx.node,
                                                   place->gpu, place->type, place->placement.start,
                                                   alone ? fmt::format("uid {}", *req.uid) : fmt::format("users {}", fmt::join(users, ", ")),
                                                   granted.error().message));
  }
  auto final_ledger = ctx.ledger->load();
  if (!final_ledger) return std::unexpected(final_ledger.error().within(where));
  auto record = job_record_of(*final_ledger, req.job, {*place->instance});
  if (!record) return std::unexpected(record.error().within(where));
  // What the job got is its share: the daemon caps its memory so.
  record->instances.front().memory_mib = static_cast<std::uint64_t>(limits->memory_mib);
  record->mps_pipe_directory = *pipe;
  if (auto ok = write_job_record(ctx, *record); !ok) return std::unexpected(ok.error().within(where));
  result.instances.push_back(*place->instance);
  ctx.log(fmt::format("{}: user {}: ready: a share of {} ({} MiB, {} % of its SMs) on {}", where, req.user, place->type,
                      limits->memory_mib, limits->thread_percentage, place->instance->mig_uuid));
  return result;
}

}  // namespace vgpu::node
