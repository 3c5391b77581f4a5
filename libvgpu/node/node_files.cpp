// The node's contract files with the gres plugin (formats in contract/ and
// docs/slurm.md): advertisement.json and jobs/<id>.json, always replaced atomically.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "node_model.h"
#include "vgpu/contract/advertisement.h"
#include "vgpu/contract/atomic_file.h"
#include "vgpu/contract/job_record.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/node_state.h"

namespace vgpu {
namespace {

// The plugin reads these files; they are 0644 (the state directory itself is 0700).
Result<void> write_file_atomically(const std::string& dir, const std::string& name, const std::string& text,
                                   Durability durability = Durability::power_cut) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail(ErrorCode::io, fmt::format("mkdir {}: {}", dir, std::strerror(errno)));
  return contract::atomic_replace(posix_file_system(), dir, name, text,
                                  durability == Durability::power_cut
                                      ? contract::ReplaceOptions::durable_file(0644)
                                      : contract::ReplaceOptions::rebuildable_file(0644));
}

}  // namespace

// A shared instance or slot counts its shares: Slurm hands out each share as one unit.
std::map<std::string, int> advertised_counts(const Ledger& ledger) {
  std::map<std::string, int> counts;
  for (const auto& inst : ledger.instances)
    if (inst.job && !inst.adopted) ++counts[inst.profile];
  for (const auto& group : ledger.share_groups)
    if (std::ranges::none_of(ledger.plan.slots,
                             [&](const PlanSlot& s) { return s.gpu == group.gpu && s.placement == group.placement; }))
      counts[group.type] += units_of(ledger, group.type);  // on its instance: the slot was consumed
  for (const auto& slot : ledger.plan.slots) counts[slot.profile] += units_of(ledger, slot.profile);
  return counts;
}

std::map<std::string, int> node_advertisement(const NodeContext& ctx, const Ledger& ledger,
                                              const std::map<std::string, int>& uncounted,
                                              std::optional<int> node_total) {
  auto counts = advertised_counts(ledger);
  for (const auto& [profile, n] : uncounted)
    if (auto it = counts.find(profile); it != counts.end()) it->second = std::max(0, it->second - n);
  if (ctx.policy != nullptr && ctx.viz != nullptr)
    for (const auto* part : node_partitions(*ctx.policy, ctx.node))
      for (const auto& pool : part->viz_pools) counts[pool.name] = pool.max_sessions;
  if (!node_total) return counts;
  std::set<std::string> share_types;
  for (const auto& [type, n] : counts)
    if (shares_of(ledger, type) > 0) share_types.insert(type);
  return cap_to_node_total(std::move(counts), held_by_jobs(ledger), share_types, *node_total);
}

int split_sum(const NodeGres& slurm) {
  int total = 0;
  for (const auto& [type, n] : slurm.configured) total += n;
  return total;
}

std::optional<int> node_total_of(const NodeGres& slurm) {
  if (!slurm.configured.contains("free")) return std::nullopt;
  return split_sum(slurm);
}

std::map<std::string, int> cap_to_node_total(std::map<std::string, int> counts, const std::map<std::string, int>& held,
                                             const std::set<std::string>& share_types, int total) {
  int over = -total;
  for (const auto& [type, n] : counts) over += n;
  auto spare = [&](const std::string& type) {
    auto h = held.find(type);
    return std::max(0, counts[type] - (h == held.end() ? 0 : h->second));
  };
  // Share types first, then the rest.
  for (bool shares : {true, false}) {
    while (over > 0) {
      std::string widest;
      for (const auto& [type, n] : counts)
        if (share_types.contains(type) == shares && spare(type) > 0 && (widest.empty() || spare(type) > spare(widest)))
          widest = type;
      if (widest.empty()) break;
      --counts[widest];  // one unit at a time, so the types with the most to spare give first
      --over;
    }
  }
  return counts;
}

bool vgpu_in_use_here(const NodeGres& slurm, const Ledger& ledger) {
  return !held_by_jobs(ledger).empty() || std::ranges::any_of(ledger.instances, &LedgerInstance::adopted) ||
         std::ranges::any_of(slurm.used, [](const auto& used) { return used.second > 0; });
}

