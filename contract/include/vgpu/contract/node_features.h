// The Slurm node features the planners set on their own nodes (policy planner.node_features) and
// the submit filter has jobs prefer (sbatch --prefer): one spelling for both sides. A GPU job
// prefers nodes in use, so small jobs pack and idle nodes stay whole; a CPU-only job prefers
// nodes with no idle GPU, so it does not take the CPUs an idle GPU's next job needs. Slurm tries
// a job with its preference first and without it when that fails, so a preference never keeps a
// job waiting; it refuses a preference no node has at submission, so slurm.conf declares both
// features on a node that is never scheduled (State=FUTURE; docs/admin.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vgpu::contract {

inline constexpr std::string_view kFeatureInUse = "vgpu_in_use";
inline constexpr std::string_view kFeatureNoIdleGpu = "vgpu_no_idle_gpu";

// A node's features as `scontrol show node` prints them ("a,b", or "(null)" for none).
std::vector<std::string> parse_feature_list(std::string_view shown);

// The features a node should have: `current` with the two planner features set as given and every
// other feature kept, in order; the planner's appended in a fixed order. Written as scontrol takes
// it ("a,vgpu_in_use"); "" when none is left.
std::string with_planner_features(const std::vector<std::string>& current, bool in_use,
                                  bool no_idle_gpu);

}  // namespace vgpu::contract
