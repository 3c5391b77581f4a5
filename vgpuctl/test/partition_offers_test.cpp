// What a user is told: each partition's types per model with classes and shares resolved, what is
// free now on nodes that can start jobs, and for a pending job the one reason that holds for each
// type it asks for (never offered, over the cap, no node can start jobs, no room yet, Slurm's turn).
#include "partition_offers.h"

#include <gtest/gtest.h>

namespace vgpuctl {
namespace {

constexpr std::string_view kPolicy = R"({"version": 1,
  "classes": {"small": {"min_memory_gb": 10, "min_compute_fraction": 0.125}},
  "share_types": {"quarter": {"instance": "3g.40gb", "shares": 4}},
  "partitions": {
    "infer": {"profiles": {"H100-80GB": ["1g.10gb", "2g.20gb", "small", "quarter"]}, "max_instances_per_job": 4},
    "train": {"profiles": {"H100-80GB": ["3g.40gb", "7g.80gb"]}, "max_instances_per_job": 2,
              "max_instances_per_user": 4}}})";

constexpr std::string_view kNodes =
    "NodeName=n1 Arch=x86_64 Gres=vgpu:free:10,vgpu:1g.10gb:3,vgpu:3g.40gb:1 "
    "GresUsed=vgpu:1g.10gb:1,vgpu:3g.40gb:1 State=MIXED Partitions=infer,train\n"
    "NodeName=n2 Arch=x86_64 Gres=vgpu:free:14,vgpu:1g.10gb:2 GresUsed=vgpu:1g.10gb:0 State=IDLE+DRAIN "
    "Partitions=infer\n"
    "NodeName=cpu1 Arch=x86_64 Gres=(null) State=IDLE Partitions=cpu\n";

struct Fixture {
  vgpu::PolicyFile policy = *vgpu::parse_policy(kPolicy, "policy.json");
  vgpu::Catalog catalog = vgpu::Catalog::with_classes(vgpu::Catalog::builtin(), policy.site_types());
  SlurmNodes nodes = parse_slurm_nodes(kNodes);
};

vgpu::PendingJob job_asking(std::string partition, std::vector<vgpu::GresRequest> vgpu, int nodes = 1) {
  vgpu::PendingJob job;
  job.id = "42";
  job.partitions = {std::move(partition)};
  job.reason = "Resources";
  job.vgpu = std::move(vgpu);
  job.nodes = nodes;
  job.user = "alice";
  return job;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(PartitionOffers, NodesWithoutVgpuAreLeftOutAndFreeIsConfiguredLessUsed) {
  const Fixture f;
  ASSERT_EQ(f.nodes.nodes.size(), 2u);
  EXPECT_TRUE(f.nodes.errors.empty());
  EXPECT_EQ(f.nodes.nodes[0].free, (std::map<std::string, int>{{"1g.10gb", 2}, {"3g.40gb", 0}}));
  EXPECT_EQ(f.nodes.nodes[1].partitions, (std::vector<std::string>{"infer"}));
}

TEST(PartitionOffers, APartitionListsItsTypesPerModelWithClassesResolvedAndWhatIsFreeOnUsableNodes) {
  const Fixture f;
  const auto offer = partition_offer(*f.policy.partition("infer"), f.catalog, f.nodes);
  ASSERT_EQ(offer.models.size(), 1u);
  EXPECT_EQ(offer.models[0].model, "H100-80GB");
  EXPECT_EQ(offer.models[0].types,
            (std::vector<std::string>{"1g.10gb", "2g.20gb", "small (1g.10gb)", "quarter (1/4 of 3g.40gb)"}));
  EXPECT_EQ(offer.nodes, 2);
  EXPECT_EQ(offer.usable_nodes, 1);  // n2 drains: its two 1g.10gb do not count
  EXPECT_EQ(offer.free_now.at("1g.10gb"), 2);
  const auto text = joined(describe_offer(offer));
  EXPECT_NE(text.find("partition infer: 2 vgpu node(s), 1 can start jobs now, at most 4 instances per job"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("free now: 1g.10gb 2 ("), std::string::npos) << text;
}

TEST(PartitionOffers, EachReasonAJobCanWaitForIsTold) {
  const Fixture f;
  auto why = [&](const vgpu::PendingJob& job) { return joined(explain_pending(job, f.policy, f.catalog, f.nodes)); };
  EXPECT_NE(why(job_asking("infer", {{"7g.80gb", 1}})).find("infer does not offer 7g.80gb (it offers 1g.10gb"),
            std::string::npos);
  EXPECT_NE(why(job_asking("train", {{"3g.40gb", 3}})).find("train allows 2 instances per job and the job asks for 3"),
            std::string::npos);
  EXPECT_NE(why(job_asking("infer", {{"1g.10gb", 2}}))
                .find("n1 (2 free) has room for it now: the job waits for "
                      "Slurm's scheduler (Resources)"),
            std::string::npos)
      << why(job_asking("infer", {{"1g.10gb", 2}}));
  const auto no_room = why(job_asking("train", {{"3g.40gb", 1}}));
  EXPECT_NE(no_room.find("vgpu:3g.40gb:1 in train: 0 of the 1 node(s) it needs have 1 x 3g.40gb free now. The node "
                         "planners make 3g.40gb"),
            std::string::npos)
      << no_room;
  EXPECT_NE(why(job_asking("infer", {{"1g.10gb", 1}}, 2)).find("1 of the 2 node(s) it needs has 1 x 1g.10gb"),
            std::string::npos);
  EXPECT_NE(why(job_asking("gpu", {{"1g.10gb", 1}})).find("gpu: no vgpu policy"), std::string::npos);
  EXPECT_NE(why(job_asking("infer", {})).find("asks for no vgpu"), std::string::npos);
  const auto first = explain_pending(job_asking("infer", {{"1g.10gb", 1}}), f.policy, f.catalog, f.nodes)[0];
  EXPECT_EQ(first, "job 42 (alice) pends in infer: Slurm's reason: Resources");
}

TEST(PartitionOffers, NoUsableNodeIsSaidAsSuch) {
  Fixture f;
  f.nodes.nodes[0].state = "DOWN";
  const auto text = joined(explain_pending(job_asking("infer", {{"1g.10gb", 1}}), f.policy, f.catalog, f.nodes));
  EXPECT_NE(text.find("none of the partition's 2 vgpu node(s) can start a job now"), std::string::npos) << text;
  const auto bad = parse_slurm_nodes("NodeName=n9 Gres=vgpu:free:4 Partitions=infer\n");
  EXPECT_TRUE(bad.nodes.empty());
  ASSERT_EQ(bad.errors.size(), 1u);
}

}  // namespace
}  // namespace vgpuctl
