// What a user asks before and after submitting: what each partition offers (every vgpu type the
// policy allows there, resolved per GPU model of the catalog, and what its nodes have free right
// now) and why a given vgpu job still pends. Pure: the policy, the catalog and Slurm's own text
// in, lines for a terminal out (`vgpuctl offers`, `vgpuctl why`).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/core/catalog.h"
#include "vgpu/node/slurm_text.h"
#include "vgpu/policy/policy.h"

namespace vgpuctl {

// One node as `scontrol -o -d show node` shows it: its partitions, its state, its vgpu counts.
struct SlurmNode {
  std::string name;
  std::vector<std::string> partitions;
  std::string state;
  std::map<std::string, int> free;  // type -> Gres= less GresUsed=, "free" padding left out
};
// Nodes without vgpu are left out; a line that does not parse is reported in `errors`.
struct SlurmNodes {
  std::vector<SlurmNode> nodes;
  std::vector<std::string> errors;
};
SlurmNodes parse_slurm_nodes(std::string_view scontrol_output);

struct ModelOffer {
  std::string model;               // "H100-80GB"
  std::vector<std::string> types;  // "3g.40gb", "small (3g.40gb)": a class or share names what it is here
};
struct PartitionOffer {
  std::string partition;
  std::vector<ModelOffer> models;  // catalog order; models the partition does not use are left out
  std::vector<std::string> viz_pools;
  std::optional<int> max_per_job, max_per_user;
  std::map<std::string, int> free_now;  // over the partition's nodes that can start a job
  int nodes = 0, usable_nodes = 0;
};
PartitionOffer partition_offer(const vgpu::PartitionPolicy& partition, const vgpu::Catalog& catalog,
                               const SlurmNodes& nodes);
std::vector<std::string> describe_offer(const PartitionOffer& offer);

// Why `job` (one line of squeue's pending format) waits: one line per reason, the first naming the
// job and Slurm's own reason, then one per vgpu type it asks for, per partition it may run in.
std::vector<std::string> explain_pending(const vgpu::PendingJob& job, const vgpu::PolicyFile& policy,
                                         const vgpu::Catalog& catalog, const SlurmNodes& nodes);

}  // namespace vgpuctl
