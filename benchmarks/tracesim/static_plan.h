// The best fixed MIG partitioning we can find for a workload, for the "static" baseline. Static
// MIG is what sites run today: GPUs are partitioned once and jobs take a free instance of a
// fitting size. To give it every advantage, the mix of per-GPU layouts is chosen knowing the
// trace's own profile mix (an oracle no real site has): every maximal legal H100 layout is
// enumerated with GpuLayout, and a local search over how many GPUs get each layout maximises the
// work the instances could serve when the demand arrives in exactly the trace's proportions.
#pragma once

#include <string>
#include <vector>

#include "vgpu/core/gpu_layout.h"

namespace vgpu::bench {

// One GPU's fixed partitioning: instances that together leave no room for any further instance.
struct GpuRecipe {
  std::vector<PlacedInstance> instances;
  [[nodiscard]] std::string describe() const;  // "4g.40gb+2g.20gb+1g.10gb"
  [[nodiscard]] int count_of(const Profile& p) const;
};

// Every maximal layout of `model` (media-extension profiles excluded), one per multiset of
// profiles, each placed with legal placements.
std::vector<GpuRecipe> maximal_recipes(const GpuModel& model);

// Demand per profile of the model (index = position in model.profiles): how many instances the
// workload asks for and the work (thousandths of a GPU) each of them carries on average.
struct ProfileDemand {
  double instances = 0;
  double milli_per_instance = 0;
};

struct StaticPlan {
  std::vector<GpuRecipe> recipes;
  std::vector<int> gpus;  // GPUs partitioned with recipes[i]; sums to the cluster size
  double expected_served_milli = 0;
  [[nodiscard]] std::string describe() const;  // "2900x 7g.80gb, 1200x 4g.40gb+3g.40gb, ..."
};

// Work served when `supply[q]` instances of each profile meet `demand`: exact sizes first, then
// leftover larger instances take leftover smaller tasks (the static policy's upsizing).
double served_milli(const GpuModel& model, const std::vector<double>& supply, const std::vector<ProfileDemand>& demand);

StaticPlan choose_static_plan(const GpuModel& model, int gpus, const std::vector<ProfileDemand>& demand);

}  // namespace vgpu::bench
