#include "partition_offers.h"

#include <fmt/format.h>

#include <algorithm>

#include "vgpu/base/text_split.h"
#include "vgpu/contract/names.h"
#include "vgpu/node/cluster_view_snapshot.h"
#include "vgpu/node/wide_booking.h"
#include "vgpu/policy/submit_table.h"

namespace vgpuctl {
namespace {

// "small (3g.40gb)", "quarter (1/4 of 1g.10gb)", "3g.40gb".
std::string type_on_model(const vgpu::GpuModel& model, const std::string& name) {
  const auto* profile = model.find_profile(name);
  if (profile == nullptr || profile->realizes.empty()) return name;
  if (profile->shares > 0) return fmt::format("{} (1/{} of {})", name, profile->shares, profile->realizes);
  return fmt::format("{} ({})", name, profile->realizes);
}

std::string free_list(const PartitionOffer& offer) {
  std::string out;
  for (const auto& [type, n] : offer.free_now)
    if (n > 0) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", type, n);
  return out.empty() ? "none" : out;
}

bool in_partition(const SlurmNode& node, std::string_view partition) {
  return std::ranges::find(node.partitions, partition) != node.partitions.end();
}

// One vgpu request of a job in one partition the job may run in.
std::string explain_request(const vgpu::PendingJob& job, const vgpu::GresRequest& request,
                            const vgpu::PartitionPolicy& partition, const vgpu::Catalog& catalog,
                            const SlurmNodes& nodes) {
  const auto what = fmt::format("vgpu:{}:{} in {}", request.type, request.count, partition.name);
  const auto types = vgpu::types_offered(partition, catalog);
  if (std::ranges::find(types, request.type) == types.end())
    return fmt::format("{}: {} does not offer {} (it offers {}): the job can never run there", what, partition.name,
                       request.type, fmt::join(types, ", "));
  int asked = 0;
  for (const auto& r : job.vgpu) asked += r.count;
  if (partition.max_instances_per_job && asked > *partition.max_instances_per_job)
    return fmt::format("{}: {} allows {} instances per job and the job asks for {}: it can never run there", what,
                       partition.name, *partition.max_instances_per_job, asked);
  int in_it = 0, usable = 0;
  std::vector<std::string> with_room;
  for (const auto& node : nodes.nodes) {
    if (!in_partition(node, partition.name)) continue;
    ++in_it;
    if (!vgpu::usable_state(node.state)) continue;
    ++usable;
    const auto free = node.free.find(request.type);
    if (free != node.free.end() && free->second >= request.count)
      with_room.push_back(fmt::format("{} ({} free)", node.name, free->second));
  }
  if (usable == 0)
    return fmt::format("{}: none of the partition's {} vgpu node(s) can start a job now (down, drained or reserved)",
                       what, in_it);
  if (static_cast<int>(with_room.size()) >= job.nodes)
    return fmt::format("{}: {} {} room for it now: the job waits for Slurm's scheduler ({}), not for a layout", what,
                       fmt::join(with_room, ", "), with_room.size() == 1 ? "has" : "have", job.reason);
  return fmt::format(
      "{}: {} of the {} node(s) it needs {} {} x {} free now. The node planners make {} on a GPU with room "
      "for it within a round (5 s by default); while every GPU of the partition is full of other jobs' "
      "instances, the job waits for some of them to end",
      what, with_room.size(), job.nodes, with_room.size() == 1 ? "has" : "have", request.count, request.type,
      request.type);
}

}  // namespace

SlurmNodes parse_slurm_nodes(std::string_view scontrol_output) {
  SlurmNodes out;
  for (auto line : vgpu::split_view(scontrol_output, '\n')) {
    if (line.empty() || line.find(vgpu::kVgpuGresMark) == std::string_view::npos) continue;  // a node without vgpu
    auto state = vgpu::parse_scontrol_nodes(line);
    auto gres = vgpu::parse_scontrol_node(line, vgpu::contract::kGresName);
    if (state.nodes.size() != 1 || !gres) {
      out.errors.push_back(!gres ? gres.error().message
                                 : (state.errors.empty() ? "a node line without NodeName or State" : state.errors[0]));
      continue;
    }
    SlurmNode node;
    node.name = state.nodes[0].name;
    node.partitions = state.nodes[0].partitions;
    node.state = state.nodes[0].state;
    for (const auto& [type, n] : gres->configured) {
      if (vgpu::contract::is_reserved_type(type)) continue;  // padding (docs/slurm.md): never a job's
      const auto used = gres->used.find(type);
      node.free[type] = n - (used == gres->used.end() ? 0 : used->second);
    }
    out.nodes.push_back(std::move(node));
  }
  return out;
}

PartitionOffer partition_offer(const vgpu::PartitionPolicy& partition, const vgpu::Catalog& catalog,
                               const SlurmNodes& nodes) {
  PartitionOffer offer;
  offer.partition = partition.name;
  offer.max_per_job = partition.max_instances_per_job;
  offer.max_per_user = partition.max_instances_per_user;
  for (const auto& model : catalog.models()) {
    ModelOffer m;
    m.model = model.name;
    for (const auto& name : partition.allowed_profiles_for(model)) m.types.push_back(type_on_model(model, name));
    if (!m.types.empty()) offer.models.push_back(std::move(m));
  }
  for (const auto& pool : partition.viz_pools) offer.viz_pools.push_back(pool.name);
  for (const auto& node : nodes.nodes) {
    if (!in_partition(node, partition.name)) continue;
    ++offer.nodes;
    if (!vgpu::usable_state(node.state)) continue;
    ++offer.usable_nodes;
    for (const auto& [type, n] : node.free) offer.free_now[type] += std::max(0, n);
  }
  return offer;
}

std::vector<std::string> describe_offer(const PartitionOffer& offer) {
  std::vector<std::string> lines;
  std::string caps;
  if (offer.max_per_job) caps += fmt::format(", at most {} instances per job", *offer.max_per_job);
  if (offer.max_per_user) caps += fmt::format(", {} per user", *offer.max_per_user);
  lines.push_back(fmt::format("partition {}: {} vgpu node(s), {} can start jobs now{}", offer.partition, offer.nodes,
                              offer.usable_nodes, caps));
  for (const auto& m : offer.models) lines.push_back(fmt::format("  on {}: {}", m.model, fmt::join(m.types, ", ")));
  if (!offer.viz_pools.empty()) lines.push_back(fmt::format("  desktops: {}", fmt::join(offer.viz_pools, ", ")));
  lines.push_back(
      fmt::format("  free now: {} (any other type offered is made when a job asks for it)", free_list(offer)));
  return lines;
}

std::vector<std::string> explain_pending(const vgpu::PendingJob& job, const vgpu::PolicyFile& policy,
                                         const vgpu::Catalog& catalog, const SlurmNodes& nodes) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("job {} ({}) pends in {}: Slurm's reason: {}", job.id, job.user,
                              fmt::join(job.partitions, ", "), job.reason));
  if (job.vgpu.empty()) {
    lines.push_back("it asks for no vgpu: slurm-vgpu has no part in its wait");
    return lines;
  }
  for (const auto& name : job.partitions) {
    const auto* partition = policy.partition(name);
    if (partition == nullptr) {
      lines.push_back(
          fmt::format("{}: no vgpu policy, so no node there serves vgpu (`vgpuctl offers` lists the "
                      "partitions that do)",
                      name));
      continue;
    }
    for (const auto& request : job.vgpu) lines.push_back(explain_request(job, request, *partition, catalog, nodes));
  }
  return lines;
}

}  // namespace vgpuctl
