// MIG mode chosen from pending demand (docs/policy.md, "mig_mode": "on_demand"): a GPU leaves MIG
// mode when a pending job asks for a whole GPU that no GPU with MIG off can give, and enters it when
// pending MIG requests find no room on the GPUs already in MIG mode. Deciding is pure: which GPUs
// should change mode, from what jobs hold now and what waits. The switch itself, and the draining
// of a GPU before it, are mig_mode_switch.h's and the planner round's, as for a fixed mig_mode.
//
// Pending jobs are served in Slurm's order (the order of `demand`), each unit by what exists before
// what must be switched: a whole-GPU unit takes a GPU whose MIG is off and that nobody holds, else
// one in MIG mode that nobody holds; only starving demand (docs/policy.md, "starvation_s") takes a
// GPU that still runs MIG jobs, which then drains as its jobs end. A MIG unit is placed by the
// layout rules (GpuLayout) on the GPUs in MIG mode first, then on a free GPU with MIG off. Nothing
// pending, nothing switched: a GPU keeps the mode it has until demand asks otherwise.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "vgpu/core/gpu_layout.h"
#include "vgpu/core/planner.h"
#include "vgpu/core/whole_gpu_placement.h"

namespace vgpu {

struct OnDemandGpu {
  int index = 0;
  // What jobs hold on it now (held slots, instances not yet given back), on its model with the
  // site's classes: an unclaimed slot or an idle instance is not in the way.
  GpuLayout held;
  bool mig_on = true;       // the driver's current MIG mode (a pending enable counts as off)
  bool switchable = false;  // a partition has it "on_demand" and its model switches without a reset
};

struct MigModeTargets {
  std::set<int> whole;        // switchable GPUs in MIG mode that pending demand wants whole
  std::set<int> partitioned;  // switchable GPUs with MIG off that pending demand wants in MIG mode
  std::vector<std::string> notes;
  bool operator==(const MigModeTargets& o) const { return whole == o.whole && partitioned == o.partitioned; }
};

// The GPUs whose MIG mode `demand` asks to change. `before` is the last round's answer: among
// equally good GPUs those it chose stay chosen, so a GPU draining for a whole-GPU job is not
// abandoned for another one every round. `whole_offered` false (the node cannot keep a whole GPU to
// its user, docs/security.md): no GPU is switched for whole-GPU demand. With `links` (how the GPUs
// reach each other), a job's several whole GPUs are chosen as its prolog will claim them: of one
// NVLink domain where one can be had (vgpu/core/whole_gpu_placement.h), switching what it takes.
MigModeTargets choose_mig_modes_on_demand(std::span<const OnDemandGpu> gpus, std::span<const Demand> demand,
                                          const MigModeTargets& before, bool whole_offered,
                                          const std::optional<GpuLinks>& links = std::nullopt);

}  // namespace vgpu
