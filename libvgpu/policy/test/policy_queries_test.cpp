// What the rest of the product asks a loaded policy, exercised on the shipped example.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vgpu/policy/policy.h"

namespace vgpu {
namespace {

const PolicyFile& example() {
  static const PolicyFile policy = [] {
    auto loaded = load_policy_file(std::string(VGPU_SOURCE_DIR) + "/examples/policy.json");
    if (!loaded) throw std::runtime_error(loaded.error().message);
    return *loaded;
  }();
  return policy;
}

const GpuModel& model(std::string_view name) { return **Catalog::builtin().require_model(name); }

const PartitionPolicy& part(std::string_view name) {
  const auto* p = example().partition(name);
  if (!p) throw std::runtime_error("no partition " + std::string(name));
  return *p;
}

using Names = std::vector<std::string>;

TEST(PolicyQueries, PerModelProfilesApplyOnlyToTheNamedModels) {
  EXPECT_EQ(part("train").allowed_profiles_for(model("H100-80GB")), (Names{"3g.40gb", "4g.40gb", "7g.80gb"}));
  EXPECT_EQ(part("train").allowed_profiles_for(model("A100-80GB")), (Names{"3g.40gb", "4g.40gb", "7g.80gb"}));
  EXPECT_TRUE(part("train").allowed_profiles_for(model("A100-40GB")).empty());
  EXPECT_FALSE(part("train").uses_model(model("A30-24GB")));
}

TEST(PolicyQueries, AListOfProfilesAppliesToEveryModelThatHasThem) {
  EXPECT_EQ(part("infer").allowed_profiles_for(model("H100-80GB")), (Names{"1g.10gb", "1g.20gb", "2g.20gb"}));
  EXPECT_EQ(part("infer").allowed_profiles_for(model("A100-40GB")), (Names{"1g.10gb"}));
  EXPECT_TRUE(part("infer").allowed_profiles_for(model("H200-141GB")).empty());
}

TEST(PolicyQueries, AbsentProfilesAllowEveryProfile) {
  auto policy = parse_policy(R"({"version": 1, "partitions": {"any": {}}})", "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_EQ(policy->partitions[0].allowed_profiles_for(model("A30-24GB")).size(), model("A30-24GB").profiles.size());
  EXPECT_TRUE(policy->partitions[0].allows_node("anything"));
  EXPECT_TRUE(policy->partitions[0].allows_gpu(63));
  EXPECT_EQ(policy->planner.period_s, 5);
  EXPECT_EQ(policy->planner.starvation_s, 120);
  EXPECT_EQ(policy->planner.idle_return_s, 60);
  EXPECT_FALSE(policy->planner.prepare_slots);
  EXPECT_FALSE(policy->planner.node_weights.has_value());
  EXPECT_FALSE(policy->planner.node_features);
  EXPECT_EQ(policy->partitions[0].scrub, ScrubMode::required);
}

TEST(PolicyQueries, NodeFeaturesAreOnlyWhenAsked) {
  auto policy = parse_policy(
      R"({"version": 1, "planner": {"node_features": true}, "partitions": {"any": {}, "infer": {}}})", "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_TRUE(policy->planner.node_features);
  const auto text = summary(*policy);
  EXPECT_NE(text.find("node features vgpu_in_use,vgpu_no_idle_gpu,vgpu_partly_used_gpu for"), std::string::npos);
  // The anchor node the admin must add, and where: Slurm refuses a preference no node has.
  EXPECT_NE(text.find("State=FUTURE node with Features=vgpu_in_use,vgpu_no_idle_gpu,vgpu_partly_used_gpu in "
                      "partition(s) any,infer"),
            std::string::npos)
      << text;
  auto off = parse_policy(R"({"version": 1, "partitions": {"any": {}}})", "t.json");
  ASSERT_TRUE(off);
  EXPECT_EQ(summary(*off).find("State=FUTURE"), std::string::npos);
}

TEST(PolicyQueries, NodeWeightsAreReadAsGiven) {
  auto policy = parse_policy(
      R"({"version": 1, "planner": {"node_weights": {"in_use": 10, "idle": 20, "comment": "pack"}},
          "partitions": {"any": {}}})",
      "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  ASSERT_TRUE(policy->planner.node_weights.has_value());
  EXPECT_EQ(policy->planner.node_weights->in_use, 10);
  EXPECT_EQ(policy->planner.node_weights->idle, 20);
  EXPECT_NE(summary(*policy).find("node weight 10 while any vgpu is allocated, 20 when idle"), std::string::npos);
}

TEST(PolicyQueries, NodeWeightsByFreeCapacityAreReadAsGiven) {
  auto policy = parse_policy(
      R"({"version": 1, "planner": {"node_weights": {"base": 100, "per_free_gpu": 1000}},
          "partitions": {"any": {}}})",
      "t.json");
  ASSERT_TRUE(policy) << policy.error().message;
  ASSERT_TRUE(policy->planner.node_weights.has_value());
  EXPECT_TRUE(policy->planner.node_weights->by_free_capacity());
  EXPECT_EQ(policy->planner.node_weights->base, 100);
  EXPECT_EQ(policy->planner.node_weights->per_free_gpu, 1000);
  EXPECT_NE(summary(*policy).find("node weight 100 + 1000 per free GPU (the fullest nodes first)"), std::string::npos);
}

TEST(PolicyQueries, NodesAndGpus) {
  EXPECT_TRUE(part("train").allows_node("gpu01"));
  EXPECT_TRUE(part("train").allows_node("gpu16"));
  EXPECT_FALSE(part("train").allows_node("gpu17"));
  EXPECT_FALSE(part("train").allows_node("gpu1"));
  EXPECT_TRUE(part("infer").allows_node("gpu24"));
  EXPECT_TRUE(part("infer").allows_node("inf01"));
  EXPECT_FALSE(part("infer").allows_node("inf02"));
  EXPECT_TRUE(part("train").allows_gpu(7));
  EXPECT_TRUE(part("infer").allows_gpu(3));
  EXPECT_FALSE(part("infer").allows_gpu(4));
  EXPECT_FALSE(part("infer").allows_gpu(-1));
}

TEST(PolicyQueries, LimitsScrubAndPlannerKnobs) {
  EXPECT_EQ(part("train").max_instances_per_job, 2);
  EXPECT_EQ(part("train").max_instances_per_user, 4);
  EXPECT_FALSE(part("viz").max_instances_per_job.has_value());
  EXPECT_EQ(part("viz").scrub, ScrubMode::optional);
  EXPECT_EQ(part("train").scrub, ScrubMode::required);
  EXPECT_EQ(example().planner.period_s, 5);
  EXPECT_TRUE(example().planner.prepare_slots);
}

TEST(PolicyQueries, VizPoolsAreFoundAcrossPartitions) {
  const auto* small = example().find_viz_pool("viz-small");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->partition, "viz");
  EXPECT_EQ(small->attach, VizAttach::none);
  EXPECT_TRUE(small->gpu_type.empty());
  EXPECT_EQ(small->image, "tinyguest");
  ASSERT_TRUE(small->max_geometry.has_value());
  EXPECT_EQ(small->max_geometry->width, 1280);
  EXPECT_EQ(small->max_geometry->height, 800);
  const auto* mig = example().find_viz_pool("viz-mig");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->attach, VizAttach::mig_vgpu);
  EXPECT_EQ(mig->gpu_type, "1g.10gb");
  EXPECT_EQ(mig->display, VizDisplay::vnc);
  EXPECT_EQ(example().find_viz_pool("viz-huge"), nullptr);
  EXPECT_EQ(example().find_viz_pool("1g.10gb"), nullptr);
  const auto* image = example().image(small->image);
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(image->kernel, "/var/lib/slurm-vgpu/images/tinyguest/vmlinuz");
  EXPECT_EQ(image->initrd, "/var/lib/slurm-vgpu/images/tinyguest/initrd.gz");
  EXPECT_EQ(image->cmdline, "console=ttyS0 quiet");
  EXPECT_FALSE(image->disk.has_value());
}

