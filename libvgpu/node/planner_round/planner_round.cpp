// One planning round on a node: reconcile the ledger with the hardware, finish released
// instances, turn Slurm's pending jobs into demand, re-plan the free space, and hand the new
// advertisement to Slurm without ever withdrawing a slot a job may already hold (see vgpu/node/planner.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <chrono>
#include <optional>
#include <set>

#include "node_lock.h"
#include "node_model.h"
#include "node_features.h"
#include "node_weight.h"
#include "slot_key.h"
#include "slot_preparation.h"
#include "slurm_handover.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/split_publisher.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/mig_mode_switch.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/published_view.h"
#include "vgpu/policy/policy_hostlist.h"

namespace vgpu {

namespace {

using node::slot_key;
using node::SlotKey;

// Whether this node is in `reservation` (one the demand publisher booked), asked once.
bool in_wide_reservation(const NodeContext& ctx, PlannerState& state, const std::string& reservation,
                         std::vector<std::string>& notes) {
  if (auto it = state.in_wide_reservation.find(reservation); it != state.in_wide_reservation.end()) return it->second;
  auto nodes = ctx.slurm->reservation_nodes(reservation);
  if (!nodes) {
    notes.push_back(fmt::format("reservation {}: {}; asked again next round", reservation, nodes.error().message));
    return false;
  }
  bool here = NodeList(*nodes).contains(ctx.node);
  state.in_wide_reservation[reservation] = here;
  return here;
}

std::vector<Demand> node_demand(const NodeContext& ctx, PlannerState& state, const PendingJobs& pending,
                                const std::vector<const PartitionPolicy*>& parts, std::vector<std::string>& notes) {
  std::vector<const PendingJob*> jobs;
  for (const auto& j : pending.jobs) {
    if (j.vgpu.empty() || !waits_for_resources(j)) continue;
    bool ours = std::ranges::any_of(j.partitions, [&](const std::string& name) {
      return std::ranges::any_of(parts, [&](const PartitionPolicy* p) { return p->name == name; });
    });
    if (ours) jobs.push_back(&j);
  }
  // Slurm's own order: priority, then age, then id.
  std::ranges::stable_sort(jobs, [](const PendingJob* a, const PendingJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return a->submit_time < b->submit_time;
  });
  std::vector<Demand> demand;
  const std::int64_t now = ctx.now();
  std::erase_if(state.in_wide_reservation, [&](const auto& entry) {
    return std::ranges::none_of(jobs, [&](const PendingJob* j) { return j->reservation == entry.first; });
  });
  for (const auto* j : jobs) {
    bool starving = now - j->submit_time > ctx.policy->planner.starvation_s;
    // A job in a reservation we booked (vgpu/node/wide_booking.h) is held for by Slurm on the
    // nodes chosen for it: there it is served first and may drain GPUs (Slurm starts nothing
    // there that would run across the reservation's start); elsewhere it drains nothing.
    if (j->reservation.starts_with(kWideReservationPrefix))
      starving = in_wide_reservation(ctx, state, j->reservation, notes);
    for (const auto& r : j->vgpu) {
      if (node::is_viz_pool(*ctx.policy, r.type)) continue;
      demand.push_back({r.type, r.count * std::min(j->array_tasks, 8), starving});
    }
  }
  return demand;
}

// Demand for a share type counts shares, one per job; the planner places instances. So it asks for
// the instances those shares need beyond the free shares of the groups already here (which serve
// starving shares first), each instance taking as many shares as the type cuts it into.
std::vector<Demand> demand_in_instances(const Ledger& l, const std::vector<Demand>& demand,
                                        std::optional<int> node_total, std::vector<std::string>* notes) {
  // New share instances get only the room the node's total leaves beside the units that stay
  // advertised whatever the plan (what jobs hold of whole instances, every share group's units):
  // units beyond it could never be offered, and their instance would take space other profiles
  // can use. Viz pools are left to the advertisement's cut (cap_to_node_total).
  int room = std::numeric_limits<int>::max();
  if (node_total) {
    int committed = 0;
    for (const auto& [type, n] : held_by_jobs(l))
      if (shares_of(l, type) == 0) committed += n;
    for (const auto& g : l.share_groups) committed += shares_of(l, g.type);
    room = std::max(0, *node_total - committed);
  }
  std::map<std::string, std::pair<int, int>> asked;  // share type -> {starving, other} shares
  std::vector<Demand> out;
  for (const auto& d : demand) {
    if (shares_of(l, d.profile) == 0) {
      out.push_back(d);
      continue;
    }
    auto [it, first] = asked.try_emplace(d.profile, 0, 0);
    if (first) out.push_back({d.profile, 0, false});  // holds the type's place in Slurm's order
    (d.starving ? it->second.first : it->second.second) += d.count;
  }
  std::vector<Demand> result;
  for (const auto& d : out) {
    auto it = asked.find(d.profile);
    if (it == asked.end()) {
      result.push_back(d);
      continue;
    }
    const int n = shares_of(l, d.profile);
    int free = 0;
    for (const auto& g : l.share_groups)
      if (g.type == d.profile) free += std::max(0, n - static_cast<int>(g.holders.size()));
    auto [starving, other] = it->second;
    const int for_starving = std::min(starving, free);
    starving -= for_starving;
    other -= std::min(other, free - for_starving);
    int instances = (starving + other + n - 1) / n, for_hungry = (starving + n - 1) / n;
    if (instances > room / n) {
      if (notes)
        notes->push_back(
            fmt::format("{} instance(s) of {} not planned: {} more units would pass the node's vgpu total "
                        "of {} (slurm.conf's Gres=vgpu:free:<total>, docs/slurm.md)",
                        instances - room / n, d.profile, (instances - room / n) * n, *node_total));
      instances = room / n;
      for_hungry = std::min(for_hungry, instances);
    }
    room -= instances * n;
    if (for_hungry > 0) result.push_back({d.profile, for_hungry, true});
    if (instances > for_hungry) result.push_back({d.profile, instances - for_hungry, false});
  }
  return result;
}

struct Desired {
  std::vector<PlanSlot> slots;  // new unclaimed slots (beyond `fixed`)
  int served = 0;               // demand units covered, by `fixed` slots or new ones
  int served_starving = 0;      // of them, units of starving demand
  bool reserves = false;        // a GPU is held back for starving demand
};

// The unclaimed slots this node should advertise, given its instances, claimed slots and any
// `fixed` unclaimed slots that must stay (already advertised).
Result<Desired> desired_slots(const Ledger& l, const std::vector<const PartitionPolicy*>& parts,
                              std::vector<Demand> demand, const std::vector<PlanSlot>& fixed,
                              std::optional<int> node_total, const std::set<int>& without_mig,
                              const std::set<int>& served_whole, std::vector<std::string>* notes = nullptr) {
  Desired none;
  if (l.gpus.empty() || parts.empty()) return none;
  demand = demand_in_instances(l, demand, node_total, notes);
  // Claimed and fixed slots are placed by layouts_of: a backed slot is the same space as its
  // released instance, so placing it again beside the instance would be a false conflict.
  auto is_fixed = [&](const PlanSlot& s) { return std::ranges::find(fixed, slot_key(s), slot_key) != fixed.end(); };
  auto layouts = node::layouts_of(l, [&](const PlanSlot& s) { return slot_is_held(l, s) || is_fixed(s); });
  if (!layouts) return std::unexpected(layouts.error());
  for (const auto& s : fixed)
    if (std::ranges::none_of(l.plan.slots,
                             [&](const PlanSlot& x) { return !slot_is_held(l, x) && slot_key(x) == slot_key(s); }))
      return fail(ErrorCode::corrupt,
                  fmt::format("fixed slot {}@{} on GPU {} is not in the plan", s.profile, s.placement.start, s.gpu));
  int served_by_fixed = 0, starving_by_fixed = 0;
  for (const auto& s : fixed)
    for (auto& d : demand)
      if (d.profile == s.profile && d.count > 0) {
        --d.count;
        ++served_by_fixed;
        if (d.starving) ++starving_by_fixed;
        break;
      }
  std::erase_if(demand, [](const Demand& d) { return d.count <= 0; });

  const GpuModel& model = (*layouts)[0].model();
  PlannerConfig config;
  for (const auto* p : parts) {
    for (const auto& name : p->allowed_profiles_for(model))
      if (std::ranges::find(config.allowed_profiles, name) == config.allowed_profiles.end())
        config.allowed_profiles.push_back(name);
    if (config.idle_layout.empty()) config.idle_layout = p->idle_layout;
  }
  if (config.allowed_profiles.empty()) return none;  // no partition here uses this model
  std::vector<PlannerGpu> gpus;
  for (std::size_t g = 0; g < l.gpus.size(); ++g) {
    // A GPU with MIG off serves itself whole (the planner plans whole.<M>gb there and nothing
    // else); one still recording MIG instances waits for reconcile to forget them.
    const bool mig_off = without_mig.contains(l.gpus[g].index);
    if (mig_off && served_whole.contains(l.gpus[g].index) && (*layouts)[g].empty())
      (*layouts)[g].set_mode(GpuMode::whole);
    bool eligible = (!mig_off || (*layouts)[g].mode() == GpuMode::whole) &&
                    std::ranges::any_of(parts, [&](const PartitionPolicy* p) {
                      return p->allows_gpu(l.gpus[g].index) && p->uses_model((*layouts)[g].model());
                    });
    gpus.push_back({(*layouts)[g], eligible});
  }
  Plan plan = plan_node(gpus, config, demand);
  if (notes)
    for (const auto& n : plan.notes)
      if (n.starts_with("starving")) notes->push_back(n);
  Desired out;
  out.served = served_by_fixed;
  out.served_starving = starving_by_fixed;
  out.reserves = !plan.reserved_gpus.empty();
  for (const auto& s : plan.slots) {
    out.slots.push_back({l.gpus[static_cast<std::size_t>(s.gpu)].index, s.profile->name, s.placement, std::nullopt});
    if (s.demand >= 0) ++out.served;
    if (s.demand >= 0 && demand[static_cast<std::size_t>(s.demand)].starving) ++out.served_starving;
  }
  return out;
}

std::vector<PlanSlot> unheld(const Ledger& l) {
  std::vector<PlanSlot> out;
  for (const auto& s : l.plan.slots)
    if (!slot_is_held(l, s)) out.push_back(s);
  return out;
}

// Unclaimed slots still backed by a released instance: their space is re-planned only once the
// instance is gone, so even a plan from scratch keeps them (else each job's end would cost a
// shrink and a grow of the same space).
std::vector<PlanSlot> backed_unheld(const Ledger& l) {
  std::vector<PlanSlot> out;
  const auto backing = slot_backings(l);
  for (std::size_t i = 0; i < l.plan.slots.size(); ++i)
    if (backing[i] && !slot_is_held(l, l.plan.slots[i])) out.push_back(l.plan.slots[i]);
  return out;
}

// The ledger as the planner sees it: an idle instance under an unclaimed slot is not in the way
// (the space is plannable; the instance goes if the plan moves). Its slot stays, unbacked.
Ledger planning_view(const Ledger& l) {
  Ledger view = l;
  const auto idle = idle_backings(l);
  std::vector<bool> drop(l.instances.size(), false);
  for (std::size_t s = 0; s < idle.size(); ++s)
    if (idle[s] && !slot_is_held(l, l.plan.slots[s])) drop[*idle[s]] = true;
  view.instances.clear();
  for (std::size_t i = 0; i < l.instances.size(); ++i)
    if (!drop[i]) view.instances.push_back(l.instances[i]);
  return view;
}

// Idle instances under unclaimed slots that `desired` does not keep (by gpu/profile/placement).
std::vector<std::size_t> idle_not_kept(const Ledger& l, const std::vector<PlanSlot>& desired) {
  std::vector<SlotKey> pool;
  for (const auto& s : desired) pool.push_back(slot_key(s));
  std::vector<std::size_t> out;
  const auto idle = idle_backings(l);
  for (std::size_t s = 0; s < idle.size(); ++s) {
    if (!idle[s] || slot_is_held(l, l.plan.slots[s])) continue;
    auto it = std::ranges::find(pool, slot_key(l.plan.slots[s]));
    if (it != pool.end()) pool.erase(it);
    else
      out.push_back(*idle[s]);
  }
  return out;
}

// Slots of `a` with no counterpart in `b` (multiset difference by gpu/profile/placement).
std::vector<PlanSlot> minus(const std::vector<PlanSlot>& a, const std::vector<PlanSlot>& b) {
  std::vector<SlotKey> pool;
  for (const auto& s : b) pool.push_back(slot_key(s));
  std::vector<PlanSlot> out;
  for (const auto& s : a) {
    auto it = std::ranges::find(pool, slot_key(s));
    if (it == pool.end()) out.push_back(s);
    else
      pool.erase(it);
  }
  return out;
}

// NVIDIA GPUs of a MIG model whose MIG mode is not on now (off, or only pending): no MIG instance
// can be created there (nvmlDeviceCreateGpuInstance* answer NOT_SUPPORTED), so such a GPU is
// planned as what it is, the whole GPU (whole.<M>gb). A pending enable counts as off: on A100/A30
// it takes effect only at the next GPU reset. A GPU of a model without MIG (L40S) is always whole.
std::set<int> gpus_without_mig(const NodeSnapshot& snap, const Catalog& catalog, std::vector<std::string>& notes) {
  std::set<int> out;
  for (const auto& g : snap.gpus) {
    const GpuModel* m = catalog.find_model_for_product(g.product_name);
    if (!m) continue;
    const bool mig_off = m->partitioning == Partitioning::mig && g.mig_current != MigMode::enabled;
    if (!mig_off && m->partitioning != Partitioning::none) continue;
    out.insert(g.index);
    const Profile* whole = m->whole_gpu_profile();
    const std::string mode =
        mig_off ? fmt::format("MIG mode {} (pending {})", to_string(g.mig_current), to_string(g.mig_pending))
                : std::string("a GPU without MIG");
    notes.push_back(fmt::format("GPU {} ({}): {}: planned whole, as {}, where a partition offers it", g.index, m->name,
                                mode, whole ? whole->name : "nothing"));
  }
  return out;
}

// Whether a partition of this node offers the whole GPU on one of `gpus` (their model's
// whole.<M>gb is in its allowed profiles).
bool offers_whole_gpu(const NodeContext& ctx, const NodeSnapshot& snap, const std::set<int>& gpus) {
  for (const auto& g : snap.gpus) {
    const GpuModel* model = Catalog::builtin().find_model_for_product(g.product_name);
    const Profile* whole = model ? model->whole_gpu_profile() : nullptr;
    if (!gpus.contains(g.index) || !whole) continue;
    for (const auto& p : ctx.policy->partitions) {
      if (!p.allows_node(ctx.node) || !p.allows_gpu(g.index)) continue;
      const auto allowed = p.allowed_profiles_for(*model);
      if (std::ranges::find(allowed, whole->name) != allowed.end()) return true;
    }
  }
  return false;
}

// The GPUs with MIG off that serve themselves whole: all of them where the device access can keep
// one to its job's user, none elsewhere. Why none is noted only where a partition offers one, so a
// site that wants no whole GPUs reads nothing about them.
std::set<int> gpus_served_whole(NodeContext& ctx, const NodeSnapshot& snap, const std::set<int>& without_mig,
                                std::vector<std::string>& notes) {
  if (without_mig.empty()) return {};
  const std::string why = ctx.access ? ctx.access->whole_gpus_unconfinable() : std::string();
  if (why.empty()) return without_mig;
  if (offers_whole_gpu(ctx, snap, without_mig)) notes.push_back("no whole GPU is offered: " + why);
  return {};
}

// The policy's MIG-mode switches (mig_mode_switch.h), under the hardware lock the caller holds.
// Each outcome is a note (NoteLog logs it when it changes). True when a GPU changed mode: the
// caller reads the hardware again (the driver may rebind the GPU, its minor number with it).
bool switch_mig_modes(NodeContext& ctx, MigModeChoice& choice, PlannerRoundResult& result) {
  for (auto& n : choice.notes) result.notes.push_back(std::move(n));
  bool changed = false;
  const auto ask = [&](int gpu, MigMode mode) {
    auto outcome = ctx.backend->set_mig_mode(gpu, mode);
    const std::string why =
        choice.for_demand.contains(gpu)
            ? "as pending demand asks (mig_mode on_demand)"
            : fmt::format("as the policy's mig_mode {} asks", mode == MigMode::enabled ? "partitioned" : "whole");
    result.notes.push_back(
        fmt::format("GPU {}: MIG mode {}, {}: {}", gpu, mode == MigMode::enabled ? "on" : "off", why,
                    outcome ? std::string(to_string(*outcome)) : "failed: " + outcome.error().message));
    changed |= outcome && *outcome == MigModeSwitch::activated;
  };
  for (int gpu : choice.turn_on) ask(gpu, MigMode::enabled);
  for (int gpu : choice.turn_off) ask(gpu, MigMode::disabled);
  return changed;
}

// What each GPU is planned as this round. A GPU a partition wants whole that is still in MIG mode
// is planned as nothing (its MIG slots go, so it empties and can be switched); one a partition
// wants partitioned that is still off is not served whole (a whole slot would keep it from ever
// being empty).
void plan_gpu_modes(NodeContext& ctx, PlannerState& state, const NodeSnapshot& snap, const MigModeChoice& choice,
                    std::vector<std::string>& notes) {
  const std::set<int> mig_off = gpus_without_mig(snap, Catalog::builtin(), notes);
  std::set<int> may_be_whole;
  std::ranges::set_difference(mig_off, choice.wanted_partitioned, std::inserter(may_be_whole, may_be_whole.end()));
  state.gpus_served_whole = gpus_served_whole(ctx, snap, may_be_whole, notes);
  state.gpus_without_mig = mig_off;
  state.gpus_without_mig.insert(choice.wanted_whole.begin(), choice.wanted_whole.end());
  state.gpus_found_without_mig = mig_off;
  state.gpus_on_demand = gpus_on_demand(snap, Catalog::builtin(), node_partitions(*ctx.policy, ctx.node), notes);
}

// Repairs what differs between the ledger and the hardware. The hardware lock keeps prologs and
// releases out between the snapshot, the ledger read and the repair: otherwise an instance a
// prolog has created but not yet recorded looks leaked and is destroyed under its job.
Result<void> reconcile_with_hardware(NodeContext& ctx, PlannerState& state, const std::string& where,
                                     PlannerRoundResult& result) {
  NodeLock hardware(hardware_lock_path(ctx));
  if (!hardware.held()) return fail(ErrorCode::io, fmt::format("{}: cannot take {}", where, hardware_lock_path(ctx)));
  auto snap = take_snapshot(*ctx.backend);
  if (!snap) {
    result.notes.push_back("reconcile skipped: " + snap.error().message);
    return {};
  }
  auto ledger = ctx.ledger->load();
  if (!ledger) return std::unexpected(ledger.error().within(where));
  auto modes = choose_mig_mode_switches(*snap, Catalog::builtin(), node_partitions(*ctx.policy, ctx.node), *ledger,
                                        state.mig_on_demand);
  if (switch_mig_modes(ctx, modes, result)) {
    snap = take_snapshot(*ctx.backend);
    if (!snap) {
      result.notes.push_back("reconcile skipped: after a MIG-mode switch: " + snap.error().message);
      return {};
    }
  }
  plan_gpu_modes(ctx, state, *snap, modes, result.notes);
  auto view = hardware_view_from_snapshot(*snap, Catalog::builtin());
  for (const auto& d : reconcile(*ledger, view)) {
    result.notes.push_back(fmt::format("reconcile: {} GPU {}: {}", to_string(d.kind), d.gpu, d.detail));
    if (d.kind == DifferenceKind::leaked_instance && d.gpu_instance_id) {
      // An instance no ledger entry owns. A prolog between create and record always holds a
      // claimed slot at that placement, so only unclaimed space is cleaned up.
      auto hw = std::ranges::find_if(view.instances, [&](const HardwareInstance& i) {
        return i.gpu == d.gpu && i.gpu_instance_id == *d.gpu_instance_id;
      });
      bool claimed =
          hw != view.instances.end() && std::ranges::any_of(ledger->plan.slots, [&](const PlanSlot& s) {
            return slot_is_held(*ledger, s) && s.gpu == hw->gpu && (s.placement.mask() & hw->placement.mask());
          });
      if (!claimed) {
        auto destroyed = ctx.backend->destroy_instance(d.gpu, *d.gpu_instance_id);
        crash_point("planner.after_reconcile_destroy");
        ctx.log(fmt::format("{}: leaked instance GPU {} GI {} {}", where, d.gpu, *d.gpu_instance_id,
                            destroyed ? "destroyed" : "could not be destroyed: " + destroyed.error().message));
      }
    } else if (d.kind == DifferenceKind::missing_instance && d.gpu_instance_id) {
      auto gi = *d.gpu_instance_id;
      auto ok = ctx.ledger->update([&](Ledger& l) { return forget_vanished_instance(l, d.gpu, gi, ctx.now()); });
      ctx.log(fmt::format("{}: instance GPU {} GI {} vanished from the hardware; {}", where, d.gpu, gi,
                          ok ? "removed from the ledger" : ok.error().message));
    }
  }
  return {};
}

// MPS daemons whose instance no share group holds any more (a prolog killed between its daemon and
// its job record of a job that then ended, a daemon left by a crash): quit. The daemons are listed
// before the ledger is read: a prolog records its instance before it opens the daemon, so a daemon
// listed here has its holder in the ledger read after.
void sweep_mps_daemons(NodeContext& ctx, PlannerRoundResult& result) {
  if (ctx.mps == nullptr) return;
  NodeLock hardware(hardware_lock_path(ctx));  // as a prolog opens one (shares/share_prolog.cpp)
  if (!hardware.held()) {
    result.notes.push_back("mps: cannot take " + hardware_lock_path(ctx));
    return;
  }
  auto devices = ctx.mps->devices();
  if (!devices) {
    result.notes.push_back("mps: listing daemons: " + devices.error().message);
    return;
  }
  if (devices->empty()) return;
  auto l = ctx.ledger->load();
  if (!l) return;
  for (const auto& device : *devices) {
    const bool held = std::ranges::any_of(l->instances, [&](const LedgerInstance& i) {
      return i.mig_uuid == device && shares_of(*l, i.profile) > 0 && instance_is_held(*l, i);
    });
    if (held) continue;
    auto closed = ctx.mps->close(device);
    ctx.log(fmt::format("vgpu: planner: node {}: MPS daemon of {}, which no share holds: {}", ctx.node, device,
                        closed ? "quit" : "could not quit: " + closed.error().message));
  }
}

// With the plan settled and advertised: instances for its unheld slots, within one period's time.
void prepare_settled_plan(NodeContext& ctx, PlannerRoundResult& result) {
  if (!ctx.policy->planner.prepare_slots) return;
  auto prepared = node::prepare_slots(ctx, std::chrono::seconds(ctx.policy->planner.period_s));
  result.prepared = prepared.created;
  for (auto& n : prepared.notes) result.notes.push_back(std::move(n));
}

// The round's view of the node and of what it plans for.
struct Round {
  NodeContext& ctx;
  PlannerState& state;
  const std::string where;
  const std::int64_t started_at;
  PlannerRoundResult result;
  std::vector<const PartitionPolicy*> parts;
  std::vector<Demand> demand;
  std::optional<NodeGres> slurm_view;       // slurmctld's view of the node as the round read it
  std::uint64_t handovers_when_viewed = 0;  // PlannerState::handovers when it was read
};

// The policy's classes go into the ledger before anything is planned under their names. Returns
// the ledger as the round found it.
Result<Ledger> load_with_classes(Round& r) {
  auto ledger = ensure_ledger(r.ctx);
  if (!ledger) return std::unexpected(ledger.error().within(r.where));
  if (Ledger synced = *ledger; sync_classes(synced, r.ctx.policy->site_types()))
    if (auto ok = r.ctx.ledger->update([&](Ledger& l) -> Result<void> {
          sync_classes(l, r.ctx.policy->site_types());
          return {};
        });
        !ok)
      return std::unexpected(ok.error().within(r.where));
  return ledger;
}

// Instances a rebuild found with no owner may hold a former tenant's data: scrub, then destroy.
// An idle instance whose slot left the plan is kept for nobody: destroy it.
void queue_unowned_for_cleanup(NodeContext& ctx) {
  (void)ctx.ledger->update([&](Ledger& l) -> Result<void> {
    const auto idle = idle_backings(l);
    for (std::size_t n = 0; n < l.instances.size(); ++n) {
      auto& i = l.instances[n];
      if (i.orphaned && !i.job) {
        i.orphaned = false;
        i.state = InstanceState::scrubbing;
      } else if (is_idle(i) && std::ranges::find(idle, n) == idle.end()) {
        i.state = InstanceState::destroying;
      }
    }
    return {};
  });
}

// Every capability file no job holds is root's alone: a node that ran without slurm-vgpu, an
// instance that vanished under its job, an admin's chmod. Under the access lock, which a prolog
// takes for its grants after its instances are the job's in the ledger, so a grant is never
// taken back by a sweep that read the ledger before it (node_lock.h).
void secure_unheld_devices(NodeContext& ctx, PlannerRoundResult& result) {
  if (!ctx.access) return;
  NodeLock access(access_lock_path(ctx));
  auto now =
      access.held() ? ctx.ledger->load() : Result<Ledger>(fail(ErrorCode::io, "cannot take " + access_lock_path(ctx)));
  auto secured = now ? ctx.access->secure_unheld(*now) : Result<int>(std::unexpected(now.error()));
  if (!secured) result.notes.push_back("device confinement: " + secured.error().message);
  else if (*secured > 0)
    result.notes.push_back(
        fmt::format("device confinement: {} capability file(s) no job holds made root's alone", *secured));
}

// A partition whose scrub is required quarantines every instance its jobs release when no scrub
// can run on this node (a package built without CUDA has no vgpu-scrub): a note every round, so
// the log says why the node empties instead of one quarantine at a time.
void note_scrub_unavailable(NodeContext& ctx, PlannerRoundResult& result) {
  std::ranges::move(required_scrub_problems(ctx), std::back_inserter(result.notes));
}

// Reconciled with the hardware first (the plan must be made against what really exists), released
// and ended jobs' instances cleaned up, stray daemons and device files put right.
Result<void> settle_node(Round& r) {
  if (auto ok = reconcile_with_hardware(r.ctx, r.state, r.where, r.result); !ok) return std::unexpected(ok.error());
  queue_unowned_for_cleanup(r.ctx);
  if (auto cleaned = finish_released_instances(r.ctx); !cleaned)
    r.result.notes.push_back("cleanup: " + cleaned.error().message);
  release_ended_jobs(r.ctx, r.state, r.result.notes);
  sweep_mps_daemons(r.ctx, r.result);
  secure_unheld_devices(r.ctx, r.result);
  note_scrub_unavailable(r.ctx, r.result);
  return {};
}

// Slurm's view of the node, and the node's weight and features steered; without an answer from
// Slurm, what was last learnt from it stays.
std::optional<NodeGres> learn_from_slurm(Round& r) {
  auto node = r.ctx.slurm->node_gres(r.ctx.node);
  if (!node) return std::nullopt;
  r.state.slurm_total = node_total_of(r.ctx, *node);
  node::refresh_slurm_uncounted(r.ctx, r.state, *node, r.where, r.result);
  node::resync_slurm_split(r.ctx, r.state, *node, r.result);
  node::steer_node_weight(r.ctx, *node, r.result.notes);
  node::steer_node_features(r.ctx, *node, r.result.notes);
  r.result.slurm_view = *node;
  return std::move(*node);
}

// What the plan phase decided.
struct PlanChoice {
  std::vector<PlanSlot> dropped;  // advertised slots the new plan gives up (shrink first)
  std::vector<PlanSlot> chosen;   // the plan it settled on; the grow phase grows into it
  int idle_let_go = 0;            // idle instances to destroy before the plan can move
};

// Sticky first: keep every advertised slot and add around it. Re-plan from scratch (and so drop
// slots) only when that serves more demand, serves more starving demand (whatever the count of
// small slots it gives up), or must reserve a GPU for starving demand; otherwise each
// shrink-and-grow would re-place the kept slots and the plan would churn. Idle instances do not
// hold their space against the plan (planning_view). With nothing pending for
// planner.idle_return_s, the idle layout (what the plan from scratch gives) is where the node goes
// back to; shrink-confirm-grow makes that move safe. Until then the layout made for the last
// demand stays: the next job of a stream likely fits it.
Result<std::vector<PlanSlot>> desired_plan(Round& r, const Ledger& view, std::vector<PlanSlot> current) {
  const auto& without_mig = r.state.gpus_without_mig;
  const auto& served_whole = r.state.gpus_served_whole;
  // A slot stays only in the mode its GPU is planned in: whole where MIG is off and whole GPUs are
  // served, MIG profiles where MIG is on and stays on. An idle instance in a slot that goes is let
  // go with it, so a GPU leaving MIG mode empties.
  const auto wrong_mode = [&](const PlanSlot& s) {
    return names_whole_gpu(s.profile) ? !served_whole.contains(s.gpu) : without_mig.contains(s.gpu);
  };
  std::erase_if(current, wrong_mode);
  auto backed = backed_unheld(view);
  std::erase_if(backed, wrong_mode);
  auto scratch =
      desired_slots(view, r.parts, r.demand, backed, r.state.slurm_total, without_mig, served_whole, &r.result.notes);
  if (!scratch) return std::unexpected(scratch.error());
  auto sticky = desired_slots(view, r.parts, r.demand, current, r.state.slurm_total, without_mig, served_whole);
  if (!sticky) return std::unexpected(sticky.error());
  std::vector<PlanSlot> desired;
  const auto& since = r.state.demand_last_seen;
  const bool holding = since && r.started_at - *since < r.ctx.policy->planner.idle_return_s;
  if (!scratch->reserves && sticky->served >= scratch->served && sticky->served_starving >= scratch->served_starving &&
      (!r.demand.empty() || holding)) {
    desired = current;
    desired.insert(desired.end(), sticky->slots.begin(), sticky->slots.end());
  } else {
    desired = backed;
    desired.insert(desired.end(), scratch->slots.begin(), scratch->slots.end());
  }
  return desired;
}

// Phase 1: the desired plan; one that only adds slots is committed directly. Idle instances where
// the new plan has no slot of theirs go first; the plan moves once they are destroyed (their space
// is not free until then).
Result<Ledger> commit_plan(Round& r, PlanChoice& choice) {
  return r.ctx.ledger->update([&](Ledger& l) -> Result<void> {
    const Ledger view = planning_view(l);
    const auto current = unheld(view);
    auto desired = desired_plan(r, view, current);
    if (!desired) return std::unexpected(desired.error());
    choice.idle_let_go = 0;
    for (auto n : idle_not_kept(l, *desired)) {
      l.instances[n].state = InstanceState::destroying;
      ++choice.idle_let_go;
    }
    if (choice.idle_let_go > 0) return {};
    choice.chosen = *desired;
    choice.dropped = minus(current, *desired);
    if (!choice.dropped.empty()) return {};
    if (minus(*desired, current).empty()) return {};
    std::erase_if(l.plan.slots, [&](const PlanSlot& s) { return !slot_is_held(l, s); });
    for (auto& s : *desired) l.plan.slots.push_back(s);
    ++l.plan.generation;
    return {};
  });
}

// Their space is free once the idle instances are gone: plan again now, not a period later (on a
// node whose slots are prepared ahead, every reshape starts here). One that could not be destroyed
// is no longer idle and pins its space like any released instance.
Result<Ledger> commit_plan_after_idle(Round& r, PlanChoice& choice, Result<Ledger> committed) {
  if (!committed || choice.idle_let_go == 0) return committed;
  r.result.notes.push_back(
      fmt::format("{} idle instance(s) not in the new plan: destroying them first", choice.idle_let_go));
  if (auto cleaned = finish_released_instances(r.ctx); !cleaned)
    r.result.notes.push_back("cleanup: " + cleaned.error().message);
  return commit_plan(r, choice);
}

// Drops the unheld slots of `l` that `dropped` names (each once).
void drop_unheld(Ledger& l, std::vector<PlanSlot> to_drop) {
  std::erase_if(l.plan.slots, [&](const PlanSlot& s) {
    if (slot_is_held(l, s)) return false;
    auto it = std::ranges::find(to_drop, slot_key(s), slot_key);
    if (it == to_drop.end()) return false;
    to_drop.erase(it);
    return true;
  });
}

// Before a plan drops slots, slurmctld must have been seen holding the split last handed over: until
// then a job it starts on that split's new slots is not in the view yet, so nothing here waits for
// its launch, and on 22.05 the shrink's SIGHUP can land between the job's two launch RPCs
// (launch_watch.h; a node drained so at 256 nodes, docs/benchmarks.md). The job a grow was made for
// is started right when slurmctld takes it, the riskiest moment. Waits at most
// kSplitSeenWaitPeriods rounds' time (a split slurmctld keeps showing otherwise is resynced).
constexpr std::int64_t kSplitSeenWaitPeriods = 6;
bool last_split_seen_taken(const Round& r, const Ledger& shrunk) {
  const auto published = read_advertised_counts(r.ctx);
  if (!published || !r.slurm_view) return true;
  // The shrink is already handed over (a later round waiting for its confirmation).
  if (node::same_counts(*published, node_advertisement(r.ctx, shrunk, r.state.slurm_uncounted, r.state.slurm_total)))
    return true;
  if (r.started_at - r.state.split_handed_over_at >= kSplitSeenWaitPeriods * r.ctx.policy->planner.period_s)
    return true;
  if (!node::view_shows_last_handover(*r.slurm_view, r.state, r.handovers_when_viewed)) return false;
  return node::same_counts(node::split_of(*r.slurm_view), *published);
}

// Phase 2: shrink first. Advertise without the dropped slots (they stay claimable in the ledger)
// and wait until slurmctld has taken the split and every allocation has its claim. False: not
// confirmed yet.
Result<bool> shrink_and_confirm(Round& r, const Ledger& committed, const PlanChoice& choice) {
  Ledger shrunk = committed;
  drop_unheld(shrunk, choice.dropped);
  if (!last_split_seen_taken(r, shrunk)) {
    r.result.notes.push_back("slurmctld has not shown the last split yet: no slot is dropped before it does");
    return false;
  }
  if (auto ok = node::publish(r.ctx, r.state, shrunk, r.result); !ok)
    return std::unexpected(ok.error().within(r.where));
  crash_point("planner.after_shrink_published");
  if (!node::wait_until_slurm_caught_up(r.ctx, r.state, choice.dropped, r.slurm_view, r.handovers_when_viewed)) {
    r.result.shrink_confirmed = false;
    r.result.notes.push_back("shrink not yet confirmed by slurmctld; dropped slots stay claimable");
    return false;
  }
  crash_point("planner.after_shrink_confirmed");
  return true;
}

// Whether every slot of `wanted` still fits where phase 1 put it.
bool still_fits(const Ledger& l, const std::vector<PlanSlot>& wanted) {
  auto layouts = node::layouts_of(l, [](const PlanSlot&) { return true; });
  if (!layouts) return false;
  bool fits = true;
  for (const auto& w : wanted)
    for (std::size_t g = 0; g < l.gpus.size(); ++g)
      if (l.gpus[g].index == w.gpu) {
        const Profile* p = (*layouts)[g].model().find_profile(w.profile);
        if (p) (*layouts)[g].take_mode_of(*p);
        fits = fits && p != nullptr && (*layouts)[g].place(*p, w.placement).has_value();
      }
  return fits;
}

// Phase 3: free the dropped slots nobody claimed and grow into the plan phase 1 chose. Planning
// again around the kept slots could put a dropped slot right back, and the next round would drop
// it again, forever; only when claims changed the picture while the round waited is it planned
// around what is there now.
Result<Ledger> grow(Round& r, const PlanChoice& choice) {
  return r.ctx.ledger->update([&](Ledger& l) -> Result<void> {
    drop_unheld(l, choice.dropped);
    auto kept = unheld(l);
    auto wanted = minus(choice.chosen, kept);
    if (still_fits(l, wanted)) {
      for (auto& w : wanted) l.plan.slots.push_back(w);
    } else {
      auto extra = desired_slots(l, r.parts, r.demand, kept, r.state.slurm_total, r.state.gpus_without_mig,
                                 r.state.gpus_served_whole);
      if (!extra) return std::unexpected(extra.error());
      for (auto& x : extra->slots) l.plan.slots.push_back(x);
    }
    ++l.plan.generation;
    return {};
  });
}

// The MIG modes this round's demand asks of the GPUs a partition's "on_demand" steers
// (mig_mode_on_demand.h). The next round's reconcile switches them, each once it is empty; until
// then this round plans as the last one chose.
void choose_mig_modes_for_demand(Round& r) {
  if (r.state.gpus_on_demand.empty()) {
    r.state.mig_on_demand = {};
    return;
  }
  auto l = r.ctx.ledger->load();
  if (!l) return;
  const Ledger view = planning_view(*l);
  auto layouts = node::layouts_of(view, [&](const PlanSlot& s) { return slot_is_held(view, s); });
  if (!layouts) return;
  std::vector<OnDemandGpu> gpus;
  for (std::size_t g = 0; g < view.gpus.size(); ++g) {
    const int index = view.gpus[g].index;
    if ((*layouts)[g].model().partitioning != Partitioning::mig) continue;
    gpus.push_back({index, (*layouts)[g], !r.state.gpus_found_without_mig.contains(index),
                    r.state.gpus_on_demand.contains(index)});
  }
  const bool whole_offered = !r.ctx.access || r.ctx.access->whole_gpus_unconfinable().empty();
  auto targets =
      choose_mig_modes_on_demand(gpus, r.demand, r.state.mig_on_demand, whole_offered, r.ctx.backend->gpu_links());
  for (const auto& n : targets.notes) r.result.notes.push_back(n);
  if (!targets.whole.empty() || !targets.partitioned.empty())
    r.result.notes.push_back(fmt::format("mig_mode on_demand: pending jobs want GPU(s) [{}] whole and [{}] in MIG mode",
                                         fmt::join(targets.whole, ", "), fmt::join(targets.partitioned, ", ")));
  r.state.mig_on_demand = std::move(targets);
}

// Without demand the safe move is to keep the current plan; the advertisement follows the ledger.
PlannerRoundResult publish_as_is(Round& r) {
  auto l = r.ctx.ledger->load();
  if (l) (void)node::publish(r.ctx, r.state, *l, r.result);
  return r.result;
}

// Phases 1 to 3 of a round: plan, shrink, grow (planner.h says why in that order).
Result<PlannerRoundResult> replan(Round& r, const Ledger& before) {
  PlanChoice choice;
  auto committed = commit_plan_after_idle(r, choice, commit_plan(r, choice));
  if (!committed) return std::unexpected(committed.error().within(r.where));
  if (choice.idle_let_go > 0) return publish_as_is(r);
  if (committed->plan.generation != before.plan.generation) crash_point("planner.after_plan_commit");
  if (choice.dropped.empty()) {
    if (auto ok = node::publish(r.ctx, r.state, *committed, r.result); !ok)
      return std::unexpected(ok.error().within(r.where));
    prepare_settled_plan(r.ctx, r.result);
    return r.result;
  }
  auto confirmed = shrink_and_confirm(r, *committed, choice);
  if (!confirmed) return std::unexpected(confirmed.error());
  if (!*confirmed) return r.result;
  auto grown = grow(r, choice);
  if (!grown) return std::unexpected(grown.error().within(r.where));
  crash_point("planner.after_grow_commit");
  if (auto ok = node::publish(r.ctx, r.state, *grown, r.result); !ok)
    return std::unexpected(ok.error().within(r.where));
  prepare_settled_plan(r.ctx, r.result);
  return r.result;
}

}  // namespace

Result<PlannerRoundResult> run_planner_round(NodeContext& ctx, PlannerState& state) {
  Round r{ctx, state, fmt::format("vgpu: planner: node {}", ctx.node), ctx.now(), {}, {}, {}, {}};
  auto before = load_with_classes(r);
  if (!before) return std::unexpected(before.error());
  if (auto settled = settle_node(r); !settled) return std::unexpected(settled.error());
  // A stop asked for while released instances were scrubbed: the plan and the advertisement stay
  // as they are, as they would between two rounds.
  if (ctx.stop_requested()) {
    r.result.notes.push_back("stopping: the plan is left as it is");
    return r.result;
  }
  r.handovers_when_viewed = state.handovers;
  r.slurm_view = learn_from_slurm(r);
  auto pending = ctx.slurm->pending_jobs();
  if (!pending) {
    r.result.notes.push_back("demand unknown, plan kept: " + pending.error().message);
    return publish_as_is(r);
  }
  for (const auto& e : pending->errors) r.result.notes.push_back(e);
  r.parts = node_partitions(*ctx.policy, ctx.node);
  r.demand = node_demand(ctx, state, *pending, r.parts, r.result.notes);
  if (!r.demand.empty()) state.demand_last_seen = r.started_at;
  choose_mig_modes_for_demand(r);
  auto confirmed = node::released_capacity_confirmed(ctx, state, r.slurm_view, r.handovers_when_viewed, r.result);
  if (!confirmed) return std::unexpected(confirmed.error().within(r.where));
  if (!*confirmed) return r.result;
  return replan(r, *before);
}

}  // namespace vgpu
