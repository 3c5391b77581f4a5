#include "vgpu/slurm_text.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

TEST(SlurmText, PendingJobsParseArraysPartitionsAndGres) {
  auto p = parse_pending_jobs(
      "42|train|4294|2026-11-22T20:50:01|Resources|gres:vgpu:7g.80gb:1\n"
      "43_[1-5,9]|infer,train|100|2026-11-22T20:50:02|Priority|gres:vgpu:1g.10gb:4\n"
      "44|cpu|1|2026-11-22T20:50:03|Resources|N/A\n");
  ASSERT_TRUE(p.errors.empty()) << p.errors.front();
  ASSERT_EQ(p.jobs.size(), 3u);
  EXPECT_EQ(p.jobs[0].vgpu, (std::vector<GresRequest>{{"7g.80gb", 1}}));
  EXPECT_EQ(p.jobs[1].array_tasks, 6);
  EXPECT_EQ(p.jobs[1].partitions, (std::vector<std::string>{"infer", "train"}));
  EXPECT_EQ(p.jobs[0].submit_time, 1795380601);  // date -d 2026-11-22T20:50:01Z +%s
  EXPECT_TRUE(p.jobs[2].vgpu.empty());
}

TEST(SlurmText, BadLinesAreReportedAndSkipped) {
  auto p = parse_pending_jobs("x|y\n42|train|abc|2026-11-22T20:50:01|Resources|N/A\n45|t|1|2026-11-22T20:50:01|None|gres:vgpu:2\n");
  EXPECT_TRUE(p.jobs.empty());
  ASSERT_EQ(p.errors.size(), 3u);
  EXPECT_NE(p.errors[0].find("line 1: expected 6"), std::string::npos);
  EXPECT_NE(p.errors[1].find("priority is not a number"), std::string::npos);
  EXPECT_NE(p.errors[2].find("must name a profile"), std::string::npos);
}

TEST(SlurmText, WaitReasons) {
  PendingJob j;
  j.reason = "Resources";
  EXPECT_TRUE(waits_for_resources(j));
  j.reason = "JobHeldAdmin";
  EXPECT_FALSE(waits_for_resources(j));
  j.reason = "Dependency";
  EXPECT_FALSE(waits_for_resources(j));
}

TEST(SlurmText, ScontrolNodeGresAndUsed) {
  auto n = parse_scontrol_node(
      "NodeName=n1 Arch=x86_64 Gres=vgpu:never:0,vgpu:free:52,vgpu:1g.10gb:4 GresUsed=vgpu:never:0,vgpu:free:0,"
      "vgpu:1g.10gb:1(IDX:N/A) State=MIXED ThreadsPerCore=1",
      "vgpu");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->configured.at("1g.10gb"), 4);
  EXPECT_EQ(n->configured.at("free"), 52);
  EXPECT_EQ(n->used.at("1g.10gb"), 1);
  EXPECT_EQ(n->state, "MIXED");
  EXPECT_FALSE(parse_scontrol_node("NodeName=n1 State=IDLE", "vgpu"));
  EXPECT_FALSE(parse_scontrol_node("NodeName=n1 Gres=vgpu:a:b", "vgpu"));
}

}  // namespace
}  // namespace vgpu
