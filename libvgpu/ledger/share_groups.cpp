#include "vgpu/ledger/share_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

namespace vgpu {
namespace {

// The share type `type` on GPU `gpu`: its profile, or nullptr when the GPU or the type is unknown
// there or the type is not a share type.
const Profile* share_type_on(const Ledger& ledger, const Catalog& catalog, int gpu, std::string_view type) {
  const LedgerGpu* g = ledger.find_gpu(gpu);
  const GpuModel* model = g ? catalog.find_model(g->model) : nullptr;
  const Profile* p = model ? model->find_profile(type) : nullptr;
  return p && p->shares > 0 ? p : nullptr;
}

bool at(const ShareGroup& group, int gpu, Placement placement) {
  return group.gpu == gpu && group.placement == placement;
}

bool holds(const ShareGroup& group, JobId job) {
  return std::ranges::any_of(group.holders, [&](const ShareHolder& h) { return h.job == job; });
}

// The live instance a group stands on: made for its type, not released, no owning job.
std::optional<std::size_t> live_instance_at(const Ledger& ledger, const ShareGroup& group) {
  for (std::size_t i = 0; i < ledger.instances.size(); ++i) {
    const auto& inst = ledger.instances[i];
    if (inst.gpu == group.gpu && inst.placement == group.placement && inst.profile == group.type && !inst.job &&
        !is_released(inst) && !is_idle(inst))
      return i;
  }
  return std::nullopt;
}

}  // namespace

int shares_of(const Ledger& ledger, std::string_view profile) {
  auto it = std::ranges::find_if(ledger.classes, [&](const GpuClass& c) { return c.name == profile; });
  return it == ledger.classes.end() ? 0 : it->shares;
}

int units_of(const Ledger& ledger, std::string_view profile) { return std::max(1, shares_of(ledger, profile)); }

bool slot_is_held(const Ledger& ledger, const PlanSlot& slot) {
  if (slot.claimed_by_job) return true;
  const ShareGroup* group = share_group_at(ledger, slot.gpu, slot.placement);
  return group != nullptr && group->type == slot.profile;
}

bool instance_is_held(const Ledger& ledger, const LedgerInstance& instance) {
  if (instance.job) return true;
  const ShareGroup* group = share_group_at(ledger, instance.gpu, instance.placement);
  return group != nullptr && group->type == instance.profile && !is_released(instance) && !is_idle(instance);
}

const LedgerInstance* share_group_instance(const Ledger& ledger, const ShareGroup& group) {
  auto i = live_instance_at(ledger, group);
  return i ? &ledger.instances[*i] : nullptr;
}

Result<void> adopt_idle_for_share_group(Ledger& ledger, int gpu, Placement placement) {
  const ShareGroup* group = share_group_at(ledger, gpu, placement);
  if (!group)
    return fail(ErrorCode::not_found, fmt::format("GPU {} slice {}: no share group there", gpu, placement.start));
  auto inst = std::ranges::find_if(ledger.instances, [&](const LedgerInstance& i) {
    return i.gpu == gpu && i.placement == placement && i.profile == group->type && is_idle(i);
  });
  auto slot = std::ranges::find_if(ledger.plan.slots, [&](const PlanSlot& s) {
    return s.gpu == gpu && s.placement == placement && s.profile == group->type && !s.claimed_by_job;
  });
  if (inst == ledger.instances.end() || slot == ledger.plan.slots.end())
    return fail(ErrorCode::not_found, fmt::format("GPU {} slice {}: no idle {} instance on a slot of the group", gpu,
                                                  placement.start, group->type));
  inst->state = InstanceState::ready;
  ledger.plan.slots.erase(slot);
  return {};
}

const ShareGroup* share_group_at(const Ledger& ledger, int gpu, Placement placement) {
  auto it = std::ranges::find_if(ledger.share_groups, [&](const ShareGroup& g) { return at(g, gpu, placement); });
  return it == ledger.share_groups.end() ? nullptr : &*it;
}

std::vector<std::string> share_group_users(const ShareGroup& group) {
  std::vector<const ShareHolder*> by_age;
  for (const auto& h : group.holders) by_age.push_back(&h);
  std::ranges::stable_sort(by_age, {}, [](const ShareHolder* h) { return h->since; });
  std::vector<std::string> users;
  for (const ShareHolder* h : by_age)
    if (std::ranges::find(users, h->user) == users.end()) users.push_back(h->user);
  return users;
}

std::vector<const ShareGroup*> share_groups_of_job(const Ledger& ledger, JobId job) {
  std::vector<const ShareGroup*> out;
  for (const auto& g : ledger.share_groups)
    if (holds(g, job)) out.push_back(&g);
  return out;
}

Result<void> claim_shares(Ledger& ledger, const Catalog& catalog, JobId job, const std::string& user,
                          std::string_view type, int count, bool across_users, std::int64_t now) {
  if (count < 1)
    return fail(ErrorCode::invalid_argument, fmt::format("job {}: {} shares of {}: must be >= 1", job, count, type));
  const auto have = static_cast<int>(
      std::ranges::count_if(ledger.share_groups, [&](const ShareGroup& g) { return g.type == type && holds(g, job); }));
  if (have >= count) return {};
  const ShareHolder holder{job, user, now};

  // Groups with room, the fullest first.
  std::vector<std::size_t> groups;
  for (std::size_t i = 0; i < ledger.share_groups.size(); ++i) {
    const auto& g = ledger.share_groups[i];
    const Profile* p = share_type_on(ledger, catalog, g.gpu, g.type);
    if (g.type != type || !p || holds(g, job) || static_cast<int>(g.holders.size()) >= p->shares) continue;
    if (!across_users && std::ranges::any_of(g.holders, [&](const ShareHolder& h) { return h.user != user; })) continue;
    groups.push_back(i);
  }
  std::ranges::stable_sort(groups, [&](std::size_t a, std::size_t b) {
    return ledger.share_groups[a].holders.size() > ledger.share_groups[b].holders.size();
  });
  // Slots no group holds: empty ones, then those on an idle instance, then those on a released one.
  std::vector<std::size_t> empty, on_idle, on_released;
  const auto backing = slot_backings(ledger);
  const auto idle = idle_backings(ledger);
  for (std::size_t i = 0; i < ledger.plan.slots.size(); ++i) {
    const auto& s = ledger.plan.slots[i];
    if (s.profile != type || s.claimed_by_job || share_group_at(ledger, s.gpu, s.placement)) continue;
    if (!share_type_on(ledger, catalog, s.gpu, type)) continue;
    (!backing[i] ? empty : idle[i] ? on_idle : on_released).push_back(i);
  }
  const std::size_t need = static_cast<std::size_t>(count - have);
  const std::size_t room = groups.size() + empty.size() + on_idle.size() + on_released.size();
  if (room < need)
    return fail(
        ErrorCode::no_capacity,
        fmt::format("job {}: wants {} x {} (one per instance), plan generation {} has room for {}{}{}", job, count,
                    type, ledger.plan.generation, room, have ? fmt::format(", {} already held by the job", have) : "",
                    across_users ? "" : fmt::format(" beside user {}'s shares or alone", user)));
  Ledger next = ledger;
  std::size_t taken = 0;
  for (std::size_t i : groups) {
    if (taken == need) break;
    next.share_groups[i].holders.push_back(holder);
    ++taken;
  }
  for (const auto* list : {&empty, &on_idle, &on_released})
    for (std::size_t i : *list) {
      if (taken == need) break;
      const auto& s = ledger.plan.slots[i];
      next.share_groups.push_back(ShareGroup{s.gpu, s.placement, s.profile, {holder}});
      ++taken;
    }
  if (auto ok = validate_share_groups(next, catalog); !ok)
    return fail(ErrorCode::conflict, fmt::format("job {}: claiming {} x {}: {}", job, count, type, ok.error().message));
  ledger = std::move(next);
  return {};
}

std::vector<ReleasedShare> release_shares(Ledger& ledger, JobId job, std::int64_t end_time,
                                          std::string_view end_reason) {
  std::vector<ReleasedShare> out;
  for (std::size_t i = 0; i < ledger.share_groups.size();) {
    auto& g = ledger.share_groups[i];
    auto h = std::ranges::find(g.holders, job, &ShareHolder::job);
    if (h == g.holders.end()) {
      ++i;
      continue;
    }
    const auto at = live_instance_at(ledger, g);
    LedgerInstance* inst = at ? &ledger.instances[*at] : nullptr;
    if (inst)
      ledger.new_history.push_back(HistoryRecord{job, h->user, g.gpu, g.type, g.placement, inst->mig_uuid, h->since,
                                                 end_time, std::string(end_reason)});
    g.holders.erase(h);
    ReleasedShare released{g.gpu, g.placement, g.holders.empty(), inst != nullptr};
    out.push_back(released);
    if (!released.last) {
      ++i;
      continue;
    }
    if (inst) {
      inst->state = InstanceState::scrubbing;
      ledger.plan.slots.push_back({inst->gpu, inst->profile, inst->placement, std::nullopt});
    }
    ledger.share_groups.erase(ledger.share_groups.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return out;
}

Result<void> validate_share_groups(const Ledger& ledger, const Catalog& catalog) {
  auto corrupt = [](std::string path, std::string message) { return fail(ErrorCode::corrupt, path + ": " + message); };
  for (std::size_t i = 0; i < ledger.plan.slots.size(); ++i) {
    const auto& s = ledger.plan.slots[i];
    if (s.claimed_by_job && share_type_on(ledger, catalog, s.gpu, s.profile))
      return corrupt(fmt::format("plan.slots[{}].claimed_by_job", i),
                     fmt::format("{}: a slot of share type {} is held through share_groups, not by one job",
                                 *s.claimed_by_job, s.profile));
  }
  for (std::size_t i = 0; i < ledger.instances.size(); ++i) {
    const auto& inst = ledger.instances[i];
    if (inst.job && share_type_on(ledger, catalog, inst.gpu, inst.profile))
      return corrupt(fmt::format("instances[{}].job", i),
                     fmt::format("{}: an instance of share type {} is held through share_groups, not by one job",
                                 *inst.job, inst.profile));
  }
  std::set<std::pair<int, Placement>> places;
  for (std::size_t i = 0; i < ledger.share_groups.size(); ++i) {
    const auto& g = ledger.share_groups[i];
    const std::string path = fmt::format("share_groups[{}]", i);
    const Profile* type = share_type_on(ledger, catalog, g.gpu, g.type);
    if (!type) return corrupt(path + ".type", fmt::format("{}: not a share type of GPU {}'s model", g.type, g.gpu));
    if (!places.insert({g.gpu, g.placement}).second)
      return corrupt(path + ".placement", fmt::format("{{{},{}}} on GPU {}: a second group at the same place",
                                                      g.placement.start, g.placement.size, g.gpu));
    if (g.holders.empty() || static_cast<int>(g.holders.size()) > type->shares)
      return corrupt(path + ".holders",
                     fmt::format("{} holders: {} has 1 to {} shares", g.holders.size(), g.type, type->shares));
    std::set<JobId> jobs;
    for (std::size_t h = 0; h < g.holders.size(); ++h)
      if (!jobs.insert(g.holders[h].job).second)
        return corrupt(fmt::format("{}.holders[{}].job", path, h),
                       fmt::format("{}: holds a second share of one instance", g.holders[h].job));
    const auto on_slot = std::ranges::count_if(ledger.plan.slots, [&](const PlanSlot& s) {
      return s.gpu == g.gpu && s.placement == g.placement && s.profile == g.type;
    });
    const auto on_instance = std::ranges::count_if(ledger.instances, [&](const LedgerInstance& inst) {
      return inst.gpu == g.gpu && inst.placement == g.placement && inst.profile == g.type && !inst.job &&
             !is_released(inst) && !is_idle(inst);
    });
    const bool stands_on_one = on_slot == 1 || (on_slot == 0 && on_instance == 1);
    if (!stands_on_one)
      return corrupt(
          path + ".placement",
          fmt::format("{{{},{}}} on GPU {}: stands on {} slot(s) and {} live instance(s) of {}; one of either",
                      g.placement.start, g.placement.size, g.gpu, on_slot, on_instance, g.type));
  }
  return {};
}

}  // namespace vgpu
