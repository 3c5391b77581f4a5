// Viz pools from the admin's policy file: the policy is where admins declare pools (beside the
// partitions that offer them), the node's viz.json only says how this host runs VMs. Merging
// them here keeps one source of truth for what `--gres=vgpu:<pool>:1` means.
#pragma once

#include "vgpu/policy/policy.h"
#include "viz_config.h"

namespace vgpu::viz {

// Adds every viz pool of `policy` (and the images they name) to `config`. A pool or image name
// that viz.json already defines differently is an error naming both files.
Result<void> add_policy_pools(VizConfig& config, const PolicyFile& policy);

}  // namespace vgpu::viz
