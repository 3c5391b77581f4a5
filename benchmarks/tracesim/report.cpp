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

nlohmann::ordered_json class_json(const ReplayOutcome& r) {
  nlohmann::ordered_json out;
  for (int c = 0; c < kTaskClasses; ++c) {
    const ClassWaits& w = r.by_class[static_cast<std::size_t>(c)];
    out[task_class_name(static_cast<TaskClass>(c))] = {{"started", w.started},    {"never_started", w.never_started},
                                                       {"mean_wait_s", w.mean_s}, {"p50_wait_s", w.p50_s},
                                                       {"p95_wait_s", w.p95_s},   {"max_wait_s", w.max_s}};
  }
  return out;
}

}  // namespace

ArrivalSummary summarize_arrivals(const SimResult& sim, const PolicyResult& p) {
  ArrivalSummary a;
  std::size_t n = p.per_seed.size();
  double gpus = sim.options.gpus;
  auto pct = [&](double g) { return 100 * g / gpus; };
  auto served = [&](std::size_t i) { return static_cast<double>(p.per_seed[i].served_milli) / 1000; };
  auto stranded = [&](std::size_t i) {
    return gpus_of(sim, p.per_seed[i].capacity_slices - p.per_seed[i].allocated_slices);
  };
  auto rounding = [&](std::size_t i) { return gpus_of(sim, p.per_seed[i].allocated_slices) - served(i); };
  Stat u = stat(n, [&](std::size_t i) { return 100 - pct(served(i)); });
  a.fgd_unallocated_pct = u.mean;
  a.fgd_unallocated_pct_std = u.std;
  a.served_gpus = stat(n, served).mean;
  a.served_pct = pct(a.served_gpus);
  a.rounding_gpus = stat(n, rounding).mean;
  a.rounding_pct = pct(a.rounding_gpus);
  a.stranded_gpus = stat(n, stranded).mean;
  a.stranded_pct = pct(a.stranded_gpus);
  a.failed_work_pct = stat(n, [&](std::size_t i) {
                        const auto& s = p.per_seed[i];
                        return pct(static_cast<double>(s.arrived_milli - s.served_milli) / 1000);
                      }).mean;
  for (std::size_t c = 0; c < 3; ++c)
    a.failed_work_pct_by_class[c] = stat(n, [&](std::size_t i) {
                                      return pct(static_cast<double>(p.per_seed[i].failed_milli_by_class[c]) / 1000);
                                    }).mean;
  auto count = [&](auto&& f) {
    return stat(n, [&](std::size_t i) { return static_cast<double>(f(p.per_seed[i])); }).mean;
  };
  a.failed_tasks = count([](const ArrivalOutcome& s) { return s.arrived_tasks - s.placed_tasks; });
  a.failed_cpu_only = count([](const ArrivalOutcome& s) { return s.failed_cpu_only; });
  a.arrived_tasks = count([](const ArrivalOutcome& s) { return s.arrived_tasks; });
  a.mode_switches = count([](const ArrivalOutcome& s) { return s.mode_switches; });
  return a;
}

Ceilings summarize_ceilings(const SimResult& sim) {
  Ceilings c;
  double gpus = sim.options.gpus;
  c.online_mig_pct =
      100 - 100 *
                stat(sim.ceiling_milli_per_seed.size(),
                     [&](std::size_t i) { return static_cast<double>(sim.ceiling_milli_per_seed[i]) / 1000; })
                    .mean /
                gpus;
  c.offline_mig_pct =
      100 - 100 *
                stat(sim.bound_milli_per_seed.size(), [&](std::size_t i) { return sim.bound_milli_per_seed[i] / 1000; })
                    .mean /
                gpus;
  return c;
}

