#include "vgpu/ledger/ledger.h"

#include <optional>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "vgpu/core/gpu_layout.h"
#include "vgpu/ledger/share_groups.h"

namespace vgpu {

std::string_view to_string(InstanceState state) {
  switch (state) {
    case InstanceState::creating: return "creating";
    case InstanceState::ready: return "ready";
    case InstanceState::scrubbing: return "scrubbing";
    case InstanceState::quarantined: return "quarantined";
    case InstanceState::destroying: return "destroying";
    case InstanceState::idle: return "idle";
  }
  return "?";
}

std::string_view to_string(VmState state) {
  switch (state) {
    case VmState::starting: return "starting";
    case VmState::running: return "running";
    case VmState::stopping: return "stopping";
  }
  return "?";
}

std::optional<InstanceState> parse_instance_state(std::string_view text) {
  for (auto s : {InstanceState::creating, InstanceState::ready, InstanceState::scrubbing, InstanceState::quarantined,
                 InstanceState::destroying, InstanceState::idle})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

std::optional<VmState> parse_vm_state(std::string_view text) {
  for (auto s : {VmState::starting, VmState::running, VmState::stopping})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

std::string_view to_string(DifferenceKind kind) {
  switch (kind) {
    case DifferenceKind::missing_gpu: return "missing GPU";
    case DifferenceKind::unknown_gpu: return "unknown GPU";
    case DifferenceKind::gpu_mismatch: return "GPU mismatch";
    case DifferenceKind::leaked_instance: return "leaked instance";
    case DifferenceKind::missing_instance: return "missing instance";
    case DifferenceKind::mismatched_instance: return "mismatched instance";
  }
  return "?";
}

const LedgerGpu* Ledger::find_gpu(int index) const {
  auto it = std::ranges::find(gpus, index, &LedgerGpu::index);
  return it == gpus.end() ? nullptr : &*it;
}

namespace {

std::string show(Placement p) { return fmt::format("{{{},{}}}", p.start, p.size); }

std::unexpected<Error> corrupt(std::string path, std::string message) {
  return fail(ErrorCode::corrupt, path + ": " + message);
}

// Places one instance or slot on its GPU's layout, naming the field on failure.
Result<void> place_on(std::map<int, GpuLayout>& layouts, const Ledger& ledger, const Catalog& catalog,
                      const std::string& path, int gpu, const std::string& profile_name, Placement placement) {
  const LedgerGpu* g = ledger.find_gpu(gpu);
  if (!g) return corrupt(path + ".gpu", fmt::format("{}: no such GPU in gpus[]", gpu));
  const GpuModel* model = catalog.find_model(g->model);
  if (!model) return corrupt(path + ".gpu", fmt::format("{}: unknown model {}", gpu, g->model));
  const Profile* profile = model->find_profile(profile_name);
  if (!profile)
    return corrupt(path + ".profile", fmt::format("{}: not a profile of {} (known: {})", profile_name, model->name,
                                                  model->profile_names()));
  auto [it, inserted] = layouts.try_emplace(gpu, *model);
  (void)inserted;
  it->second.take_mode_of(*profile);
  if (auto why = it->second.why_not(*profile, placement))
    return corrupt(path + ".placement", fmt::format("{} on GPU {}: {}", show(placement), gpu, *why));
  (void)it->second.place(*profile, placement);
  return {};
}

}  // namespace

bool is_released(const LedgerInstance& inst) {
  return !inst.job && (inst.state == InstanceState::scrubbing || inst.state == InstanceState::destroying);
}

bool is_idle(const LedgerInstance& inst) { return !inst.job && inst.state == InstanceState::idle; }

std::vector<std::optional<std::size_t>> idle_backings(const Ledger& ledger) {
  auto backing = slot_backings(ledger);
  for (std::size_t s = 0; s < backing.size(); ++s)
    if (backing[s] && !(is_idle(ledger.instances[*backing[s]]) &&
                        ledger.instances[*backing[s]].profile == ledger.plan.slots[s].profile))
      backing[s].reset();
  return backing;
}

std::vector<std::optional<std::size_t>> slot_backings(const Ledger& ledger) {
  std::vector<std::optional<std::size_t>> backing(ledger.plan.slots.size());
  std::vector<bool> taken(ledger.instances.size(), false);
  for (std::size_t s = 0; s < ledger.plan.slots.size(); ++s) {
    const auto& slot = ledger.plan.slots[s];
    for (std::size_t i = 0; i < ledger.instances.size(); ++i) {
      const auto& inst = ledger.instances[i];
      if (taken[i] || !(is_released(inst) || is_idle(inst)) || inst.gpu != slot.gpu || inst.placement != slot.placement)
        continue;
      taken[i] = true;
      backing[s] = i;
      break;
    }
  }
  return backing;
}

namespace {
// The catalog a ledger's names are checked against: `base` plus the ledger's own classes, or
// nothing to build when it has none.
std::optional<Catalog> catalog_with_classes(const Ledger& ledger, const Catalog& base) {
  if (ledger.classes.empty()) return std::nullopt;
  return Catalog::with_classes(base, ledger.classes);
}
}  // namespace

Result<void> validate(const Ledger& ledger, const Catalog& base) {
  // Names of the ledger's own classes are checked as the profiles they realize.
  const std::optional<Catalog> own = catalog_with_classes(ledger, base);
  const Catalog& catalog = own ? *own : base;
  if (ledger.node.empty()) return corrupt("node", "must not be empty");
  std::set<int> gpu_indexes;
  std::set<std::string> gpu_uuids;
  for (std::size_t i = 0; i < ledger.gpus.size(); ++i) {
    const auto& g = ledger.gpus[i];
    std::string path = fmt::format("gpus[{}]", i);
    if (!gpu_indexes.insert(g.index).second)
      return corrupt(path + ".index", fmt::format("{}: duplicate GPU index", g.index));
    if (!gpu_uuids.insert(g.uuid).second) return corrupt(path + ".uuid", fmt::format("{}: duplicate GPU uuid", g.uuid));
    if (!catalog.find_model(g.model))
      return corrupt(path + ".model", fmt::format("{}: unknown model (known: {})", g.model, catalog.model_names()));
  }

  std::map<int, GpuLayout> layouts;
  std::set<std::string> mig_uuids;
  std::set<std::pair<int, int>> gi_ids;
  // A backed slot and the instance backing it are one space: the slot is placed below.
  std::vector<bool> backs(ledger.instances.size(), false);
  for (const auto& b : slot_backings(ledger))
    if (b) backs[*b] = true;
  for (std::size_t i = 0; i < ledger.instances.size(); ++i) {
    const auto& inst = ledger.instances[i];
    std::string path = fmt::format("instances[{}]", i);
    if (!backs[i])
      if (auto r = place_on(layouts, ledger, catalog, path, inst.gpu, inst.profile, inst.placement); !r) return r;
    if (!mig_uuids.insert(inst.mig_uuid).second)
      return corrupt(path + ".mig_uuid", fmt::format("{}: duplicate instance", inst.mig_uuid));
    if (!gi_ids.insert({inst.gpu, inst.gpu_instance_id}).second)
      return corrupt(path + ".gpu_instance_id",
                     fmt::format("{}: duplicate instance on GPU {}", inst.gpu_instance_id, inst.gpu));
    if (!inst.job && !inst.user.empty())
      return corrupt(path + ".user", fmt::format("{}: set but the instance has no job", inst.user));
    if (inst.job && inst.orphaned) return corrupt(path + ".orphaned", "true but the instance has an owning job");
    if (inst.job && inst.state == InstanceState::idle)
      return corrupt(path + ".state", fmt::format("idle but the instance has an owning job ({})", *inst.job));
  }

  std::set<std::string> domains;
  for (std::size_t i = 0; i < ledger.vms.size(); ++i) {
    const auto& vm = ledger.vms[i];
    if (!domains.insert(vm.domain).second)
      return corrupt(fmt::format("vms[{}].domain", i), fmt::format("{}: duplicate", vm.domain));
  }

  // Slots are advertised in the space the instances leave free, so both must fit together.
  for (std::size_t i = 0; i < ledger.plan.slots.size(); ++i) {
    const auto& slot = ledger.plan.slots[i];
    std::string path = fmt::format("plan.slots[{}]", i);
    if (auto r = place_on(layouts, ledger, catalog, path, slot.gpu, slot.profile, slot.placement); !r) return r;
  }
  return validate_share_groups(ledger, catalog);
}

std::vector<const LedgerInstance*> instances_of_job(const Ledger& ledger, JobId job) {
  std::vector<const LedgerInstance*> out;
  for (const auto& inst : ledger.instances)
    if (inst.job == job) out.push_back(&inst);
  return out;
}

Result<void> claim_slots(Ledger& ledger, JobId job, std::string_view profile, int count) {
  if (count < 1) return fail(ErrorCode::invalid_argument, fmt::format("job {}: count {}: must be >= 1", job, count));
  std::vector<PlanSlot*> mine, idle, free, backed;
  const auto backing = slot_backings(ledger);
  const auto idle_backing = idle_backings(ledger);
  for (std::size_t i = 0; i < ledger.plan.slots.size(); ++i) {
    auto& slot = ledger.plan.slots[i];
    if (slot.profile != profile) continue;
    if (slot.claimed_by_job == job) {
      mine.push_back(&slot);
    } else if (!slot.claimed_by_job) {
      if (!backing[i]) free.push_back(&slot);
      else if (idle_backing[i])
        idle.push_back(&slot);
      else
        backed.push_back(&slot);
    }
  }
  // An idle instance is ready now; a released one makes the prolog wait for a scrub: last resort.
  free.insert(free.begin(), idle.begin(), idle.end());
  free.insert(free.end(), backed.begin(), backed.end());
  auto have = static_cast<int>(mine.size());
  if (have >= count) return {};
  auto need = static_cast<std::size_t>(count - have);
  if (free.size() < need)
    return fail(ErrorCode::no_capacity,
                fmt::format("job {}: wants {} x {}, plan generation {} has {} unclaimed{}", job, count, profile,
                            ledger.plan.generation, free.size(),
                            have ? fmt::format(" and {} already claimed by the job", have) : ""));
  for (std::size_t i = 0; i < need; ++i) free[i]->claimed_by_job = job;
  return {};
}

int release_claims(Ledger& ledger, JobId job) {
  int released = 0;
  for (auto& slot : ledger.plan.slots)
    if (slot.claimed_by_job == job) {
      slot.claimed_by_job.reset();
      ++released;
    }
  return released;
}

Result<void> add_instance(Ledger& ledger, LedgerInstance instance, const Catalog& catalog) {
  Ledger next = ledger;
  // The slot the instance is made in: claimed by its job, or by its share group (which stays, now
  // on the instance).
  const ShareGroup* group = share_group_at(next, instance.gpu, instance.placement);
  if (instance.job || (group && group->type == instance.profile)) {
    auto slot = std::ranges::find_if(next.plan.slots, [&](const PlanSlot& s) {
      return s.claimed_by_job == instance.job && s.gpu == instance.gpu && s.profile == instance.profile &&
             s.placement == instance.placement;
    });
    if (slot != next.plan.slots.end()) next.plan.slots.erase(slot);
  }
  std::string what = fmt::format("add instance {} ({} at {} on GPU {})", instance.mig_uuid, instance.profile,
                                 show(instance.placement), instance.gpu);
  next.instances.push_back(std::move(instance));
  if (auto r = validate(next, catalog); !r) return fail(ErrorCode::conflict, what + ": " + r.error().message);
  ledger = std::move(next);
  return {};
}

namespace {
// The instance (gpu, gpu_instance_id), or not_found naming it.
Result<std::vector<LedgerInstance>::iterator> find_instance(Ledger& ledger, int gpu, int gpu_instance_id) {
  auto it = std::ranges::find_if(
      ledger.instances, [&](const LedgerInstance& i) { return i.gpu == gpu && i.gpu_instance_id == gpu_instance_id; });
  if (it == ledger.instances.end())
    return fail(ErrorCode::not_found, fmt::format("GPU {} GPU-instance {}: not in the ledger", gpu, gpu_instance_id));
  return it;
}
}  // namespace

Result<void> adopt_idle_instance(Ledger& ledger, int gpu, int gpu_instance_id, JobId job, std::string user,
                                 std::int64_t now) {
  auto found = find_instance(ledger, gpu, gpu_instance_id);
  if (!found) return std::unexpected(found.error());
  auto it = *found;
  const std::string what = fmt::format("job {}: adopt instance {} ({} at {} on GPU {})", job, it->mig_uuid, it->profile,
                                       show(it->placement), gpu);
  if (!is_idle(*it))
    return fail(ErrorCode::conflict, fmt::format("{}: it is {}{}, not idle", what, to_string(it->state),
                                                 it->job ? fmt::format(" for job {}", *it->job) : ""));
  const auto index = static_cast<std::size_t>(it - ledger.instances.begin());
  const auto backing = slot_backings(ledger);
  for (std::size_t s = 0; s < backing.size(); ++s) {
    if (backing[s] != index) continue;
    const auto& slot = ledger.plan.slots[s];
    if (slot.claimed_by_job != job || slot.profile != it->profile)
      return fail(ErrorCode::conflict,
                  fmt::format("{}: its slot is {}", what,
                              slot.claimed_by_job ? fmt::format("claimed by job {}", *slot.claimed_by_job)
                                                  : std::string("not claimed by the job")));
    ledger.plan.slots.erase(ledger.plan.slots.begin() + static_cast<std::ptrdiff_t>(s));
    it->job = job;
    it->user = std::move(user);
    it->state = InstanceState::ready;
    it->created_at = now;
    return {};
  }
  return fail(ErrorCode::conflict, what + ": it backs no plan slot");
}

Result<int> adopt_idle_claims(Ledger& ledger, JobId job, const std::string& user, std::int64_t now) {
  Ledger next = ledger;
  int adopted = 0;
  for (;;) {  // each adoption consumes its slot, so the pairing is computed again
    const auto idle = idle_backings(next);
    std::optional<std::size_t> found;
    for (std::size_t s = 0; s < idle.size() && !found; ++s)
      if (idle[s] && next.plan.slots[s].claimed_by_job == job) found = idle[s];
    if (!found) break;
    const auto& inst = next.instances[*found];
    if (auto ok = adopt_idle_instance(next, inst.gpu, inst.gpu_instance_id, job, user, now); !ok)
      return std::unexpected(ok.error());
    ++adopted;
  }
  ledger = std::move(next);
  return adopted;
}

Result<void> quarantine_instance(Ledger& ledger, int gpu, int gpu_instance_id) {
  auto found = find_instance(ledger, gpu, gpu_instance_id);
  if (!found) return std::unexpected(found.error());
  auto it = *found;
  const auto index = static_cast<std::size_t>(it - ledger.instances.begin());
  const auto backing = slot_backings(ledger);
  for (std::size_t s = backing.size(); s-- > 0;)
    if (backing[s] == index) ledger.plan.slots.erase(ledger.plan.slots.begin() + static_cast<std::ptrdiff_t>(s));
  it->state = InstanceState::quarantined;
  return {};
}

Result<void> remove_instance(Ledger& ledger, int gpu, int gpu_instance_id) {
  auto found = find_instance(ledger, gpu, gpu_instance_id);
  if (!found) return std::unexpected(found.error());
  ledger.instances.erase(*found);
  return {};
}

Result<void> forget_vanished_instance(Ledger& ledger, int gpu, int gpu_instance_id, std::int64_t now) {
  auto found = find_instance(ledger, gpu, gpu_instance_id);
  if (!found) return std::unexpected(found.error());
  const auto& it = *found;
  if (it->job)
    ledger.new_history.push_back(HistoryRecord{*it->job, it->user, it->gpu, it->profile, it->placement, it->mig_uuid,
                                               it->created_at, now, "vanished"});
  ledger.instances.erase(it);
  return {};
}

bool names_job(const Ledger& ledger, JobId job) {
  return std::ranges::any_of(ledger.instances, [&](const LedgerInstance& i) { return i.job == job; }) ||
         std::ranges::any_of(ledger.plan.slots, [&](const PlanSlot& s) { return s.claimed_by_job == job; }) ||
         std::ranges::any_of(ledger.share_groups,
                             [&](const ShareGroup& g) {
                               return std::ranges::find(g.holders, job, &ShareHolder::job) != g.holders.end();
                             }) ||
         std::ranges::any_of(ledger.vms, [&](const VizVm& vm) { return vm.job == job; });
}

int retire_job(Ledger& ledger, JobId job, std::int64_t end_time, std::string_view end_reason) {
  int owned = 0;
  for (auto& inst : ledger.instances) {
    if (inst.job != job) continue;
    ledger.new_history.push_back(HistoryRecord{job, inst.user, inst.gpu, inst.profile, inst.placement, inst.mig_uuid,
                                               inst.created_at, end_time, std::string(end_reason)});
    inst.job.reset();
    inst.user.clear();
    inst.state = InstanceState::scrubbing;
    ledger.plan.slots.push_back({inst.gpu, inst.profile, inst.placement, std::nullopt});
    ++owned;
  }
  release_claims(ledger, job);
  return owned;
}

bool sync_classes(Ledger& ledger, const std::vector<GpuClass>& wanted) {
  std::vector<GpuClass> next = wanted;
  auto named = [&](const std::string& name) {
    return std::ranges::any_of(ledger.instances, [&](const LedgerInstance& i) { return i.profile == name; }) ||
           std::ranges::any_of(ledger.plan.slots, [&](const PlanSlot& s) { return s.profile == name; });
  };
  for (const auto& old : ledger.classes)
    if (std::ranges::find(next, old.name, &GpuClass::name) == next.end() && named(old.name)) next.push_back(old);
  std::ranges::sort(next, {}, &GpuClass::name);
  if (next == ledger.classes) return false;
  ledger.classes = std::move(next);
  return true;
}

bool is_uniform_gpu(const Ledger& ledger, const Catalog& catalog, int gpu) {
  const LedgerGpu* g = ledger.find_gpu(gpu);
  const GpuModel* model = g ? catalog.find_model(g->model) : nullptr;
  return model && model->partitioning == Partitioning::uniform;
}

bool exists_with_gpu_mode(const Ledger& ledger, const Catalog& catalog, int gpu, std::string_view profile) {
  if (is_uniform_gpu(ledger, catalog, gpu)) return true;
  const LedgerGpu* g = ledger.find_gpu(gpu);
  const GpuModel* model = g ? catalog.find_model(g->model) : nullptr;
  const Profile* p = model ? model->find_profile(profile) : nullptr;
  return p && p->whole_gpu;
}

Result<Ledger> rebuild_from_hardware(std::string node, const HardwareView& view, std::int64_t now,
                                     const Catalog& catalog) {
  Ledger ledger;
  ledger.node = std::move(node);
  for (const auto& g : view.gpus) {
    const GpuModel* model = catalog.find_model_for_product(g.model);
    if (!model)
      return fail(ErrorCode::not_found, fmt::format("rebuild: GPU {} ({}): model {} is not MIG-capable as far as we "
                                                    "know (known: {})",
                                                    g.index, g.uuid, g.model, catalog.model_names()));
    ledger.gpus.push_back({g.index, g.uuid, model->name, g.pci_bus_id});
  }
  for (const auto& h : view.instances)
    ledger.instances.push_back(LedgerInstance{h.gpu, h.profile, h.placement, h.gpu_instance_id, h.compute_instance_id,
                                              h.mig_uuid, std::nullopt, "", InstanceState::quarantined, now, true});
  if (auto r = validate(ledger, catalog); !r) return std::unexpected(r.error().within("rebuild: the hardware view"));
  return ledger;
}

std::vector<Difference> reconcile(const Ledger& ledger, const HardwareView& view, const Catalog& base) {
  const std::optional<Catalog> own = catalog_with_classes(ledger, base);
  const Catalog& catalog = own ? *own : base;
  // The hardware reports what a class realizes, under the hardware profile's name.
  auto hardware_name = [&](const LedgerInstance& inst) -> std::string {
    const LedgerGpu* g = ledger.find_gpu(inst.gpu);
    const GpuModel* m = g ? catalog.find_model(g->model) : nullptr;
    const Profile* p = m ? m->find_profile(inst.profile) : nullptr;
    return p ? p->hardware_name() : inst.profile;
  };
  std::vector<Difference> out;
  for (const auto& g : ledger.gpus) {
    auto hw = std::ranges::find(view.gpus, g.index, &HardwareGpu::index);
    if (hw == view.gpus.end()) {
      out.push_back({DifferenceKind::missing_gpu, g.index, std::nullopt,
                     fmt::format("ledger has {} ({}), hardware does not", g.uuid, g.model)});
      continue;
    }
    const GpuModel* hw_model = catalog.find_model_for_product(hw->model);
    std::string hw_model_name = hw_model ? hw_model->name : hw->model;
    if (hw->uuid != g.uuid || hw_model_name != g.model || hw->pci_bus_id != g.pci_bus_id)
      out.push_back({DifferenceKind::gpu_mismatch, g.index, std::nullopt,
                     fmt::format("ledger {} {} {} != hardware {} {} {}", g.uuid, g.model, g.pci_bus_id, hw->uuid,
                                 hw_model_name, hw->pci_bus_id)});
  }
  for (const auto& hw : view.gpus)
    if (!ledger.find_gpu(hw.index))
      out.push_back({DifferenceKind::unknown_gpu, hw.index, std::nullopt,
                     fmt::format("hardware has {} ({}), ledger does not", hw.uuid, hw.model)});

  for (const auto& inst : ledger.instances) {
    auto hw = std::ranges::find_if(view.instances, [&](const HardwareInstance& h) {
      return h.gpu == inst.gpu && h.gpu_instance_id == inst.gpu_instance_id;
    });
    if (hw == view.instances.end()) {
      out.push_back({DifferenceKind::missing_instance, inst.gpu, inst.gpu_instance_id,
                     fmt::format("ledger has {} ({} at {}, {}), hardware does not", inst.mig_uuid, inst.profile,
                                 show(inst.placement), to_string(inst.state))});
      continue;
    }
    if (hw->mig_uuid != inst.mig_uuid || hw->profile != hardware_name(inst) || hw->placement != inst.placement ||
        hw->compute_instance_id != inst.compute_instance_id)
      out.push_back({DifferenceKind::mismatched_instance, inst.gpu, inst.gpu_instance_id,
                     fmt::format("ledger {} {} at {} CI {} != hardware {} {} at {} CI {}", inst.mig_uuid, inst.profile,
                                 show(inst.placement), inst.compute_instance_id, hw->mig_uuid, hw->profile,
                                 show(hw->placement), hw->compute_instance_id)});
  }
  for (const auto& hw : view.instances) {
    bool known = std::ranges::any_of(ledger.instances, [&](const LedgerInstance& i) {
      return i.gpu == hw.gpu && i.gpu_instance_id == hw.gpu_instance_id;
    });
    // A uniform GPU's mode brings all its partitions at once, and MIG mode off brings the whole
    // GPU: those no job holds are free space.
    if (!known && !exists_with_gpu_mode(ledger, catalog, hw.gpu, hw.profile))
      out.push_back(
          {DifferenceKind::leaked_instance, hw.gpu, hw.gpu_instance_id,
           fmt::format("hardware has {} ({} at {}), ledger does not", hw.mig_uuid, hw.profile, show(hw.placement))});
  }
  return out;
}

}  // namespace vgpu
