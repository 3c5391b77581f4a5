// The node's Slurm features, steered by the planner (policy planner.node_features): "in use" while
// any vgpu of the node is allocated, "no idle GPU" while every GPU has a job's instance or share
// (vgpu/contract/node_features.h says why and who reads them). Unlike a node weight, which Slurm
// weighs for every job alike, a feature matters only to the jobs that prefer it. Private to
// libvgpu/node.
#pragma once

#include <string>
#include <vector>

#include "vgpu/ledger/ledger.h"
#include "vgpu/node/context.h"
#include "vgpu/node/slurm_text.h"

namespace vgpu::node {

struct WantedFeatures {
  bool in_use = false;
  bool no_idle_gpu = false;
  bool operator==(const WantedFeatures&) const = default;
};

// In use: Slurm has any vgpu of the node allocated (GresUsed: prologs not yet run included) or the
// ledger has any held by a job (as for the node weight). No idle GPU: the node has GPUs and every
// one holds a job's instance, a share some job holds, or a slot claimed for a job.
WantedFeatures wanted_node_features(const NodeGres& node, const Ledger& ledger);

// Sets the features when slurmctld shows others: the planner's last change unseen, or slurmctld
// restarted or reconfigured and took slurm.conf's back. No-op without the policy knob or without
// AvailableFeatures in slurmctld's view. Notes what it changed or why it could not.
void steer_node_features(NodeContext& ctx, const NodeGres& node, std::vector<std::string>& notes);

}  // namespace vgpu::node