nlohmann::ordered_json to_json(const SimResult& sim) {
  using json = nlohmann::ordered_json;
  json out;
  out["trace"] = sim.trace_path;
  out["workload"] = sim.workload;
  Ceilings ceil = summarize_ceilings(sim);
  // FGD's published numbers for this workload lead, beside the ceilings every MIG-only policy is
  // held to; each policy's entry then leads with the same metric.
  out["fgd_published_unallocated_pct"] =
      sim.published_unallocated_pct.empty() ? json(nullptr) : json(sim.published_unallocated_pct);
  out["ceilings_fgd_unallocated_pct"] = {{"online_mig", ceil.online_mig_pct}, {"offline_mig", ceil.offline_mig_pct}};
  out["trace_rows"] = sim.trace_rows;
  out["model"] = sim.options.model;
  out["gpus"] = sim.options.gpus;
  out["nodes"] = sim.nodes;
  out["host_constrained"] = sim.host_constrained;
  out["node_choice"] = sim.options.node_choice == NodeChoice::slurm ? "slurm" : "best";
  out["tune_ratio"] = sim.options.tune_ratio;
  out["share_min_slices"] = sim.options.share_min_slices;
  out["seeds"] = sim.options.seeds;
  out["reserve_after_s"] = sim.options.reserve_after_s;  // < 0: replays without reservations
  out["start_latency_s"] = sim.options.start_latency_s;  // paid by the policies that reshape nodes
  out["latency_only_for_new_slots"] = sim.options.latency_only_for_new_slots;
  out["mapping"] = {{"gpu_tasks", sim.mapping.gpu_tasks},
                    {"cpu_only", sim.mapping.cpu_only},
                    {"too_wide_skipped", sim.mapping.too_wide},
                    {"requested_gpus", static_cast<double>(sim.mapping.requested_milli) / 1000},
                    {"granted_gpus", gpus_of(sim, sim.mapping.granted_slices)}};
  out["results"] = json::array();
  for (const auto& p : sim.results) {
    ArrivalSummary a = summarize_arrivals(sim, p);
    json e;
    e["policy"] = std::string(policy_name(p.policy));
    e["fgd_unallocated_pct"] = a.fgd_unallocated_pct;
    e["fgd_unallocated_pct_std"] = a.fgd_unallocated_pct_std;
    e["rounding_pct"] = a.rounding_pct;
    e["stranded_pct"] = a.stranded_pct;
    e["failed_work_pct"] = a.failed_work_pct;
    e["failed_work_pct_by_class"] = {{"sub_gpu", a.failed_work_pct_by_class[0]},
                                     {"single_gpu", a.failed_work_pct_by_class[1]},
                                     {"multi_gpu", a.failed_work_pct_by_class[2]}};
    e["served_pct"] = a.served_pct;
    e["served_gpus"] = a.served_gpus;
    e["rounding_gpus"] = a.rounding_gpus;
    e["stranded_gpus"] = a.stranded_gpus;
    e["failed_tasks"] = a.failed_tasks;
    e["failed_cpu_only"] = a.failed_cpu_only;
    e["arrived_tasks"] = a.arrived_tasks;
    e["mig_mode_switches"] = a.mode_switches;
    e["arrival_ms_per_seed"] = p.arrival_seconds_per_seed * 1000;
    json seeds = json::array();
    for (std::size_t i = 0; i < p.per_seed.size(); ++i) {
      const auto& s = p.per_seed[i];
      seeds.push_back({{"seed", i},
                       {"arrived_tasks", s.arrived_tasks},
                       {"placed_tasks", s.placed_tasks},
                       {"failed_cpu_only", s.failed_cpu_only},
                       {"arrived_milli", s.arrived_milli},
                       {"served_milli", s.served_milli},
                       {"allocated_slices", s.allocated_slices},
                       {"peak_allocated_slices", s.peak_allocated_slices},
                       {"capacity_slices", s.capacity_slices},
                       {"mig_mode_switches", s.mode_switches},
                       {"ceiling_online_milli", sim.ceiling_milli_per_seed[i]},
                       {"bound_offline_milli", sim.bound_milli_per_seed[i]}});
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
                     {"longest_run_s", r.longest_run_s},
                     {"by_class", class_json(r)},
                     {"reservations", r.reservations},
                     {"mig_mode_switches", r.mode_switches},
                     {"waited_for_empty_gpu", r.waited_for_empty_gpu},
                     {"replay_ms", p.replay_seconds * 1000}};
      json jittered = json::array();
      for (const auto& j : p.jittered)
        jittered.push_back({{"p95_wait_s", j.p95_wait_s},
                            {"max_wait_s", j.max_wait_s},
                            {"never_started", j.never_started},
                            {"reservations", j.reservations},
                            {"mig_mode_switches", j.mode_switches},
                            {"waited_for_empty_gpu", j.waited_for_empty_gpu},
                            {"by_class", class_json(j)}});
      e["jittered_replays"] = jittered;
    } else {
      e["p95_wait_s"] = nullptr;  // the trace has no times, or a node list runs arrivals only
    }
    out["results"].push_back(e);
  }
  return out;
}

