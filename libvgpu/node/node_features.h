// The node's Slurm features, steered by the planner (policy planner.node_features): "in use" while
// any vgpu of the node is allocated, "no idle GPU" while every GPU has a job's instance or share,
// "partly used GPU" while a GPU holds some and has room left
// (vgpu/contract/node_features.h says why and who reads them). Unlike a node weight, which Slurm
// weighs for every job alike, a feature matters only to the jobs that prefer it. Private to
// libvgpu/node.
#pragma once

#include <string>
#include <vector>

#include "vgpu/contract/node_features.h"
#include "vgpu/core/catalog.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/node/context.h"
#include "vgpu/node/slurm_text.h"

namespace vgpu::node {

using WantedFeatures = contract::PlannerFeatures;

// In use: Slurm has any vgpu of the node allocated (GresUsed: prologs not yet run included) or the
// ledger has any held by a job (as for the node weight). A GPU is held where it has a job's
// instance, a share some job holds, or a slot claimed for a job. No idle GPU: the node has GPUs and
// every one is held somewhere. Partly used GPU: some GPU is held somewhere and its held places take
// fewer compute slices than it has (`base` plus the ledger's own classes name the profiles).
WantedFeatures wanted_node_features(const NodeGres& node, const Ledger& ledger, const Catalog& base);

// Sets the features when slurmctld shows others: the planner's last change unseen, or slurmctld
// restarted or reconfigured and took slurm.conf's back. No-op without the policy knob or without
// AvailableFeatures in slurmctld's view. Notes what it changed or why it could not.
void steer_node_features(NodeContext& ctx, const NodeGres& node, std::vector<std::string>& notes);

}  // namespace vgpu::node
