// The whole simulator on a sample of the real openb trace (first 500 rows, 64 GPUs, 2 seeds),
// each policy wrapped in CheckingPacker so capacity is verified at every step.
#include "simulation.h"

#include <gtest/gtest.h>

#include "checking_packer.h"
#include "report.h"

namespace vgpu::bench {
namespace {

const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }

const Trace& sample_trace() {
  static const Trace t = [] {
    auto r = load_trace(VGPU_DATA_DIR "/openb/openb_pod_list_default.csv");
    if (!r) throw std::runtime_error(r.error().message);
    Trace s = *r;
    s.tasks.resize(500);
    return s;
  }();
  return t;
}

SimOptions sample_options() {
  SimOptions o;
  o.trace_path = "sample";
  o.policies = {PolicyKind::whole,
                PolicyKind::static_mig,
                PolicyKind::firstfit,
                PolicyKind::planner,
                PolicyKind::shared,
                PolicyKind::planner_weighted,
                PolicyKind::shared_weighted,
                PolicyKind::planner_preferring,
                PolicyKind::shared_preferring,
                PolicyKind::planner_filling,
                PolicyKind::shared_filling,
                PolicyKind::planner_preferring_filling,
                PolicyKind::shared_preferring_filling,
                PolicyKind::fgd_twin,
                PolicyKind::bestfit_twin,
                PolicyKind::fgd_mig,
                PolicyKind::planner_on_demand,
                PolicyKind::shared_on_demand};
  o.seeds = 2;
  o.gpus = 64;
  return o;
}

const SimResult& sample_result() {
  static const SimResult r = [] {
    auto s = run_simulation(sample_options(), sample_trace());
    if (!s) throw std::runtime_error(s.error().message);
    return *s;
  }();
  return r;
}

const PolicyResult& result_of(PolicyKind k) {
  for (const auto& p : sample_result().results)
    if (p.policy == k) return p;
  throw std::logic_error("policy missing");
}

TEST(Simulation, NoPolicyEverExceedsCapacityOrOverlapsInstances) {
  const Trace& trace = sample_trace();
  auto tasks = map_tasks(trace, h100(), 8);
  ClusterShape shape{64, 8};
  auto seq = arrival_sequence(tasks, 64'000, 0);
  StaticPlan plan = choose_static_plan(h100(), 64, arrival_demand(h100(), tasks, 64'000));
  const auto typical = typical_shapes(tasks);
  const auto typical_mig = typical_mig_shapes(tasks, h100());
  for (auto kind : sample_options().policies) {
    SCOPED_TRACE(std::string(policy_name(kind)));
    const auto& shapes = kind == PolicyKind::fgd_mig ? typical_mig : typical;
    CheckingPacker arrivals(make_packer(kind, h100(), shape, plan, NodeChoice::slurm, 7, shapes));
    ArrivalOutcome a = run_arrivals(arrivals, tasks, seq);
    EXPECT_GT(arrivals.allocations(), 10);
    EXPECT_LE(a.peak_allocated_slices, a.capacity_slices);
    CheckingPacker replay(make_packer(kind, h100(), shape, plan, NodeChoice::slurm, 7, shapes));
    ReplayOutcome r = run_replay(replay, trace, tasks);
    EXPECT_EQ(replay.allocated_slices(), 0) << "every task released at the end";
    EXPECT_EQ(r.started + r.never_started, r.tasks);
    EXPECT_LE(r.peak_allocated_slices, r.capacity_slices);
  }
}

TEST(Simulation, ArrivalsStopAtFullCapacityOfRequestedWork) {
  for (const auto& p : sample_result().results)
    for (const auto& s : p.per_seed) {
      EXPECT_GE(s.arrived_milli, 64'000);
      EXPECT_LT(s.arrived_milli, 64'000 + 8'000) << "stops at the task that reaches 100%";
      EXPECT_LE(s.served_milli, s.arrived_milli);
    }
}

TEST(Simulation, FluidBoundIsAtLeastEveryMigOnlyPolicy) {
  const SimResult& r = sample_result();
  for (const auto& p : r.results)
    for (std::size_t i = 0; i < p.per_seed.size(); ++i) {
      // Shares are not rounded to a profile, so the MIG bound does not hold them: capacity does.
      const bool shares = grants_shares(p.policy);
      double bound = shares ? 64'000 : r.bound_milli_per_seed[i];
      EXPECT_GE(bound + 1e-6, static_cast<double>(p.per_seed[i].served_milli))
          << policy_name(p.policy) << " seed " << i;
    }
  EXPECT_LE(r.bound_milli_per_seed[0], 64'000 + 1e-6);
}

TEST(Simulation, PlannerLeavesNoMoreCapacityUnusedThanFirstFit) {
  const auto& planner = result_of(PolicyKind::planner);
  const auto& firstfit = result_of(PolicyKind::firstfit);
  for (std::size_t i = 0; i < planner.per_seed.size(); ++i) {
    EXPECT_GE(planner.per_seed[i].served_milli, firstfit.per_seed[i].served_milli) << "seed " << i;
  }
  EXPECT_LE(summarize_arrivals(sample_result(), planner).fgd_unallocated_pct,
            summarize_arrivals(sample_result(), firstfit).fgd_unallocated_pct + 1e-9);
}

TEST(Simulation, MigRoundingIsAllocatedMinusRequested) {
  const SimResult& r = sample_result();
  for (const auto& p : r.results) {
    ArrivalSummary a = summarize_arrivals(r, p);
    SCOPED_TRACE(std::string(policy_name(p.policy)));
    EXPECT_GE(a.rounding_gpus, 0);
    EXPECT_NEAR(a.stranded_gpus + a.served_gpus + a.rounding_gpus, 64, 1e-9);
    // FGD's metric is exactly what rounding and stranding leave unserved.
    EXPECT_NEAR(a.fgd_unallocated_pct, a.rounding_pct + a.stranded_pct, 1e-9);
    EXPECT_GE(a.failed_work_pct + 1e-9, a.fgd_unallocated_pct - 100.0 * 8 / 64)
        << "arrivals stop within one task of 100 %, so refused work ~ unserved capacity";
  }
  // Whole GPUs round every sharing task up to 1000 milli: more rounding than dynamic MIG.
  EXPECT_GT(summarize_arrivals(r, result_of(PolicyKind::whole)).rounding_gpus,
            summarize_arrivals(r, result_of(PolicyKind::planner)).rounding_gpus);
}

TEST(Simulation, WholeGpuRoundingEqualsUnrequestedShareOfPlacedTasks) {
  // Recomputed independently of the report: sum over placed tasks of (GPUs x 1000 - request).
  const Trace& trace = sample_trace();
  auto tasks = map_tasks(trace, h100(), 8);
  auto seq = arrival_sequence(tasks, 64'000, 1);
  auto packer = make_packer(PolicyKind::whole, h100(), ClusterShape{64, 8}, StaticPlan{});
  ASSERT_EQ(seq, arrival_sequence(tasks, 64'000, 1)) << "a seed's arrivals are reproducible";
  long long rounding = 0;
  for (int i : seq) {
    const MappedTask& t = tasks[static_cast<std::size_t>(i)];
    if (packer->allocate(t)) rounding += 1000LL * t.gpus - t.requested_milli;
  }
  ArrivalOutcome o = result_of(PolicyKind::whole).per_seed[1];
  EXPECT_EQ(o.allocated_slices * 1000 / 7 - o.served_milli, rounding);
}

// Arrivals never leave, so no GPU empties and no tie between GPUs of either mode arises: whole GPUs
// cost what 7g instances did (all 7 compute slices each) and serve the same work, seed by seed.
TEST(Simulation, WholeGpusForMultiGpuTasksChangeNothingOnFgdsMetricInArrivals) {
  for (auto [today, on_demand] : {std::pair{PolicyKind::planner, PolicyKind::planner_on_demand},
                                  std::pair{PolicyKind::shared, PolicyKind::shared_on_demand}}) {
    SCOPED_TRACE(std::string(policy_name(on_demand)));
    const auto& before = result_of(today);
    const auto& after = result_of(on_demand);
    for (std::size_t i = 0; i < before.per_seed.size(); ++i) {
      EXPECT_EQ(after.per_seed[i].served_milli, before.per_seed[i].served_milli);
      EXPECT_EQ(after.per_seed[i].allocated_slices, before.per_seed[i].allocated_slices);
      EXPECT_EQ(before.per_seed[i].mode_switches, 0);
      EXPECT_GT(after.per_seed[i].mode_switches, 0) << "the sample's multi-GPU tasks took whole GPUs";
    }
  }
}

TEST(Simulation, ReportCarriesTheRequiredFields) {
  auto j = to_json(sample_result());
  ASSERT_EQ(j["results"].size(), sample_options().policies.size());
  EXPECT_EQ(j.begin().key(), "trace");
  EXPECT_TRUE(j.contains("ceilings_fgd_unallocated_pct"));
  for (const auto& e : j["results"]) {
    EXPECT_EQ(e.begin().key(), "policy");
    EXPECT_EQ(std::next(e.begin()).key(), "fgd_unallocated_pct") << "the comparable metric leads";
    EXPECT_GE(e["fgd_unallocated_pct"].get<double>(), 0);
    EXPECT_GE(e["p95_wait_s"].get<double>(), 0);
  }
  EXPECT_NE(to_table(sample_result()).find("planner"), std::string::npos);
}

TEST(Simulation, SharedInstancesRoundLessThanDedicatedOnes) {
  const SimResult& r = sample_result();
  auto shared = summarize_arrivals(r, result_of(PolicyKind::shared));
  auto planner = summarize_arrivals(r, result_of(PolicyKind::planner));
  EXPECT_LT(shared.rounding_pct, planner.rounding_pct);
  EXPECT_LE(shared.fgd_unallocated_pct, planner.fgd_unallocated_pct + 1e-9);
}

TEST(Simulation, OfflineBoundIsAtLeastEveryMigOnlyPolicyAndTheOnlineCeiling) {
  const SimResult& r = sample_result();
  for (std::size_t i = 0; i < r.bound_milli_per_seed.size(); ++i)
    EXPECT_GE(r.bound_milli_per_seed[i] + 1e-6, static_cast<double>(r.ceiling_milli_per_seed[i]));
  Ceilings c = summarize_ceilings(r);
  EXPECT_LE(c.offline_mig_pct, c.online_mig_pct + 1e-9);
  for (const auto& p : r.results) {
    // Shares are not rounded: the bound is MIG's.
    if (grants_shares(p.policy)) continue;
    EXPECT_LE(c.offline_mig_pct, summarize_arrivals(r, p).fgd_unallocated_pct + 1e-9) << policy_name(p.policy);
  }
}

TEST(Simulation, PublishedNumbersAreShownForTheTracesWorkload) {
  SimOptions o = sample_options();
  o.policies = {PolicyKind::planner};
  o.seeds = 1;
  o.published_path = VGPU_DATA_DIR "/openb/fgd_published.csv";
  Trace t = sample_trace();
  t.path = "x/openb_pod_list_default.csv";
  auto r = run_simulation(o, t);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->workload, "default");
  EXPECT_DOUBLE_EQ(r->published_unallocated_pct.at("fgd"), 4.77);
  EXPECT_NE(to_table(*r).find("fgd 4.77"), std::string::npos);
}

TEST(Simulation, RealNodeShapesLimitTasksByHostCpuAndMemory) {
  SimOptions o = sample_options();
  o.nodes_path = VGPU_DATA_DIR "/openb/openb_node_list_gpu_node.csv";
  o.policies = {PolicyKind::planner};
  o.seeds = 1;
  auto r = run_simulation(o, sample_trace());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->options.gpus, 6212);
  EXPECT_EQ(r->nodes, 1213);
  EXPECT_TRUE(r->host_constrained);
  EXPECT_FALSE(r->has_times) << "a node list runs the arrival experiment only";
}

TEST(Simulation, RejectsAnUnknownModel) {
  SimOptions o = sample_options();
  o.model = "H999";
  auto r = run_simulation(o, sample_trace());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("H999"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::bench
