// Turns a SimResult into numbers people read: one JSON object (for scripts and plots) or a table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simulation.h"

namespace vgpu::bench {

// Per-policy arrival-experiment figures, averaged over seeds (std is the sample deviation).
struct ArrivalSummary {
  double unallocated_gpu_pct = 0, unallocated_gpu_pct_std = 0;
  double unallocated_gpus = 0;
  double rounding_gpus = 0, rounding_pct = 0;  // allocated but not requested (profile - request)
  double served_gpus = 0, served_pct = 0;      // requested work of placed tasks
  double pct_of_bound = 0, pct_of_bound_std = 0;
  double failed_tasks = 0, arrived_tasks = 0;
};
ArrivalSummary summarize_arrivals(const SimResult& sim, const PolicyResult& policy);

nlohmann::json to_json(const SimResult& sim);
std::string to_table(const SimResult& sim);

}  // namespace vgpu::bench
