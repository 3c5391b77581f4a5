// The node's weight in slurmctld, steered by the planner (policy planner.node_weights). Slurm
// gives a job the lightest nodes that can run it, so a node that already has vgpu allocated being
// lighter than an idle one packs small jobs onto nodes in use and keeps idle nodes whole for jobs
// that need whole GPUs or whole nodes; a weight that grows with the node's free GPU capacity has
// Slurm try the fullest nodes first. The trace twin measures what each is worth
// (docs/benchmarks.md). Private to libvgpu/node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/node/context.h"
#include "vgpu/node/slurm_text.h"
#include "vgpu/policy/policy.h"

namespace vgpu::node {

// The weight the node should have. By use: `in_use` while any vgpu of it is in use
// (vgpu_in_use_here), `idle` otherwise. By free capacity: `base` + `per_free_gpu` x `free_gpus`
// (gpu_use.h's free_gpus), rounded.
std::uint32_t wanted_node_weight(const PlannerKnobs::NodeWeights& weights, bool vgpu_in_use, double free_gpus);

// Sets the weight when slurmctld shows another one: the planner's last change is then unseen,
// or slurmctld restarted or reconfigured and took slurm.conf's back. No-op without the policy
// knob or without a Weight in slurmctld's view. Notes what it changed or why it could not.
void steer_node_weight(NodeContext& ctx, const NodeGres& node, std::vector<std::string>& notes);

}  // namespace vgpu::node
