// The node's Prometheus metrics (metrics.h): what each family says about a known ledger.
#include "vgpu/node/metrics.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

PolicyFile policy(std::string_view text) {
  auto parsed = parse_policy(text, "policy.json");
  if (!parsed) throw std::runtime_error(parsed.error().message);
  return *parsed;
}

LedgerInstance instance(int gpu, std::string profile, Placement at, InstanceState state, std::optional<JobId> job) {
  LedgerInstance i;
  i.gpu = gpu;
  i.profile = std::move(profile);
  i.placement = at;
  i.state = state;
  i.job = job;
  i.mig_uuid = "MIG-" + std::to_string(gpu) + "-" + std::to_string(at.start);
  if (job) i.user = "alice";
  return i;
}

// One H100: a running 3g.40gb (job 5) at 0-3, a quarantined 1g.10gb at 4, a planned 1g.10gb slot
// at 5 and a slot job 6 claimed at 6 whose instance is not there yet.
Ledger one_gpu() {
  Ledger l;
  l.node = "n1";
  l.gpus.push_back({0, "GPU-0", "H100-80GB", "0000:00:06.0"});
  l.instances.push_back(instance(0, "3g.40gb", {0, 4}, InstanceState::ready, 5));
  l.instances.push_back(instance(0, "1g.10gb", {4, 1}, InstanceState::quarantined, std::nullopt));
  l.plan.slots.push_back({0, "3g.40gb", {0, 4}, 5});
  l.plan.slots.push_back({0, "1g.10gb", {5, 1}, std::nullopt});
  l.plan.slots.push_back({0, "1g.10gb", {6, 1}, 6});
  return l;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

TEST(NodeMetrics, InstancesAreCountedByProfileAndStateSlotsWithoutAnInstanceAsPlannedOrClaimed) {
  const Ledger l = one_gpu();
  NodeMetricsInput in;
  in.node = "n1";
  in.ledger = &l;
  const auto text = render_node_metrics(in);
  EXPECT_TRUE(has_line(text, R"(vgpu_instances{node="n1",profile="3g.40gb",state="running"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_instances{node="n1",profile="3g.40gb",state="planned"} 0)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_instances{node="n1",profile="1g.10gb",state="quarantined"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_instances{node="n1",profile="1g.10gb",state="planned"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_instances{node="n1",profile="1g.10gb",state="claimed"} 1)")) << text;
  EXPECT_TRUE(has_line(text, "# TYPE vgpu_instances gauge")) << text;
}

TEST(NodeMetrics, ComputeSlicesSplitIntoInstancesPlanSlotsAndFree) {
  const Ledger l = one_gpu();
  NodeMetricsInput in;
  in.node = "n1";
  in.ledger = &l;
  const auto text = render_node_metrics(in);
  // 3g (3) + 1g (1) held by instances, two 1g slots planned, 7 - 4 - 2 free.
  EXPECT_TRUE(has_line(text, R"(vgpu_gpu_compute_slices{node="n1",gpu="0",model="H100-80GB",state="instance"} 4)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_gpu_compute_slices{node="n1",gpu="0",model="H100-80GB",state="planned"} 2)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_gpu_compute_slices{node="n1",gpu="0",model="H100-80GB",state="free"} 1)")) << text;
}

TEST(NodeMetrics, FreeSlicesNoAllowedProfileFitsAreStranded) {
  const auto& h100 = *Catalog::builtin().find_model("H100-80GB");
  const Profile* g3 = h100.find_profile("3g.40gb");
  const Profile* g1 = h100.find_profile("1g.10gb");
  const Profile* g2 = h100.find_profile("2g.20gb");
  // Two 3g.40gb take every memory slice and 6 of 7 compute slices: the seventh is free, and no
  // profile can use it (each needs a memory slice).
  EXPECT_EQ(stranded_compute_slices(h100, {g1, g2, g3}, {{g3, {0, 4}}, {g3, {4, 4}}}), 1);
  // An empty GPU strands nothing where 1g.10gb is allowed. Where only 3g.40gb is, and one holds
  // half the GPU, the second fits the other half and the seventh compute slice is left. With no
  // allowed profile, every slice is.
  EXPECT_EQ(stranded_compute_slices(h100, {g1}, {}), 0);
  EXPECT_EQ(stranded_compute_slices(h100, {g3}, {{g3, {0, 4}}}), 1);
  EXPECT_EQ(stranded_compute_slices(h100, {}, {}), 7);
}

TEST(NodeMetrics, StrandedUsesThePartitionsOfTheNodeFromThePolicy) {
  Ledger l;
  l.node = "n1";
  l.gpus.push_back({0, "GPU-0", "H100-80GB", "0000:00:06.0"});
  l.instances.push_back(instance(0, "4g.40gb", {0, 4}, InstanceState::ready, 7));
  // 3 compute slices and 4 memory slices free: a 3g.40gb fits (train), nothing is stranded; a node
  // whose only partition allows 4g.40gb and 7g.80gb has all 3 stranded.
  auto train = policy(R"({"version": 1, "partitions": {"train": {"profiles": ["3g.40gb"]}}})");
  auto big = policy(R"({"version": 1, "partitions": {"big": {"profiles": ["4g.40gb", "7g.80gb"]}}})");
  NodeMetricsInput in;
  in.node = "n1";
  in.ledger = &l;
  in.policy = &train;
  EXPECT_TRUE(
      has_line(render_node_metrics(in), R"(vgpu_gpu_stranded_compute_slices{node="n1",gpu="0",model="H100-80GB"} 0)"));
  in.policy = &big;
  EXPECT_TRUE(
      has_line(render_node_metrics(in), R"(vgpu_gpu_stranded_compute_slices{node="n1",gpu="0",model="H100-80GB"} 3)"));
}

TEST(NodeMetrics, SlurmsViewBesideTheAdvertisement) {
  NodeMetricsInput in;
  in.node = "n1";
  in.advertised = {{"1g.10gb", 4}, {"2g.20gb", 2}};
  in.slurm = NodeGres{{{"never", 0}, {"free", 8}, {"1g.10gb", 4}, {"2g.20gb", 2}, {"7g.80gb", 0}, {"3g.40gb", 0}},
                      {{"1g.10gb", 3}, {"3g.40gb", 1}},
                      "MIXED",
                      std::nullopt,
                      std::nullopt,
                      std::nullopt};
  const auto text = render_node_metrics(in);
  EXPECT_TRUE(has_line(text, R"(vgpu_advertised_instances{node="n1",type="2g.20gb"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_slurm_configured{node="n1",type="free"} 8)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_slurm_allocated{node="n1",type="1g.10gb"} 3)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_slurm_allocated{node="n1",type="2g.20gb"} 0)")) << text;
  // A type at zero is left out, unless a job holds one (slurmctld after a restart, docs/slurm.md).
  EXPECT_TRUE(has_line(text, R"(vgpu_slurm_allocated{node="n1",type="3g.40gb"} 1)")) << text;
  EXPECT_EQ(text.find("7g.80gb"), std::string::npos) << text;
  EXPECT_EQ(text.find("never"), std::string::npos) << text;
  EXPECT_EQ(text.find("vgpu_slurm_node_weight"), std::string::npos) << "no Weight= shown, no series";
  in.slurm->weight = 10;
  EXPECT_TRUE(has_line(render_node_metrics(in), R"(vgpu_slurm_node_weight{node="n1"} 10)")) << render_node_metrics(in);
}

TEST(NodeMetrics, RoundHistogramIsCumulativeWithInfAndCountersAccumulateSliceSeconds) {
  const Ledger l = one_gpu();  // job 5's 3g.40gb: 3 of 7 compute slices held by a job
  PlannerMetrics p;
  p.record_round(true, 0.003, 1000, &l);
  p.record_round(true, 0.2, 1010, &l);
  p.record_round(false, 20, 1011, nullptr);
  NodeMetricsInput in;
  in.node = "n1";
  in.planner = &p;
  const auto text = render_node_metrics(in);
  EXPECT_TRUE(has_line(text, R"(vgpu_planner_round_duration_seconds_bucket{node="n1",le="0.005"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_planner_round_duration_seconds_bucket{node="n1",le="0.25"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_planner_round_duration_seconds_bucket{node="n1",le="10"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_planner_round_duration_seconds_bucket{node="n1",le="+Inf"} 3)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_planner_round_duration_seconds_count{node="n1"} 3)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_planner_rounds_total{node="n1",outcome="error"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_planner_last_round_timestamp_seconds{node="n1"} 1011)")) << text;
  // 10 s between the samples with a ledger: 3 x 10 used, 7 x 10 available.
  EXPECT_TRUE(has_line(text, R"(vgpu_compute_slice_seconds_total{node="n1",kind="used"} 30)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_compute_slice_seconds_total{node="n1",kind="available"} 70)")) << text;
}

TEST(NodeMetrics, HookDurationsAndCancelledJobsByReasonFromTheHookTally) {
  contract::HookTally t{"n1", {}, {{"policy", 2}}, 1, {{"clean", 4}, {"failed", 1}}};
  t.hooks["scrub"].observe(1.5);
  t.hooks["prolog"].observe(0.02);
  t.hooks["prolog"].observe(3);
  NodeMetricsInput in;
  in.node = "n1";
  in.hooks = &t;
  const auto text = render_node_metrics(in);
  EXPECT_TRUE(has_line(text, R"(vgpu_hook_duration_seconds_bucket{node="n1",hook="prolog",le="0.025"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_hook_duration_seconds_bucket{node="n1",hook="prolog",le="2.5"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_hook_duration_seconds_bucket{node="n1",hook="prolog",le="+Inf"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_hook_duration_seconds_count{node="n1",hook="epilog"} 0)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_jobs_cancelled_total{node="n1",reason="policy"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_jobs_cancelled_total{node="n1",reason="hardware"} 0)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_jobs_requeued_total{node="n1"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_hook_duration_seconds_count{node="n1",hook="scrub"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_scrubs_total{node="n1",outcome="clean"} 4)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_scrubs_total{node="n1",outcome="failed"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_scrubs_total{node="n1",outcome="unavailable"} 0)")) << text;
}

TEST(NodeMetrics, InstanceUtilisationIsLabelledWithTheLedgersProfileAndJob) {
  const Ledger l = one_gpu();
  ActivitySample a;
  ActivityReading running;
  running.gpu = 0;
  running.gi_id = 2;
  running.uuid = "MIG-0-0";  // the 3g.40gb job 5 runs on
  running.sm_utilization = 0.6;
  running.dram_bandwidth_utilization = 0.25;
  running.memory_used_bytes = 4096;
  running.memory_total_bytes = 8192;
  ActivityReading first_round = running;  // GPM has no utilisation before a second sample
  first_round.gi_id = 9;
  first_round.uuid = "MIG-0-4";
  first_round.sm_utilization.reset();
  first_round.dram_bandwidth_utilization.reset();
  a.readings = {running, first_round};
  a.gpus_without_support = 0;
  NodeMetricsInput in;
  in.node = "n1";
  in.ledger = &l;
  in.activity = &a;
  const auto text = render_node_metrics(in);
  const std::string labels = R"({node="n1",gpu="0",gpu_instance="2",uuid="MIG-0-0",profile="3g.40gb",slurm_job="5"})";
  EXPECT_TRUE(has_line(text, "vgpu_instance_sm_utilization_ratio" + labels + " 0.6")) << text;
  EXPECT_TRUE(has_line(text, "vgpu_instance_dram_bandwidth_utilization_ratio" + labels + " 0.25")) << text;
  EXPECT_TRUE(has_line(text, "vgpu_instance_memory_used_bytes" + labels + " 4096")) << text;
  EXPECT_TRUE(has_line(
      text,
      R"(vgpu_instance_memory_used_bytes{node="n1",gpu="0",gpu_instance="9",uuid="MIG-0-4",profile="1g.10gb",slurm_job=""} 4096)"))
      << text;
  EXPECT_EQ(text.find(R"(vgpu_instance_sm_utilization_ratio{node="n1",gpu="0",gpu_instance="9")"), std::string::npos)
      << "no value is better than a made-up zero";
  EXPECT_TRUE(has_line(text, "# TYPE vgpu_instance_sm_utilization_ratio gauge")) << text;
  EXPECT_EQ(text.find("vgpu_gpu_sm_utilization_ratio"), std::string::npos) << "no GPU runs with MIG off here";
}

TEST(NodeMetrics, AWholeGpuWithMigOffAndNvmlErrorsByCall) {
  ActivitySample a;
  ActivityReading whole;
  whole.gpu = 1;
  whole.uuid = "GPU-1";
  whole.sm_utilization = 0.9;
  a.readings = {whole};
  a.gpus_without_support = 1;
  a.errors = {"nvmlGpmMigSampleGet(gpu 0, gi 3): Not Found", "nvmlGpmMigSampleGet(gpu 0, gi 4): Not Found",
              "gpu 2: no such GPU"};
  PlannerMetrics p;
  p.record_activity_errors(a);
  NodeMetricsInput in;
  in.node = "n1";
  in.activity = &a;
  in.planner = &p;
  const auto text = render_node_metrics(in);
  EXPECT_TRUE(has_line(text, R"(vgpu_gpu_sm_utilization_ratio{node="n1",gpu="1",uuid="GPU-1"} 0.9)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_gpus_without_gpm{node="n1"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_nvml_errors_total{node="n1",call="nvmlGpmMigSampleGet"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_nvml_errors_total{node="n1",call="other"} 1)")) << text;
  EXPECT_TRUE(has_line(text, "# TYPE vgpu_nvml_errors_total counter")) << text;
}

TEST(NodeMetrics, TheClusterViewsAgeAndUseWhereThePlannerReadsOne) {
  NodeMetricsInput in;
  in.node = "n1";
  EXPECT_EQ(render_node_metrics(in).find("vgpu_cluster_view"), std::string::npos) << "none asked of slurmctld";
  in.cluster_view = ClusterViewStatus{
      .source = "tcp:ctl1:6828", .age_s = 40, .usable = false, .problem = "stale (40 s old)", .direct_queries = 3};
  const auto text = render_node_metrics(in);
  EXPECT_TRUE(has_line(text, R"(vgpu_cluster_view_usable{node="n1",source="tcp:ctl1:6828"} 0)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_cluster_view_age_seconds{node="n1"} 40)")) << text;
  EXPECT_TRUE(has_line(text, R"(vgpu_cluster_view_direct_queries_total{node="n1"} 3)")) << text;
  in.cluster_view->age_s.reset();  // nothing genuine read yet: no age is better than a made-up one
  EXPECT_EQ(render_node_metrics(in).find("vgpu_cluster_view_age_seconds"), std::string::npos);
}

TEST(NodeMetrics, LabelValuesAreEscaped) {
  NodeMetricsInput in;
  in.node = "n\"1\\\n";
  const auto text = render_node_metrics(in);
  EXPECT_TRUE(has_line(text, R"(vgpu_handover_pending{node="n\"1\\\n"} 0)")) << text;
}

}  // namespace
}  // namespace vgpu
