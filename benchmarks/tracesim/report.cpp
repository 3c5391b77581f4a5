#include "report.h"

#include <fmt/format.h>

#include <cmath>

namespace vgpu::bench {
namespace {

struct Stat {
  double mean = 0, std = 0;
};

template <class F>
Stat stat(std::size_t n, F&& value) {
  Stat s;
  if (n == 0) return s;
  for (std::size_t i = 0; i < n; ++i) s.mean += value(i);
  s.mean /= static_cast<double>(n);
  if (n > 1) {
    double var = 0;
    for (std::size_t i = 0; i < n; ++i) var += std::pow(value(i) - s.mean, 2);
    s.std = std::sqrt(var / static_cast<double>(n - 1));
  }
  return s;
}

double gpus_of(const SimResult& sim, long long slices) {
  return static_cast<double>(slices) * sim.options.gpus / static_cast<double>(sim.capacity_slices);
}

}  // namespace

ArrivalSummary summarize_arrivals(const SimResult& sim, const PolicyResult& p) {
  ArrivalSummary a;
  std::size_t n = p.per_seed.size();
  double gpus = sim.options.gpus;
  auto unalloc = [&](std::size_t i) {
    return gpus_of(sim, p.per_seed[i].capacity_slices - p.per_seed[i].allocated_slices);
  };
  auto served = [&](std::size_t i) { return static_cast<double>(p.per_seed[i].served_milli) / 1000; };
  Stat u = stat(n, [&](std::size_t i) { return 100 * unalloc(i) / gpus; });
  a.unallocated_gpu_pct = u.mean;
  a.unallocated_gpu_pct_std = u.std;
  a.unallocated_gpus = stat(n, unalloc).mean;
  a.served_gpus = stat(n, served).mean;
  a.served_pct = 100 * a.served_gpus / gpus;
  a.rounding_gpus =
      stat(n, [&](std::size_t i) { return gpus_of(sim, p.per_seed[i].allocated_slices) - served(i); })
          .mean;
  a.rounding_pct = 100 * a.rounding_gpus / gpus;
  Stat b = stat(n, [&](std::size_t i) {
    return 100 * static_cast<double>(p.per_seed[i].served_milli) / sim.bound_milli_per_seed[i];
  });
  a.pct_of_bound = b.mean;
  a.pct_of_bound_std = b.std;
  a.failed_tasks = stat(n, [&](std::size_t i) {
                     return static_cast<double>(p.per_seed[i].arrived_tasks -
                                                p.per_seed[i].placed_tasks);
                   }).mean;
  a.arrived_tasks =
      stat(n, [&](std::size_t i) { return static_cast<double>(p.per_seed[i].arrived_tasks); })
          .mean;
  return a;
}

nlohmann::json to_json(const SimResult& sim) {
  using nlohmann::json;
  json out;
  out["trace"] = sim.trace_path;
  out["trace_rows"] = sim.trace_rows;
  out["model"] = sim.options.model;
  out["gpus"] = sim.options.gpus;
  out["gpus_per_node"] = sim.options.gpus_per_node;
  out["seeds"] = sim.options.seeds;
  out["mapping"] = {{"gpu_tasks", sim.mapping.gpu_tasks},
                    {"cpu_only_skipped", sim.mapping.cpu_only},
                    {"too_wide_skipped", sim.mapping.too_wide},
                    {"requested_gpus", static_cast<double>(sim.mapping.requested_milli) / 1000},
                    {"granted_gpus", gpus_of(sim, sim.mapping.granted_slices)}};
  double bound = 0;
  for (double b : sim.bound_milli_per_seed) bound += b / 1000;
  bound /= static_cast<double>(sim.bound_milli_per_seed.size());
  out["bound"] = {{"served_gpus", bound}, {"served_pct", 100 * bound / sim.options.gpus}};
  out["results"] = json::array();
  for (const auto& p : sim.results) {
    ArrivalSummary a = summarize_arrivals(sim, p);
    json e;
    e["policy"] = std::string(policy_name(p.policy));
    e["unallocated_gpu_pct"] = a.unallocated_gpu_pct;
    e["unallocated_gpu_pct_std"] = a.unallocated_gpu_pct_std;
    e["unallocated_gpus"] = a.unallocated_gpus;
    e["rounding_gpus"] = a.rounding_gpus;
    e["rounding_pct"] = a.rounding_pct;
    e["served_gpus"] = a.served_gpus;
    e["served_pct"] = a.served_pct;
    e["pct_of_bound"] = a.pct_of_bound;
    e["pct_of_bound_std"] = a.pct_of_bound_std;
    e["failed_tasks"] = a.failed_tasks;
    e["arrived_tasks"] = a.arrived_tasks;
    e["arrival_ms_per_seed"] = p.arrival_seconds_per_seed * 1000;
    json seeds = json::array();
    for (std::size_t i = 0; i < p.per_seed.size(); ++i) {
      const auto& s = p.per_seed[i];
      seeds.push_back({{"seed", i},
                       {"arrived_tasks", s.arrived_tasks},
                       {"placed_tasks", s.placed_tasks},
                       {"arrived_milli", s.arrived_milli},
                       {"served_milli", s.served_milli},
                       {"allocated_slices", s.allocated_slices},
                       {"peak_allocated_slices", s.peak_allocated_slices},
                       {"capacity_slices", s.capacity_slices},
                       {"bound_milli", sim.bound_milli_per_seed[i]}});
    }
    e["per_seed"] = seeds;
    if (!p.static_plan_arrivals.empty()) e["static_layout"] = p.static_plan_arrivals;
    if (!p.static_plan_replay.empty()) e["static_layout_replay"] = p.static_plan_replay;
    if (p.replay) {
      const ReplayOutcome& r = *p.replay;
      e["p95_wait_s"] = r.p95_wait_s;
      e["replay"] = {{"tasks", r.tasks},
                     {"started", r.started},
                     {"never_started", r.never_started},
                     {"not_run_in_trace", r.not_run_in_trace},
                     {"mean_wait_s", r.mean_wait_s},
                     {"p95_wait_s", r.p95_wait_s},
                     {"max_wait_s", r.max_wait_s},
                     {"span_h", r.span_h},
                     {"completed_per_hour", r.completed_per_hour},
                     {"mean_slice_util", r.mean_slice_util},
                     {"peak_allocated_slices", r.peak_allocated_slices},
                     {"capacity_slices", r.capacity_slices},
                     {"util_time_h", r.util_time_h},
                     {"util", r.util},
                     {"wait_quantiles_s", r.wait_quantiles_s},
                     {"replay_ms", p.replay_seconds * 1000}};
    } else {
      e["p95_wait_s"] = nullptr;  // the trace has no times: no replay
    }
    out["results"].push_back(e);
  }
  return out;
}

std::string to_table(const SimResult& sim) {
  std::string out = fmt::format(
      "trace {} ({} rows: {} GPU tasks, {} CPU-only skipped, {} too wide skipped)\n"
      "cluster {} x {} ({} per node), {} seed(s)\n\n",
      sim.trace_path, sim.trace_rows, sim.mapping.gpu_tasks, sim.mapping.cpu_only,
      sim.mapping.too_wide, sim.options.gpus, sim.options.model, sim.options.gpus_per_node,
      sim.options.seeds);
  out += "Arrivals until 100% of capacity (no departures), mean over seeds:\n";
  out += fmt::format("{:<9} {:>16} {:>11} {:>14} {:>11} {:>12} {:>9}\n", "policy",
                     "unallocated %", "GPUs", "rounding GPUs", "served %", "% of bound",
                     "failed");
  for (const auto& p : sim.results) {
    ArrivalSummary a = summarize_arrivals(sim, p);
    out += fmt::format("{:<9} {:>9.2f} ±{:>5.2f} {:>11.1f} {:>14.1f} {:>11.2f} {:>12.2f} {:>9.1f}\n",
                       policy_name(p.policy), a.unallocated_gpu_pct, a.unallocated_gpu_pct_std,
                       a.unallocated_gpus, a.rounding_gpus, a.served_pct, a.pct_of_bound,
                       a.failed_tasks);
  }
  double bound = 0;
  for (double b : sim.bound_milli_per_seed) bound += b / 1000;
  bound /= static_cast<double>(sim.bound_milli_per_seed.size());
  out += fmt::format("fluid bound: {:.1f} GPUs of requested work ({:.2f}%)\n",
                     bound, 100 * bound / sim.options.gpus);
  for (const auto& p : sim.results)
    if (!p.static_plan_arrivals.empty())
      out += fmt::format("static layout (arrivals): {}\n", p.static_plan_arrivals);

  if (!sim.has_times) return out + "\nreplay: the trace has no times, skipped\n";
  out += "\nReplay with departures (creation/deletion times):\n";
  out += fmt::format("{:<9} {:>12} {:>12} {:>12} {:>10} {:>11} {:>8}\n", "policy", "mean wait s",
                     "p95 wait s", "max wait s", "jobs/h", "mean util", "stuck");
  for (const auto& p : sim.results) {
    const ReplayOutcome& r = *p.replay;
    out += fmt::format("{:<9} {:>12.1f} {:>12.1f} {:>12.1f} {:>10.2f} {:>10.1f}% {:>8}\n",
                       policy_name(p.policy), r.mean_wait_s, r.p95_wait_s, r.max_wait_s,
                       r.completed_per_hour, 100 * r.mean_slice_util, r.never_started);
  }
  for (const auto& p : sim.results)
    if (!p.static_plan_replay.empty())
      out += fmt::format("static layout (replay): {}\n", p.static_plan_replay);
  return out;
}

}  // namespace vgpu::bench
