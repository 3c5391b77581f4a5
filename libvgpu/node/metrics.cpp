#include "vgpu/node/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "node_model.h"
#include "vgpu/core/gpu_layout.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/node_state.h"

namespace vgpu {

Histogram::Histogram(std::vector<double> bounds)
    : upper_bounds(std::move(bounds)), counts(upper_bounds.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto at = std::ranges::lower_bound(upper_bounds, value) - upper_bounds.begin();
  ++counts[static_cast<std::size_t>(at)];
  sum += value;
  ++count;
}

namespace {

int compute_slices_held_by_jobs(const Ledger& l, int& total) {
  int used = 0;
  total = 0;
  for (const auto& g : l.gpus) {
    auto model = node::model_of(l, g.index);
    if (model) total += (*model)->compute_slices;
  }
  for (const auto& i : l.instances) {
    if (!i.job) continue;
    auto model = node::model_of(l, i.gpu);
    if (!model) continue;
    if (const Profile* p = (*model)->find_profile(i.profile)) used += p->compute_slices;
  }
  return used;
}

// Label values follow the exposition format's escaping (backslash, double quote, newline).
std::string label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

class Writer {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(std::string_view name, const std::vector<std::pair<std::string, std::string>>& labels, double value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i)
        out_ += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, label(labels[i].second));
      out_ += '}';
    }
    out_ += ' ' + number(value) + '\n';
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// The state a ledger instance is reported in: a job's ready instance is "running".
std::string instance_state(const LedgerInstance& i) {
  if (i.state == InstanceState::ready) return i.job ? "running" : "idle";
  return std::string(to_string(i.state));
}

const std::vector<std::string>& instance_states() {
  static const std::vector<std::string> states = {"planned", "claimed",   "creating",    "running",
                                                  "idle",    "scrubbing", "quarantined", "destroying"};
  return states;
}

void instances_by_state(Writer& w, const NodeMetricsInput& in) {
  const Ledger& l = *in.ledger;
  std::map<std::pair<std::string, std::string>, int> counts;
  std::set<std::string> profiles;
  for (const auto& i : l.instances) {
    ++counts[{i.profile, instance_state(i)}];
    profiles.insert(i.profile);
  }
  for (const auto& s : l.plan.slots) {
    profiles.insert(s.profile);
    const bool backed = std::ranges::any_of(
        l.instances, [&](const LedgerInstance& i) { return i.gpu == s.gpu && i.placement == s.placement; });
    if (backed) continue;  // the instance there is counted in its own state
    ++counts[{s.profile, slot_is_held(l, s) ? "claimed" : "planned"}];
  }
  for (const auto& [type, n] : in.advertised) profiles.insert(type);
  w.family("vgpu_instances", "gauge",
           "MIG instances and plan slots on the node by profile and state (planned and claimed: slots "
           "without an instance yet)");
  for (const auto& p : profiles)
    for (const auto& st : instance_states()) {
      auto it = counts.find({p, st});
      w.sample("vgpu_instances", {{"node", in.node}, {"profile", p}, {"state", st}},
               it == counts.end() ? 0 : it->second);
    }
}

void gpu_slices(Writer& w, const NodeMetricsInput& in) {
  const Ledger& l = *in.ledger;
  const auto parts = in.policy ? node_partitions(*in.policy, in.node) : std::vector<const PartitionPolicy*>{};
  struct Row {
    std::string gpu, model;
    int instance = 0, planned = 0, free = 0, stranded = 0;
  };
  std::vector<Row> rows;
  for (const auto& g : l.gpus) {
    auto model = node::model_of(l, g.index);
    if (!model) continue;
    const GpuModel& m = **model;
    Row r{std::to_string(g.index), m.name};
    std::vector<std::pair<const Profile*, Placement>> taken;
    for (const auto& i : l.instances)
      if (i.gpu == g.index)
        if (const Profile* p = m.find_profile(i.profile)) {
          r.instance += p->compute_slices;
          taken.emplace_back(p, i.placement);
        }
    for (const auto& s : l.plan.slots) {
      if (s.gpu != g.index) continue;
      const bool backed = std::ranges::any_of(
          l.instances, [&](const LedgerInstance& i) { return i.gpu == s.gpu && i.placement == s.placement; });
      if (backed) continue;
      if (const Profile* p = m.find_profile(s.profile)) {
        r.planned += p->compute_slices;
        taken.emplace_back(p, s.placement);
      }
    }
    r.free = std::max(0, m.compute_slices - r.instance - r.planned);
    std::vector<const Profile*> allowed;
    for (const auto* part : parts)
      for (const auto& name : part->allowed_profiles_for(m))
        if (const Profile* p = m.find_profile(name); p && std::ranges::find(allowed, p) == allowed.end())
          allowed.push_back(p);
    r.stranded = std::min(r.free, stranded_compute_slices(m, allowed, taken));
    rows.push_back(r);
  }
  w.family("vgpu_gpu_compute_slices", "gauge",
           "Compute slices of each GPU held by instances, by plan slots without an instance, and free");
  for (const auto& r : rows) {
    w.sample("vgpu_gpu_compute_slices", {{"node", in.node}, {"gpu", r.gpu}, {"model", r.model}, {"state", "instance"}},
             r.instance);
    w.sample("vgpu_gpu_compute_slices", {{"node", in.node}, {"gpu", r.gpu}, {"model", r.model}, {"state", "planned"}},
             r.planned);
    w.sample("vgpu_gpu_compute_slices", {{"node", in.node}, {"gpu", r.gpu}, {"model", r.model}, {"state", "free"}},
             r.free);
  }
  w.family("vgpu_gpu_stranded_compute_slices", "gauge",
           "Free compute slices of each GPU that no profile the node's partitions allow can still use");
  for (const auto& r : rows)
    w.sample("vgpu_gpu_stranded_compute_slices", {{"node", in.node}, {"gpu", r.gpu}, {"model", r.model}}, r.stranded);
}

void slurm_view(Writer& w, const NodeMetricsInput& in) {
  w.family("vgpu_advertised_instances", "gauge", "Instances of each type the node's advertisement offers Slurm");
  for (const auto& [type, n] : in.advertised)
    w.sample("vgpu_advertised_instances", {{"node", in.node}, {"type", type}}, n);
  if (!in.slurm) return;
  // Types Slurm lists at zero (every type a node ever offered stays in its Gres= line) are left
  // out unless a job holds one: a series per profile and node that is always 0 costs without telling.
  std::set<std::string> types;
  for (const auto& [type, n] : in.slurm->configured)
    if (n > 0 || in.advertised.contains(type)) types.insert(type);
  for (const auto& [type, n] : in.slurm->used)
    if (n > 0) types.insert(type);
  types.erase("never");
  auto count = [](const std::map<std::string, int>& m, const std::string& t) {
    auto it = m.find(t);
    return it == m.end() ? 0 : it->second;
  };
  w.family("vgpu_slurm_configured", "gauge",
           "Slurm's configured count of each vgpu type on the node (scontrol show node)");
  for (const auto& type : types)
    w.sample("vgpu_slurm_configured", {{"node", in.node}, {"type", type}}, count(in.slurm->configured, type));
  w.family("vgpu_slurm_allocated", "gauge", "Slurm's allocated count of each vgpu type on the node (GresUsed)");
  for (const auto& type : types)
    if (type != "free")
      w.sample("vgpu_slurm_allocated", {{"node", in.node}, {"type", type}}, count(in.slurm->used, type));
  // What the planner steers (policy planner.node_weights): beside the split, it shows which nodes
  // Slurm tries first.
  if (in.slurm->weight) {
    w.family("vgpu_slurm_node_weight", "gauge", "Slurm's scheduling weight of the node (scontrol show node: Weight)");
    w.sample("vgpu_slurm_node_weight", {{"node", in.node}}, static_cast<double>(*in.slurm->weight));
  }
}

template <class Bounds, class Counts>
void histogram(Writer& w, std::string_view name, std::vector<std::pair<std::string, std::string>> labels,
               const Bounds& bounds, const Counts& counts, double sum, std::uint64_t count) {
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    cumulative += counts[b];
    auto with_le = labels;
    with_le.emplace_back("le", b < bounds.size() ? number(bounds[b]) : "+Inf");
    w.sample(std::string(name) + "_bucket", with_le, static_cast<double>(cumulative));
  }
  w.sample(std::string(name) + "_sum", labels, sum);
  w.sample(std::string(name) + "_count", labels, static_cast<double>(count));
}