TEST(PolicyQueries, ValidateRequestAcceptsAnAllowedProfileWithinTheLimit) {
  EXPECT_TRUE(validate_request(part("train"), model("H100-80GB"), "3g.40gb", 2));
}

TEST(PolicyQueries, ValidateRequestListsAllowedProfilesWhenOneIsNot) {
  auto r = validate_request(part("train"), model("H100-80GB"), "1g.10gb", 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(r.error().message,
            "partition train: profile 1g.10gb: not allowed on H100-80GB (allowed: 3g.40gb, "
            "4g.40gb, 7g.80gb)");
}

TEST(PolicyQueries, ValidateRequestExplainsEveryViolationAtOnce) {
  auto r = validate_request(part("train"), model("H100-80GB"), "9g.99gb", 3);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "partition train: profile 9g.99gb: unknown profile on H100-80GB (allowed here: "
            "3g.40gb, 4g.40gb, 7g.80gb); 3 instances requested, at most 2 per job");
}

TEST(PolicyQueries, ValidateRequestRejectsModelsThePartitionDoesNotUseAndBadCounts) {
  auto r = validate_request(part("train"), model("A30-24GB"), "4g.24gb", 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "partition train: does not use A30-24GB GPUs; count 0: must be at least 1");
}

TEST(PolicyQueries, IdleLayoutIsPlacedAsThePlannerWould) {
  auto train = place_idle_layout(part("train"), model("H100-80GB"));
  ASSERT_TRUE(train) << train.error().message;
  EXPECT_EQ(train->describe(), "[7g.80gb@0]");
  auto infer = place_idle_layout(part("infer"), model("H100-80GB"));
  ASSERT_TRUE(infer) << infer.error().message;
  EXPECT_EQ(infer->instances().size(), 5u);
  // On A100-40GB only 1g.10gb is allowed: the 2g.20gb entries are skipped as the planner skips them.
  auto small = place_idle_layout(part("infer"), model("A100-40GB"));
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_EQ(small->instances().size(), 3u);
}

