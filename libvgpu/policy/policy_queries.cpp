// What the rest of the product asks a loaded policy: allowed profiles, nodes, GPUs, pools, and
// whether a request is within the partition's rules.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "policy_reader.h"

namespace vgpu {

std::string_view to_string(VizAttach attach) {
  switch (attach) {
    case VizAttach::mdev: return "mdev";
    case VizAttach::sriov_vf: return "sriov-vf";
    case VizAttach::mig_vgpu: return "mig-vgpu";
    case VizAttach::passthrough: return "passthrough";
    case VizAttach::none: return "none";
  }
  return "?";
}

std::string_view to_string(VizDisplay display) { return display == VizDisplay::vnc ? "vnc" : "spice"; }

std::string_view to_string(ScrubMode mode) { return mode == ScrubMode::required ? "required" : "optional"; }

std::string_view to_string(MigModePolicy mode) {
  switch (mode) {
    case MigModePolicy::partitioned: return "partitioned";
    case MigModePolicy::whole: return "whole";
    case MigModePolicy::on_demand: return "on_demand";
    case MigModePolicy::as_found: break;
  }
  return "as_found";
}

std::vector<std::string> PartitionPolicy::allowed_profiles_for(const GpuModel& model) const {
  std::vector<std::string> out;
  const std::vector<std::string>* listed = nullptr;
  switch (profile_rule) {
    case ProfileRule::every_profile: break;
    case ProfileRule::same_for_every_model: listed = &profiles; break;
    case ProfileRule::per_model: {
      auto it = profiles_by_model.find(model.name);
      if (it == profiles_by_model.end()) return out;
      listed = &it->second;
      break;
    }
  }
  for (const auto& p : model.profiles)
    if (listed ? std::ranges::find(*listed, p.name) != listed->end() : p.shares == 0) out.push_back(p.name);
  return out;
}

bool PartitionPolicy::allows_node(std::string_view node_name) const { return !nodes || nodes->matches(node_name); }

bool PartitionPolicy::allows_gpu(int index) const {
  if (index < 0) return false;
  return !gpus || std::ranges::binary_search(*gpus, index);
}

const VizPool* PartitionPolicy::find_viz_pool(std::string_view pool_name) const {
  auto it = std::ranges::find(viz_pools, pool_name, &VizPool::name);
  return it == viz_pools.end() ? nullptr : &*it;
}

Result<PlannerConfig> PartitionPolicy::planner_config_for(const GpuModel& model) const {
  auto allowed = allowed_profiles_for(model);
  if (allowed.empty())
    return fail(ErrorCode::invalid_argument, fmt::format("partition {}: does not use {} GPUs", name, model.name));
  return PlannerConfig{std::move(allowed), idle_layout};
}

const PartitionPolicy* PolicyFile::partition(std::string_view name) const {
  auto it = std::ranges::find(partitions, name, &PartitionPolicy::name);
  return it == partitions.end() ? nullptr : &*it;
}

std::vector<GpuClass> PolicyFile::site_types() const {
  std::vector<GpuClass> all = classes;
  all.insert(all.end(), share_types.begin(), share_types.end());
  return all;
}

const VizPool* PolicyFile::find_viz_pool(std::string_view pool_name) const {
  for (const auto& p : partitions)
    if (const auto* pool = p.find_viz_pool(pool_name)) return pool;
  return nullptr;
}

const VmImage* PolicyFile::image(std::string_view name) const {
  auto it = images.find(std::string(name));
  return it == images.end() ? nullptr : &it->second;
}

Result<void> validate_request(const PartitionPolicy& partition, const GpuModel& model, std::string_view profile,
                              int count) {
  std::vector<std::string> problems;
  auto allowed = partition.allowed_profiles_for(model);
  if (allowed.empty()) {
    problems.push_back(fmt::format("does not use {} GPUs", model.name));
  } else if (!model.find_profile(profile)) {
    problems.push_back(fmt::format("profile {}: unknown profile on {} (allowed here: {})", profile, model.name,
                                   fmt::join(allowed, ", ")));
  } else if (std::ranges::find(allowed, profile) == allowed.end()) {
    problems.push_back(
        fmt::format("profile {}: not allowed on {} (allowed: {})", profile, model.name, fmt::join(allowed, ", ")));
  }
  if (count < 1) problems.push_back(fmt::format("count {}: must be at least 1", count));
  else if (partition.max_instances_per_job && count > *partition.max_instances_per_job)
    problems.push_back(
        fmt::format("{} instances requested, at most {} per job", count, *partition.max_instances_per_job));
  if (problems.empty()) return {};
  return fail(ErrorCode::invalid_argument, fmt::format("partition {}: {}", partition.name, fmt::join(problems, "; ")));
}

namespace policy_detail {

IdlePlacement place_idle(const PartitionPolicy& partition, const GpuModel& model) {
  IdlePlacement out{GpuLayout(model), {}};
  auto allowed = partition.allowed_profiles_for(model);
  for (std::size_t i = 0; i < partition.idle_layout.size(); ++i) {
    const auto& name = partition.idle_layout[i];
    // The planner skips entries this model lacks or the partition keeps off it; so does this.
    const Profile* profile = model.find_profile(name);
    if (!profile || std::ranges::find(allowed, name) == allowed.end()) continue;
    if (auto where = out.layout.best_placement(*profile)) {
      (void)out.layout.place(*profile, *where);
      continue;
    }
    std::string why = out.layout.why_not(*profile, profile->placements.front()).value_or("");
    out.problems.push_back(
        IdleProblem{i, fmt::format("{} does not fit on an empty {} after the entries before it {}: {}", name,
                                   model.name, out.layout.describe(), why)});
  }
  return out;
}

}  // namespace policy_detail

Result<GpuLayout> place_idle_layout(const PartitionPolicy& partition, const GpuModel& model) {
  auto placed = policy_detail::place_idle(partition, model);
  if (placed.problems.empty()) return std::move(placed.layout);
  const auto& first = placed.problems.front();
  return fail(ErrorCode::no_capacity,
              fmt::format("partition {}: idle_layout[{}]: {}", partition.name, first.index, first.message));
}

}  // namespace vgpu
