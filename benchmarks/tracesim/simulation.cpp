#include "simulation.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "mig_packer.h"
#include "node_list_csv.h"
#include "published.h"
#include "static_packer.h"

namespace vgpu::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::size_t index_of(const GpuModel& model, const Profile* p) {
  return static_cast<std::size_t>(p - model.profiles.data());
}

}  // namespace

std::unique_ptr<Packer> make_packer(PolicyKind kind, const GpuModel& model, ClusterShape shape, const StaticPlan& plan,
                                    NodeChoice node_choice, int share_min_slices,
                                    const std::vector<TaskShape>& typical) {
  auto mig = [&](MigPacker::Mode mode, NodeWeighting node_weights = NodeWeighting::none,
                 bool node_preferences = false) {
    return std::make_unique<MigPacker>(model, std::move(shape), mode, node_choice, share_min_slices, node_weights,
                                       node_preferences);
  };
  switch (kind) {
    case PolicyKind::whole: return mig(MigPacker::Mode::whole);
    case PolicyKind::firstfit: return mig(MigPacker::Mode::firstfit);
    case PolicyKind::planner: return mig(MigPacker::Mode::planner);
    case PolicyKind::shared: return mig(MigPacker::Mode::shared);
    case PolicyKind::planner_weighted: return mig(MigPacker::Mode::planner, NodeWeighting::by_use);
    case PolicyKind::shared_weighted: return mig(MigPacker::Mode::shared, NodeWeighting::by_use);
    case PolicyKind::planner_preferring: return mig(MigPacker::Mode::planner, NodeWeighting::none, true);
    case PolicyKind::shared_preferring: return mig(MigPacker::Mode::shared, NodeWeighting::none, true);
    case PolicyKind::planner_filling: return mig(MigPacker::Mode::planner, NodeWeighting::by_free_capacity);
    case PolicyKind::shared_filling: return mig(MigPacker::Mode::shared, NodeWeighting::by_free_capacity);
    case PolicyKind::planner_preferring_filling:
      return mig(MigPacker::Mode::planner, NodeWeighting::by_free_capacity, true);
    case PolicyKind::shared_preferring_filling:
      return mig(MigPacker::Mode::shared, NodeWeighting::by_free_capacity, true);
    case PolicyKind::static_mig: return std::make_unique<StaticPacker>(model, std::move(shape), plan, node_choice);
    case PolicyKind::fgd_twin:
      return std::make_unique<MigPacker>(model, std::move(shape), PublishedScheduler::fgd, typical);
    case PolicyKind::fgd_mig:
      return std::make_unique<MigPacker>(model, std::move(shape), PublishedScheduler::fgd, typical,
                                         MigPacker::Mode::planner);
    case PolicyKind::planner_on_demand:
      return std::make_unique<MigPacker>(model, std::move(shape), MigPacker::Mode::planner, node_choice,
                                         share_min_slices, NodeWeighting::none, false, true);
    case PolicyKind::shared_on_demand:
      return std::make_unique<MigPacker>(model, std::move(shape), MigPacker::Mode::shared, node_choice,
                                         share_min_slices, NodeWeighting::none, false, true);
    case PolicyKind::bestfit_twin:
      return std::make_unique<MigPacker>(model, std::move(shape), PublishedScheduler::bestfit,
                                         std::vector<TaskShape>{});
  }
  return nullptr;
}

std::vector<ProfileDemand> arrival_demand(const GpuModel& model, const std::vector<MappedTask>& tasks,
                                          long long capacity_milli) {
  std::vector<ProfileDemand> d(model.profiles.size());
  std::vector<double> work(model.profiles.size(), 0.0);
  long long total = 0;
  for (const auto& t : tasks) {
    if (!t.profile) continue;
    auto p = index_of(model, t.profile);
    d[p].instances += t.gpus;
    work[p] += static_cast<double>(t.requested_milli);
    total += t.requested_milli;
  }
  double scale = total > 0 ? static_cast<double>(capacity_milli) / static_cast<double>(total) : 0;
  for (std::size_t p = 0; p < d.size(); ++p) {
    if (d[p].instances > 0) d[p].milli_per_instance = work[p] / d[p].instances;
    d[p].instances *= scale;
  }
  return d;
}

std::vector<ProfileDemand> replay_demand(const GpuModel& model, const Trace& trace,
                                         const std::vector<MappedTask>& tasks, long long capacity_slices) {
  std::vector<ProfileDemand> d(model.profiles.size());
  std::vector<double> work(model.profiles.size(), 0.0);
  double slices = 0;
  for (const auto& t : tasks) {
    const TraceTask& tt = trace.tasks[static_cast<std::size_t>(t.trace_index)];
    if (!t.profile || !tt.scheduled_s) continue;
    // Weight by run time: a long task holds its instance for longer, so it needs more supply.
    double secs = static_cast<double>(tt.deletion_s - *tt.scheduled_s) + 1;
    auto p = index_of(model, t.profile);
    d[p].instances += secs * t.gpus;
    work[p] += secs * static_cast<double>(t.requested_milli);
    slices += secs * t.slices();
  }
  double scale = slices > 0 ? static_cast<double>(capacity_slices) / slices : 0;
  for (std::size_t p = 0; p < d.size(); ++p) {
    if (d[p].instances > 0) d[p].milli_per_instance = work[p] / d[p].instances;
    d[p].instances *= scale;
  }
  return d;
}