// Only where the planner reads a published cluster view (VGPU_CLUSTER_VIEW): a planner that asks
// slurmctld itself has none to age.
void cluster_view_metrics(Writer& w, const NodeMetricsInput& in) {
  if (!in.cluster_view) return;
  const auto& v = *in.cluster_view;
  w.family("vgpu_cluster_view_usable", "gauge",
           "1 while the published cluster view is genuine and fresh enough to plan by, 0 while the plan is kept");
  w.sample("vgpu_cluster_view_usable", {{"node", in.node}, {"source", v.source}}, v.usable ? 1 : 0);
  if (v.age_s) {
    w.family("vgpu_cluster_view_age_seconds", "gauge", "Age of the last genuine cluster view the planner read");
    w.sample("vgpu_cluster_view_age_seconds", {{"node", in.node}}, static_cast<double>(*v.age_s));
  }
  w.family("vgpu_cluster_view_direct_queries_total", "counter",
           "Questions the planner asked slurmctld itself because the cluster view was not usable (one a minute "
           "per kind at most)");
  w.sample("vgpu_cluster_view_direct_queries_total", {{"node", in.node}}, static_cast<double>(v.direct_queries));
}

void planner_metrics(Writer& w, const NodeMetricsInput& in) {
  w.family("vgpu_handover_pending", "gauge", "1 while a shrink of the advertisement waits for slurmctld to confirm it");
  w.sample("vgpu_handover_pending", {{"node", in.node}}, in.handover_pending ? 1 : 0);
  w.family("vgpu_split_mismatch_rounds", "gauge",
           "Planner rounds in a row that found slurmctld's split differing from the advertisement");
  w.sample("vgpu_split_mismatch_rounds", {{"node", in.node}}, in.split_mismatch_rounds);
  cluster_view_metrics(w, in);
  if (!in.planner) return;
  const PlannerMetrics& p = *in.planner;
  w.family("vgpu_planner_rounds_total", "counter", "Planner rounds since the planner started, by outcome");
  w.sample("vgpu_planner_rounds_total", {{"node", in.node}, {"outcome", "ok"}}, static_cast<double>(p.rounds_ok));
  w.sample("vgpu_planner_rounds_total", {{"node", in.node}, {"outcome", "error"}},
           static_cast<double>(p.rounds_failed));
  w.family("vgpu_planner_last_round_timestamp_seconds", "gauge", "Unix time the planner's last round ended");
  w.sample("vgpu_planner_last_round_timestamp_seconds", {{"node", in.node}}, static_cast<double>(p.last_round_unix));
  w.family("vgpu_planner_round_duration_seconds", "histogram", "Duration of the planner's rounds");
  histogram(w, "vgpu_planner_round_duration_seconds", {{"node", in.node}}, p.round_seconds.upper_bounds,
            p.round_seconds.counts, p.round_seconds.sum, p.round_seconds.count);
  w.family("vgpu_compute_slice_seconds_total", "counter",
           "Compute-slice-seconds of the node's GPUs held by jobs (used) and in all (available), sampled each round");
  w.sample("vgpu_compute_slice_seconds_total", {{"node", in.node}, {"kind", "used"}}, p.used_slice_seconds);
  w.sample("vgpu_compute_slice_seconds_total", {{"node", in.node}, {"kind", "available"}}, p.available_slice_seconds);
}