std::string to_table(const SimResult& sim) {
  std::string out = fmt::format(
      "trace {} ({} rows: {} GPU tasks, {} CPU-only, {} too wide skipped)\n"
      "cluster {} x {} in {} nodes ({}), node choice {}, {} seed(s), tuned to {}x capacity\n\n",
      sim.trace_path, sim.trace_rows, sim.mapping.gpu_tasks, sim.mapping.cpu_only, sim.mapping.too_wide,
      sim.options.gpus, sim.options.model, sim.nodes,
      sim.host_constrained ? "CPU and memory limited" : "no host limits",
      sim.options.node_choice == NodeChoice::slurm ? "slurm" : "best", sim.options.seeds, sim.options.tune_ratio);
  out += "Arrivals until 100% of capacity (no departures), % of GPU capacity, mean over seeds:\n";
  out += fmt::format("{:<9} {:>18} {:>10} {:>10} {:>13} {:>10} {:>8}\n", "policy", "FGD unallocated %", "rounding",
                     "stranded", "failed work", "served", "failed");
  for (const auto& p : sim.results) {
    ArrivalSummary a = summarize_arrivals(sim, p);
    out += fmt::format("{:<9} {:>11.2f} ±{:>5.2f} {:>10.2f} {:>10.2f} {:>13.2f} {:>10.2f} {:>8.1f}\n",
                       policy_name(p.policy), a.fgd_unallocated_pct, a.fgd_unallocated_pct_std, a.rounding_pct,
                       a.stranded_pct, a.failed_work_pct, a.served_pct, a.failed_tasks);
  }
  Ceilings ceil = summarize_ceilings(sim);
  out += fmt::format("ceilings (FGD unallocated %): online MIG {:.2f}, offline MIG {:.2f}\n", ceil.online_mig_pct,
                     ceil.offline_mig_pct);
  if (!sim.published_unallocated_pct.empty()) {
    out += fmt::format("published for '{}':", sim.workload);
    for (const auto& [name, v] : sim.published_unallocated_pct) out += fmt::format(" {} {:.2f}", name, v);
    out += "\n";
  }
  for (const auto& p : sim.results)
    if (!p.static_plan_arrivals.empty()) out += fmt::format("static layout (arrivals): {}\n", p.static_plan_arrivals);

  if (!sim.has_times) return out + "\nreplay: the trace has no times, skipped\n";
  out += "\nReplay with departures (creation/deletion times):\n";
  out += fmt::format("{:<9} {:>12} {:>12} {:>12} {:>10} {:>11} {:>8} {:>9} {:>13}\n", "policy", "mean wait s",
                     "p95 wait s", "max wait s", "jobs/h", "mean util", "stuck", "switches", "waited empty");
  for (const auto& p : sim.results) {
    const ReplayOutcome& r = *p.replay;
    out += fmt::format("{:<9} {:>12.1f} {:>12.1f} {:>12.1f} {:>10.2f} {:>10.1f}% {:>8} {:>9} {:>13}\n",
                       policy_name(p.policy), r.mean_wait_s, r.p95_wait_s, r.max_wait_s, r.completed_per_hour,
                       100 * r.mean_slice_util, r.never_started, r.mode_switches, r.waited_for_empty_gpu);
  }
  for (const auto& p : sim.results)
    if (!p.static_plan_replay.empty()) out += fmt::format("static layout (replay): {}\n", p.static_plan_replay);
  return out;
}

}  // namespace vgpu::bench
