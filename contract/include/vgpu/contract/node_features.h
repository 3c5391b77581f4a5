// The Slurm node features the planners set on their own nodes (policy planner.node_features) and
// the submit filter has jobs prefer (sbatch --prefer): one spelling for both sides.
// - "in use": a whole-GPU job prefers nodes in use, so idle nodes stay whole;
// - "partly used GPU": a job asking only for parts of a GPU prefers nodes where a GPU is already
//   split and has room left, so it fills a fragment instead of splitting another GPU (in the trace
//   twin this served 0.4 points more of the capacity than preferring nodes in use;
//   docs/benchmarks.md);
// - "no idle GPU": a CPU-only job prefers nodes with no idle GPU, so it does not take the CPUs an
//   idle GPU's next job needs.
// Slurm tries a job with its preference first and without it when that fails, so a preference
// never keeps a job waiting; it refuses a preference no node has at submission, so slurm.conf
// declares every one of them on a node that is never scheduled (State=FUTURE; docs/admin.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vgpu::contract {

inline constexpr std::string_view kFeatureInUse = "vgpu_in_use";
inline constexpr std::string_view kFeatureNoIdleGpu = "vgpu_no_idle_gpu";
inline constexpr std::string_view kFeaturePartlyUsedGpu = "vgpu_partly_used_gpu";
// All of them, as slurm.conf's Features= of the FUTURE node lists them.
inline constexpr std::string_view kPlannerFeatureList = "vgpu_in_use,vgpu_no_idle_gpu,vgpu_partly_used_gpu";

// Which of the planner's features a node carries.
struct PlannerFeatures {
  bool in_use = false;
  bool no_idle_gpu = false;
  bool partly_used_gpu = false;
  bool operator==(const PlannerFeatures&) const = default;
};

// A node's features as `scontrol show node` prints them ("a,b", or "(null)" for none).
std::vector<std::string> parse_feature_list(std::string_view shown);

// The planner's features among `current`.
PlannerFeatures planner_features_in(const std::vector<std::string>& current);

// The features a node should have: `current` with the planner's features set as given and every
// other feature kept, in order; the planner's appended in a fixed order. Written as scontrol takes
// it ("a,vgpu_in_use"); "" when none is left.
std::string with_planner_features(const std::vector<std::string>& current, const PlannerFeatures& set);

}  // namespace vgpu::contract