void hook_metrics(Writer& w, const NodeMetricsInput& in) {
  const contract::HookTally& t = *in.hooks;
  w.family("vgpu_hook_duration_seconds", "histogram",
           "Duration of the node's prolog and epilog runs, and of each instance's scrub (hook=\"scrub\")");
  for (const auto hook : contract::kTimedSteps) {
    auto it = t.hooks.find(hook);
    const contract::HookDurations d = it == t.hooks.end() ? contract::HookDurations{} : it->second;
    histogram(w, "vgpu_hook_duration_seconds", {{"node", in.node}, {"hook", std::string(hook)}},
              contract::kHookSecondsBounds, d.buckets, d.sum_seconds, d.count);
  }
  w.family("vgpu_jobs_cancelled_total", "counter", "Jobs the node's prolog cancelled, by reason class");
  for (const auto reason : contract::kCancelClasses) {
    auto it = t.cancelled.find(reason);
    w.sample("vgpu_jobs_cancelled_total", {{"node", in.node}, {"reason", std::string(reason)}},
             it == t.cancelled.end() ? 0 : static_cast<double>(it->second));
  }
  w.family("vgpu_jobs_requeued_total", "counter", "Jobs the node's prolog put back in the queue (no room after all)");
  w.sample("vgpu_jobs_requeued_total", {{"node", in.node}}, static_cast<double>(t.requeued));
  w.family("vgpu_scrubs_total", "counter",
           "Instance scrubs by outcome (failed and unavailable ones quarantine or destroy the instance)");
  for (const auto outcome : contract::kScrubOutcomes) {
    auto it = t.scrubs.find(outcome);
    w.sample("vgpu_scrubs_total", {{"node", in.node}, {"outcome", std::string(outcome)}},
             it == t.scrubs.end() ? 0 : static_cast<double>(it->second));
  }
}