std::map<std::string, int> held_by_jobs(const Ledger& ledger) {
  std::map<std::string, int> held;
  for (const auto& inst : ledger.instances)
    if (inst.job && !inst.adopted) ++held[inst.profile];
  for (const auto& slot : ledger.plan.slots)
    if (slot.claimed_by_job) ++held[slot.profile];
  for (const auto& group : ledger.share_groups) held[group.type] += static_cast<int>(group.holders.size());
  return held;
}

std::map<std::string, int> uncounted_by_slurm(const Ledger& ledger, const NodeGres& slurm) {
  std::map<std::string, int> uncounted;
  for (const auto& [profile, n] : held_by_jobs(ledger)) {
    auto used = slurm.used.find(profile);
    int counted = used == slurm.used.end() ? 0 : used->second;
    if (n > counted) uncounted[profile] = n - counted;
  }
  return uncounted;
}

// Every type the node's partitions offer is listed, at 0 when none is placeable. slurmctld keeps
// the last count of a type a registration leaves out, and a slurmd started while a class or share
// type is at 0 knows that type only from this file (the plugin knows the builtin catalog's
// profiles itself): without it, a count slurmctld took earlier would stay forever and the
// planner's shrink would never be confirmed.
Result<void> write_advertisement(const NodeContext& ctx, std::uint64_t generation,
                                 const std::map<std::string, int>& counts) {
  contract::Advertisement adv{ctx.node, generation, {}};
  for (const auto& [profile, n] : counts)
    if (n > 0) adv.counts.emplace(profile, static_cast<std::uint64_t>(n));
  if (ctx.policy != nullptr)
    for (const auto* part : node_partitions(*ctx.policy, ctx.node)) {
      for (const auto& type : part->profiles) adv.counts.try_emplace(type, 0);
      for (const auto& [model, types] : part->profiles_by_model)
        for (const auto& type : types) adv.counts.try_emplace(type, 0);
    }
  return within(write_file_atomically(ctx.node_dir(), "advertisement.json", contract::render_advertisement(adv)),
                fmt::format("node {}: advertisement", ctx.node));
}

Result<std::map<std::string, int>> read_advertised_counts(const NodeContext& ctx) {
  const std::string path = contract::advertisement_path(ctx.state_dir, ctx.node);
  auto text = contract::read_small_file(path);
  if (!text) return std::unexpected(text.error());
  auto adv = contract::parse_advertisement(*text, ctx.node);
  if (!adv) return std::unexpected(adv.error().within(path));
  std::map<std::string, int> counts;  // placeable types only: the zeros are for slurmd
  for (const auto& [profile, n] : adv->counts)
    if (n > 0) counts[profile] = static_cast<int>(n);
  return counts;
}

Result<contract::JobRecord> job_record_of(const Ledger& ledger, JobId job,
                                          const std::vector<LedgerInstance>& instances) {
  contract::JobRecord record{job, {}, ""};
  for (const auto& inst : instances) {
    auto model = node::model_of(ledger, inst.gpu);
    if (!model) return std::unexpected(model.error().within(fmt::format("job {}", job)));
    const Profile* p = (*model)->find_profile(inst.profile);
    if (!p)
      return fail(ErrorCode::internal, fmt::format("job {}: GPU {}: {} is not a profile of {}", job, inst.gpu,
                                                   inst.profile, (*model)->name));
    contract::MigInstance r;
    r.profile = p->hardware_name();
    r.mig_uuid = inst.mig_uuid;
    r.gpu = static_cast<std::uint64_t>(inst.gpu);
    r.placement = contract::SlicePlacement{static_cast<std::uint64_t>(inst.placement.start),
                                           static_cast<std::uint64_t>(inst.placement.size)};
    r.model = (*model)->name;
    r.memory_mib = static_cast<std::uint64_t>(p->memory_mib);
    r.compute_slices = static_cast<std::uint64_t>(p->compute_slices);
    r.model_compute_slices = static_cast<std::uint64_t>((*model)->compute_slices);
    record.instances.push_back(std::move(r));
  }
  return record;
}

// Not fsynced: a power cut ends the job, and the instances the record names do not survive it either.
Result<void> write_job_record(const NodeContext& ctx, const contract::JobRecord& record) {
  return within(write_file_atomically(ctx.node_dir() + "/jobs", fmt::format("{}.json", record.job_id),
                                      contract::render_job_record(record), Durability::process_crash),
                fmt::format("job {}: job record", record.job_id));
}

}  // namespace vgpu
