// Speed of the placement engine and of the trace simulator. Numbers only; nothing here asserts a
// time. Run a Release build: ./vgpu_bench_core [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <random>
#include <stdexcept>

#include "arrivals.h"
#include "replay.h"
#include "simulation.h"
#include "vgpu/core/planner.h"

namespace {

using namespace vgpu;
using namespace vgpu::bench;

const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }

std::vector<const Profile*> plain_profiles() {
  std::vector<const Profile*> out;
  for (const auto& p : h100().profiles)
    if (p.name.find('+') == std::string::npos) out.push_back(&p);
  return out;
}

// A GPU filled with random profiles (placed the planner's way) until a random number of tries fail.
GpuLayout random_gpu(std::mt19937& rng) {
  static const auto profiles = plain_profiles();
  GpuLayout g(h100());
  int tries = static_cast<int>(rng() % 6);
  for (int i = 0; i < tries; ++i) {
    const Profile& p = *profiles[rng() % profiles.size()];
    if (auto w = g.best_placement(p)) (void)g.place(p, *w);
  }
  return g;
}

std::vector<PlannerGpu> random_node(std::mt19937& rng) {
  std::vector<PlannerGpu> node;
  for (int i = 0; i < 8; ++i) node.push_back({random_gpu(rng), true});
  return node;
}

std::vector<Demand> random_demand(std::mt19937& rng) {
  static const char* names[] = {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"};
  std::vector<Demand> d;
  int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) d.push_back({names[rng() % 5], 1 + static_cast<int>(rng() % 3), false});
  return d;
}

void BM_GpuBestPlacement(benchmark::State& state) {
  std::mt19937 rng(1);
  auto profiles = plain_profiles();
  std::vector<GpuLayout> gpus;
  for (int i = 0; i < 256; ++i) gpus.push_back(random_gpu(rng));
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(gpus[i % gpus.size()].best_placement(*profiles[i % profiles.size()]));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GpuBestPlacement);

// One placement decision for a node of 8 H100-80GB: plan_node asked for a single instance.
void BM_NodePlacementDecision(benchmark::State& state) {
  std::mt19937 rng(2);
  auto profiles = plain_profiles();
  std::vector<std::vector<PlannerGpu>> nodes;
  for (int i = 0; i < 64; ++i) nodes.push_back(random_node(rng));
  std::size_t i = 0;
  for (auto _ : state) {
    std::vector<Demand> d{{profiles[i % profiles.size()]->name, 1, false}};
    benchmark::DoNotOptimize(plan_node(nodes[i % nodes.size()], PlannerConfig{}, d));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NodePlacementDecision);

// A full advertisement for one node: random occupancy, 1-4 demands, idle layout fallback.
void BM_PlanNode(benchmark::State& state) {
  std::mt19937 rng(3);
  std::vector<std::vector<PlannerGpu>> nodes;
  std::vector<std::vector<Demand>> demands;
  for (int i = 0; i < 64; ++i) {
    nodes.push_back(random_node(rng));
    demands.push_back(random_demand(rng));
  }
  PlannerConfig config{{}, {"3g.40gb", "2g.20gb", "1g.10gb"}};
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(plan_node(nodes[i % 64], config, demands[i % 64]));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlanNode);

// Time to plan a 1,000-node cluster of 8-GPU nodes (each node planned independently, as slurmd
// on every node does): one iteration = 1,000 plan_node calls.
void BM_Plan1000Nodes(benchmark::State& state) {
  std::mt19937 rng(4);
  std::vector<std::vector<PlannerGpu>> nodes;
  std::vector<std::vector<Demand>> demands;
  for (int i = 0; i < 1000; ++i) {
    nodes.push_back(random_node(rng));
    demands.push_back(random_demand(rng));
  }
  PlannerConfig config{{}, {"3g.40gb", "2g.20gb", "1g.10gb"}};
  for (auto _ : state)
    for (int n = 0; n < 1000; ++n) benchmark::DoNotOptimize(plan_node(nodes[n], config, demands[n]));
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_Plan1000Nodes)->Unit(benchmark::kMillisecond);

struct TraceFixture {
  Trace trace;
  std::vector<MappedTask> tasks;
  std::vector<int> sequence;
  StaticPlan arrivals_plan, replay_plan;
  static const TraceFixture& get() {
    static const TraceFixture f = [] {
      TraceFixture x;
      auto t = load_trace(VGPU_DATA_DIR "/openb/openb_pod_list_default.csv");
      if (!t) throw std::runtime_error(t.error().message);
      x.trace = *t;
      x.tasks = map_tasks(x.trace, h100(), 8);
      x.sequence = arrival_sequence(x.tasks, 6212 * 1000LL, 0);
      x.arrivals_plan = choose_static_plan(h100(), 6212, arrival_demand(h100(), x.tasks, 6212000));
      x.replay_plan = choose_static_plan(h100(), 6212, replay_demand(h100(), x.trace, x.tasks, 6212 * 7));
      return x;
    }();
    return f;
  }
};

constexpr PolicyKind kPolicies[] = {PolicyKind::whole, PolicyKind::static_mig, PolicyKind::firstfit,
                                    PolicyKind::planner};

// The arrival experiment on the openb default trace over 6,212 GPUs: one seed per iteration.
void BM_TraceArrivals(benchmark::State& state) {
  const auto& f = TraceFixture::get();
  PolicyKind kind = kPolicies[state.range(0)];
  state.SetLabel(std::string(policy_name(kind)));
  for (auto _ : state) {
    auto packer = make_packer(kind, h100(), ClusterShape{6212, 8}, f.arrivals_plan);
    benchmark::DoNotOptimize(run_arrivals(*packer, f.tasks, f.sequence));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<long>(f.sequence.size()));
}
BENCHMARK(BM_TraceArrivals)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

// The replay with departures of the same trace (all 8,152 rows, 6,212 GPUs).
void BM_TraceReplay(benchmark::State& state) {
  const auto& f = TraceFixture::get();
  PolicyKind kind = kPolicies[state.range(0)];
  state.SetLabel(std::string(policy_name(kind)));
  for (auto _ : state) {
    auto packer = make_packer(kind, h100(), ClusterShape{6212, 8}, f.replay_plan);
    benchmark::DoNotOptimize(run_replay(*packer, f.trace, f.tasks));
  }
}
BENCHMARK(BM_TraceReplay)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