// Per instance (MIG on) or per GPU (MIG off): what the hardware's counters say the work did. The
// ledger names the instance's profile and job; an instance the ledger does not know (created
// behind the product's back) is still reported, with empty labels.
void activity_metrics(Writer& w, const NodeMetricsInput& in) {
  const ActivitySample& a = *in.activity;
  struct Row {
    std::vector<std::pair<std::string, std::string>> labels;
    const ActivityReading* r;
  };
  std::vector<Row> instances, gpus;
  for (const auto& r : a.readings) {
    if (!r.gi_id) {
      gpus.push_back({{{"node", in.node}, {"gpu", std::to_string(r.gpu)}, {"uuid", r.uuid}}, &r});
      continue;
    }
    std::string profile, job;
    if (in.ledger)
      for (const auto& i : in.ledger->instances)
        if (i.mig_uuid == r.uuid) {
          profile = i.profile;
          job = i.job ? std::to_string(*i.job) : "";
        }
    instances.push_back({{{"node", in.node},
                          {"gpu", std::to_string(r.gpu)},
                          {"gpu_instance", std::to_string(*r.gi_id)},
                          {"uuid", r.uuid},
                          {"profile", profile},
                          {"slurm_job", job}},
                         &r});
  }
  auto emit = [&](const std::vector<Row>& rows, std::string_view scope, std::string_view what) {
    auto name = [&](std::string_view m) { return fmt::format("vgpu_{}_{}", scope, m); };
    auto each = [&](std::string_view m, std::string_view type, std::string_view help, auto value) {
      bool any = std::ranges::any_of(rows, [&](const Row& row) { return value(*row.r).has_value(); });
      if (!any) return;
      w.family(name(m), type, fmt::format("{} of each {}", help, what));
      for (const auto& row : rows)
        if (auto v = value(*row.r)) w.sample(name(m), row.labels, static_cast<double>(*v));
    };
    each("sm_utilization_ratio", "gauge", "Fraction of the SMs busy since the previous round (NVML GPM SM_UTIL)",
         [](const ActivityReading& r) { return r.sm_utilization; });
    each("dram_bandwidth_utilization_ratio", "gauge",
         "Fraction of the DRAM bandwidth used since the previous round (NVML GPM DRAM_BW_UTIL)",
         [](const ActivityReading& r) { return r.dram_bandwidth_utilization; });
    each("memory_used_bytes", "gauge", "Device memory in use (nvmlDeviceGetMemoryInfo)",
         [](const ActivityReading& r) { return r.memory_used_bytes; });
    each("memory_total_bytes", "gauge", "Device memory in all (nvmlDeviceGetMemoryInfo)",
         [](const ActivityReading& r) { return r.memory_total_bytes; });
  };
  emit(instances, "instance", "MIG instance");
  emit(gpus, "gpu", "GPU without MIG");
  w.family("vgpu_gpus_without_gpm", "gauge", "GPUs whose hardware gives no GPM utilisation (before Hopper)");
  w.sample("vgpu_gpus_without_gpm", {{"node", in.node}}, a.gpus_without_support);
}

