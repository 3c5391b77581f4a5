// Turns a SimResult into numbers people read: one JSON object (for scripts and plots) or a table.
#pragma once

#include <nlohmann/json.hpp>
#include <array>
#include <string>

#include "simulation.h"

namespace vgpu::bench {

// Per-policy arrival-experiment figures, averaged over seeds (std is the sample deviation). All
// percentages are of the cluster's GPU capacity, and they add up:
//   fgd_unallocated = 100 - served = rounding + stranded.
struct ArrivalSummary {
  // FGD's metric: capacity not serving requested work when arrivals reach 100 % of capacity.
  double fgd_unallocated_pct = 0, fgd_unallocated_pct_std = 0;
  double served_gpus = 0, served_pct = 0;            // requested work of placed tasks
  double rounding_gpus = 0, rounding_pct = 0;        // allocated but not requested (profile - request)
  double stranded_gpus = 0, stranded_pct = 0;        // never allocated: free compute slices at the end
  double failed_work_pct = 0;                        // arrived GPU work that was refused
  std::array<double, 3> failed_work_pct_by_class{};  // sub-GPU, single GPU, multi-GPU
  double failed_tasks = 0, failed_cpu_only = 0, arrived_tasks = 0;
  double mode_switches = 0;  // GPUs' MIG mode switches (MIG on demand)
};
ArrivalSummary summarize_arrivals(const SimResult& sim, const PolicyResult& policy);

// The ceilings, in FGD's metric (lower is better; no MIG-only policy goes below them).
struct Ceilings {
  double online_mig_pct = 0;   // online perfect packing with MIG rounding (online_mig_ceiling_milli)
  double offline_mig_pct = 0;  // offline fractional bound with MIG rounding (fluid_bound_milli)
};
Ceilings summarize_ceilings(const SimResult& sim);

// Ordered: the comparable metric comes first in every object.
nlohmann::ordered_json to_json(const SimResult& sim);
std::string to_table(const SimResult& sim);

}  // namespace vgpu::bench