TEST(PolicyQueries, IdleLayoutMatchesThePlannersOwnPlacement) {
  for (const auto& name : {"train", "infer"}) {
    auto config = part(name).planner_config_for(model("H100-80GB"));
    ASSERT_TRUE(config) << config.error().message;
    std::vector<PlannerGpu> gpus{PlannerGpu{GpuLayout(model("H100-80GB")), true}};
    Plan plan = plan_node(gpus, *config, {});
    auto idle = place_idle_layout(part(name), model("H100-80GB"));
    ASSERT_TRUE(idle);
    ASSERT_EQ(plan.slots.size(), idle->instances().size()) << name;
    for (std::size_t i = 0; i < plan.slots.size(); ++i)
      EXPECT_EQ(plan.slots[i].placement, idle->instances()[i].placement) << name;
  }
}

TEST(PolicyQueries, PlannerConfigRefusesAModelThePartitionDoesNotUse) {
  // The planner reads an empty allow-list as "everything": that must never reach it.
  auto config = part("train").planner_config_for(model("A30-24GB"));
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message, "partition train: does not use A30-24GB GPUs");
}

TEST(PolicySummary, ShowsPartitionsProfilesLimitsNodesIdleLayoutsAndPools) {
  std::string text = summary(example());
  for (const char* part_text : {
           "policy version 1, 3 partition(s)",
           "planner: re-plan every 5 s, starvation after 120 s, back to the idle layout 60 s after demand, planned "
           "slots "
           "prepared ahead of demand",
           "image tinyguest: kernel /var/lib/slurm-vgpu/images/tinyguest/vmlinuz",
           "partition train\n  nodes:  gpu[01-16]\n  gpus:   all\n  limits: 2 per job, 4 per user\n"
           "  scrub:  required\n",
           "    H100-80GB   3g.40gb, 4g.40gb, 7g.80gb\n                idle [7g.80gb@0]\n",
           "  nodes:  gpu[17-24],inf01\n  gpus:   0, 1, 2, 3\n",
           "  limits: unlimited per job, 2 per user\n",
           "  viz pool viz-small: attach none, image tinyguest, 256 MiB, 1 vCPU, up to 4 session(s), "
           "vnc, max 1280x800\n",
           "  viz pool viz-mig: attach mig-vgpu (1g.10gb), image tinyguest",
       }) {
    EXPECT_NE(text.find(part_text), std::string::npos) << "missing:\n" << part_text << "\nin:\n" << text;
  }
}

TEST(PolicySummary, JsonFormRoundTripsTheParsedValues) {
  auto doc = nlohmann::json::parse(summary_json(example()));
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["partitions"]["train"]["profiles"]["H100-80GB"], nlohmann::json({"3g.40gb", "4g.40gb", "7g.80gb"}));
  EXPECT_EQ(doc["partitions"]["train"]["idle_layout_drawn"]["H100-80GB"], "[7g.80gb@0]");
  EXPECT_EQ(doc["partitions"]["infer"]["gpus"], nlohmann::json({0, 1, 2, 3}));
  EXPECT_EQ(doc["partitions"]["viz"]["viz_pools"][1]["gpu_type"], "1g.10gb");
  EXPECT_EQ(doc["partitions"]["viz"]["max_instances_per_job"], nullptr);
  EXPECT_EQ(doc["images"]["tinyguest"]["cmdline"], "console=ttyS0 quiet");
}

}  // namespace
}  // namespace vgpu