void nvml_error_metrics(Writer& w, const NodeMetricsInput& in) {
  w.family("vgpu_nvml_errors_total", "counter", "NVML calls of the planner that failed, by entry point");
  for (const auto& [call, n] : in.planner->nvml_errors)
    w.sample("vgpu_nvml_errors_total", {{"node", in.node}, {"call", call}}, static_cast<double>(n));
}

}  // namespace

void PlannerMetrics::record_activity_errors(const ActivitySample& sample) {
  for (const auto& e : sample.errors) {
    // "nvmlGpmMigSampleGet(gpu 0, gi 3): Not Found" -> nvmlGpmMigSampleGet; a label of few values.
    const auto paren = e.find('(');
    std::string call = e.starts_with("nvml") && paren != std::string::npos ? e.substr(0, paren) : "other";
    ++nvml_errors[call];
  }
}

void PlannerMetrics::record_round(bool ok, double seconds, std::int64_t now, const Ledger* ledger) {
  ++(ok ? rounds_ok : rounds_failed);
  round_seconds.observe(seconds);
  last_round_unix = now;
  if (ledger) {
    int total = 0;
    const int used = compute_slices_held_by_jobs(*ledger, total);
    if (last_sample_unix > 0 && now > last_sample_unix) {
      const auto dt = static_cast<double>(now - last_sample_unix);
      used_slice_seconds += used * dt;
      available_slice_seconds += total * dt;
    }
    last_sample_unix = now;
  }
}

int stranded_compute_slices(const GpuModel& model, const std::vector<const Profile*>& allowed,
                            const std::vector<std::pair<const Profile*, Placement>>& layout_slots) {
  GpuLayout layout(model);
  for (const auto& [p, at] : layout_slots) {
    layout.take_mode_of(*p);
    (void)layout.place(*p, at);
  }
  std::vector<const Profile*> by_size = allowed;
  std::ranges::sort(by_size, [](const Profile* a, const Profile* b) { return a->compute_slices < b->compute_slices; });
  // Fill with the smallest allowed profile that still fits until none does; what stays free then
  // cannot be used by any allowed profile.
  for (bool placed = true; placed;) {
    placed = false;
    for (const Profile* p : by_size)
      if (auto at = layout.best_placement(*p); at && layout.place(*p, *at)) {
        placed = true;
        break;
      }
  }
  return layout.free_compute_slices();
}

std::string render_node_metrics(const NodeMetricsInput& in) {
  Writer w;
  if (in.ledger) {
    instances_by_state(w, in);
    gpu_slices(w, in);
  }
  slurm_view(w, in);
  planner_metrics(w, in);
  if (in.planner) nvml_error_metrics(w, in);
  if (in.activity) activity_metrics(w, in);
  if (in.hooks) hook_metrics(w, in);
  return w.take();
}

}  // namespace vgpu