Result<SimResult> run_simulation(const SimOptions& options) {
  auto trace = load_trace(options.trace_path);
  if (!trace) return std::unexpected(trace.error());
  return run_simulation(options, *trace);
}

Result<SimResult> run_simulation(const SimOptions& options, const Trace& full_trace) {
  if (options.gpus < 1 || options.gpus_per_node < 1 || options.seeds < 1)
    return fail(ErrorCode::invalid_argument, "gpus, gpus per node and seeds must be at least 1");
  auto model = Catalog::builtin().require_model(options.model);
  if (!model) return std::unexpected(model.error());
  const GpuModel& m = **model;

  Trace trace = full_trace;
  if (options.max_tasks > 0 && std::ssize(trace.tasks) > options.max_tasks)
    trace.tasks.resize(static_cast<std::size_t>(options.max_tasks));

  ClusterShape shape{options.gpus, options.gpus_per_node};
  if (!options.nodes_path.empty()) {
    auto listed = load_node_list(options.nodes_path);
    if (!listed) return std::unexpected(listed.error());
    shape = std::move(*listed);
  }

  SimResult r;
  r.options = options;
  r.options.gpus = shape.gpus();
  r.nodes = shape.nodes();
  r.host_constrained = shape.host_constrained();
  r.trace_path = trace.path;
  // The replay measures queueing on a small uniform cluster; a node list is the arrival experiment.
  r.has_times = trace.has_times && options.nodes_path.empty();
  r.trace_rows = static_cast<int>(trace.tasks.size());
  auto tasks = map_tasks(trace, m, shape.widest_node());
  r.mapping = summarize(tasks);
  if (r.mapping.gpu_tasks == 0) return fail(ErrorCode::invalid_argument, fmt::format("{}: no GPU tasks", trace.path));
  if (auto w = workload_of_trace(trace.path)) r.workload = *w;
  if (!options.published_path.empty()) {
    auto published = load_published(options.published_path);
    if (!published) return std::unexpected(published.error());
    if (auto it = published->find(r.workload); it != published->end())
      r.published_unallocated_pct = it->second.unallocated_pct;
  }

  r.capacity_slices = static_cast<long long>(shape.gpus()) * m.compute_slices;
  const std::vector<TaskShape> typical = typical_shapes(tasks);
  const std::vector<TaskShape> typical_mig = typical_mig_shapes(tasks, m);
  long long capacity_milli = 1000LL * shape.gpus();

  std::vector<std::vector<int>> sequences;
  for (int s = 0; s < options.seeds; ++s) {
    sequences.push_back(arrival_sequence(tasks, capacity_milli, static_cast<std::uint64_t>(s), options.tune_ratio));
    r.bound_milli_per_seed.push_back(fluid_bound_milli(tasks, sequences.back(), r.capacity_slices));
    r.ceiling_milli_per_seed.push_back(online_mig_ceiling_milli(tasks, sequences.back(), r.capacity_slices));
  }

  for (PolicyKind kind : options.policies) {
    PolicyResult pr;
    pr.policy = kind;
    const std::vector<TaskShape>& shapes = kind == PolicyKind::fgd_mig ? typical_mig : typical;
    StaticPlan arrivals_plan, replay_plan;
    if (kind == PolicyKind::static_mig) {
      arrivals_plan = choose_static_plan(m, shape.gpus(), arrival_demand(m, tasks, capacity_milli));
      pr.static_plan_arrivals = arrivals_plan.describe();
    }
    auto t0 = Clock::now();
    for (const auto& seq : sequences) {
      auto packer = make_packer(kind, m, shape, arrivals_plan, options.node_choice, options.share_min_slices, shapes);
      pr.per_seed.push_back(run_arrivals(*packer, tasks, seq));
    }
    pr.arrival_seconds_per_seed = seconds_since(t0) / options.seeds;
    if (r.has_times) {
      if (kind == PolicyKind::static_mig) {
        replay_plan = choose_static_plan(m, shape.gpus(), replay_demand(m, trace, tasks, r.capacity_slices));
        pr.static_plan_replay = replay_plan.describe();
      }
      auto t1 = Clock::now();
      auto packer = make_packer(kind, m, shape, replay_plan, options.node_choice, options.share_min_slices, shapes);
      ReplayOptions replay_options;
      replay_options.util_buckets = options.util_buckets;
      replay_options.reserve_after_s = options.reserve_after_s;
      replay_options.start_latency_s = reshapes_nodes(kind) ? options.start_latency_s : 0;
      replay_options.latency_only_for_new_slots = options.latency_only_for_new_slots;
      pr.replay = run_replay(*packer, trace, tasks, replay_options);
      pr.replay_seconds = seconds_since(t1);
      for (int s = 1; s <= options.replay_seeds; ++s) {
        auto jittered = make_packer(kind, m, shape, replay_plan, options.node_choice, options.share_min_slices, shapes);
        replay_options.jitter_seed = static_cast<std::uint64_t>(s);
        replay_options.jitter_s = options.jitter_s;
        pr.jittered.push_back(run_replay(*jittered, trace, tasks, replay_options));
      }
    }
    r.results.push_back(std::move(pr));
  }
  return r;
}

}  // namespace vgpu::bench
