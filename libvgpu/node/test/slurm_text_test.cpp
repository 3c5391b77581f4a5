#include "vgpu/node/slurm_text.h"

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

TEST(SlurmText, PendingJobsAsSlurm2605PrintsThem) {
  // squeue of 23.11 and later: "gres/" instead of "gres:", and a reason with spaces.
  auto p = parse_pending_jobs(
      "2_[1-3]|main|1|2026-11-24T10:11:31|ReqNodeNotAvail, May be reserved for other job|gres/vgpu:1g.10gb:2\n"
      "1|main|1|2026-11-24T10:11:31|Resources|gres/vgpu:7g.80gb:1,gres/gpu:1\n");
  ASSERT_TRUE(p.errors.empty()) << p.errors.front();
  ASSERT_EQ(p.jobs.size(), 2u);
  EXPECT_EQ(p.jobs[0].vgpu, (std::vector<GresRequest>{{"1g.10gb", 2}}));
  EXPECT_EQ(p.jobs[0].array_tasks, 3);
  EXPECT_TRUE(waits_for_resources(p.jobs[0]));
  EXPECT_EQ(p.jobs[1].vgpu, (std::vector<GresRequest>{{"7g.80gb", 1}}));
}

TEST(SlurmText, BadLinesAreReportedAndSkipped) {
  auto p = parse_pending_jobs(
      "x|y\n42|train|abc|2026-11-22T20:50:01|Resources|N/A\n45|t|1|2026-11-22T20:50:01|None|gres:vgpu:2\n");
  EXPECT_TRUE(p.jobs.empty());
  ASSERT_EQ(p.errors.size(), 3u);
  EXPECT_NE(p.errors[0].find("line 1: expected 10"), std::string::npos);
  EXPECT_NE(p.errors[1].find("priority is not a number"), std::string::npos);
  EXPECT_NE(p.errors[2].find("must name a profile"), std::string::npos);
}

TEST(SlurmText, PendingJobsCarryNodesUserTimeLimitAndReservation) {
  auto p = parse_pending_jobs(
      "50|train|10|2026-11-22T20:50:01|Resources|gres/vgpu:7g.80gb:2|2|alice|1:00:00|(null)\n"
      "51|train|10|2026-11-22T20:50:01|Reservation|gres/vgpu:7g.80gb:2|1-3|bob|UNLIMITED|vgpu-wide-51\n");
  ASSERT_TRUE(p.errors.empty()) << p.errors.front();
  ASSERT_EQ(p.jobs.size(), 2u);
  EXPECT_EQ(p.jobs[0].nodes, 2);
  EXPECT_EQ(p.jobs[0].user, "alice");
  EXPECT_EQ(p.jobs[0].time_limit_s, 3600);
  EXPECT_TRUE(p.jobs[0].reservation.empty());
  EXPECT_EQ(p.jobs[1].nodes, 1) << "a range's minimum";
  EXPECT_EQ(p.jobs[1].time_limit_s, std::nullopt);
  EXPECT_EQ(p.jobs[1].reservation, "vgpu-wide-51");
  EXPECT_TRUE(waits_for_resources(p.jobs[1])) << "waiting for the reservation we booked is waiting for resources";
}

TEST(SlurmText, PendingJobsWithBadNewFieldsAreReported) {
  auto p = parse_pending_jobs(
      "50|t|1|2026-11-22T20:50:01|Resources|N/A|0|a|1:00|(null)\n"
      "51|t|1|2026-11-22T20:50:01|Resources|N/A|1|a|soon|(null)\n");
  EXPECT_TRUE(p.jobs.empty());
  ASSERT_EQ(p.errors.size(), 2u);
  EXPECT_NE(p.errors[0].find("node count '0'"), std::string::npos) << p.errors[0];
  EXPECT_NE(p.errors[1].find("time limit 'soon'"), std::string::npos) << p.errors[1];
}

TEST(SlurmText, DurationsAsSqueuePrintsThem) {
  EXPECT_EQ(*parse_slurm_duration("5:00"), 300);
  EXPECT_EQ(*parse_slurm_duration("1:00:00"), 3600);
  EXPECT_EQ(*parse_slurm_duration("2-03:00:10"), 2 * 86400 + 3 * 3600 + 10);
  EXPECT_EQ(*parse_slurm_duration("1-2"), 86400 + 7200);
  EXPECT_EQ(*parse_slurm_duration("30"), 1800) << "a bare number is minutes";
  EXPECT_EQ(*parse_slurm_duration("UNLIMITED"), std::nullopt);
  EXPECT_EQ(*parse_slurm_duration("NOT_SET"), std::nullopt);
  EXPECT_FALSE(parse_slurm_duration("1:2:3:4"));
  EXPECT_FALSE(parse_slurm_duration("-5"));
  EXPECT_FALSE(parse_slurm_duration(""));
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
  EXPECT_FALSE(n->weight.has_value());
  EXPECT_FALSE(parse_scontrol_node("NodeName=n1 State=IDLE", "vgpu"));
  EXPECT_FALSE(parse_scontrol_node("NodeName=n1 Gres=vgpu:a:b", "vgpu"));
}

// The features the planner steers (policy planner.node_features), as slurmctld shows them.
TEST(SlurmText, ScontrolNodeFeatures) {
  auto none =
      parse_scontrol_node("NodeName=n1 Gres=vgpu:free:14 AvailableFeatures=(null) ActiveFeatures=(null)", "vgpu");
  ASSERT_TRUE(none);
  ASSERT_TRUE(none->features.has_value());
  EXPECT_TRUE(none->features->empty());
  auto some =
      parse_scontrol_node("NodeName=n1 AvailableFeatures=ib,vgpu_in_use ActiveFeatures=ib Gres=vgpu:free:14", "vgpu");
  ASSERT_TRUE(some);
  EXPECT_EQ(*some->features, (std::vector<std::string>{"ib", "vgpu_in_use"}));
  auto unshown = parse_scontrol_node("NodeName=n1 Gres=vgpu:free:14", "vgpu");
  ASSERT_TRUE(unshown);
  EXPECT_FALSE(unshown->features.has_value()) << "not shown: the planner leaves features alone";
}

// The weight the planner steers (policy planner.node_weights); a mangled one is not guessed at.
TEST(SlurmText, ScontrolNodeWeight) {
  auto n = parse_scontrol_node("NodeName=n1 Gres=vgpu:free:14 State=IDLE Weight=20 Owner=N/A", "vgpu");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->weight, 20u);
  auto bad = parse_scontrol_node("NodeName=n1 Gres=vgpu:free:14 Weight=-1", "vgpu");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("Weight '-1' is not a number"), std::string::npos);
  EXPECT_FALSE(parse_scontrol_node("NodeName=n1 Gres=vgpu:free:14 Weight=99999999999", "vgpu"));
}

// Array task 53_2 runs as job 56; `scancel 56` is "Invalid job id" (soak, seed 20261122).
TEST(SlurmText, ArrayTaskIsSignalledByArrayAndTaskNotByItsOwnId) {
  EXPECT_EQ(job_name_for_signals(56, "JobId=56 ArrayJobId=53 ArrayTaskId=2 JobName=job.sh UserId=root(0)\n"), "53_2");
  // The task that carries the array's own id: `scancel 53` would end every task of the array.
  EXPECT_EQ(job_name_for_signals(53, "JobId=53 ArrayJobId=53 ArrayTaskId=0 JobName=x"), "53_0");
  EXPECT_EQ(job_name_for_signals(42, "JobId=42 JobName=train UserId=alice(1000) ArrayJobId=x"), "42");
  EXPECT_EQ(job_name_for_signals(42, ""), "42");
  // A pending array's meta record has a range, not a task: the plain id.
  EXPECT_EQ(job_name_for_signals(60, "JobId=60 ArrayJobId=60 ArrayTaskId=1-5 JobName=x"), "60");
  // Only the exact keys count: a job name that looks like one changes nothing.
  EXPECT_EQ(job_name_for_signals(42, "JobId=42 JobName=ArrayJobId=7 Comment=ArrayTaskId=1"), "42");
  // A hostile job name cannot point the root prolog's scancel at someone else's array task.
  EXPECT_EQ(job_name_for_signals(42, "JobId=42 JobName=x ArrayJobId=7 ArrayTaskId=1 UserId=eve(1001)"), "42");
  // Output about another job (a reused id, a confused scontrol) is not believed.
  EXPECT_EQ(job_name_for_signals(42, "JobId=420 ArrayJobId=7 ArrayTaskId=1 JobName=x"), "42");
}

TEST(SlurmText, JobIdLinesAreStrict) {
  auto ok = parse_job_id_lines("12\n7 \n\n12\n", "squeue -w n1");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, (std::set<std::uint32_t>{7, 12}));
  EXPECT_TRUE(parse_job_id_lines("", "squeue -w n1")->empty());
  auto bad = parse_job_id_lines("12\n53_2\n", "squeue -w n1");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("squeue -w n1: not a job id: '53_2'"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parse_job_id_lines("0\n", "squeue"));
  EXPECT_FALSE(parse_job_id_lines("99999999999\n", "squeue"));
}

TEST(SlurmText, SplitValueIsPaddedToTheConstantTotalWithEveryTypeListed) {
  auto v = gres_split_value("vgpu", {{"1g.10gb", 4}, {"3g.40gb", 1}, {"2g.20gb", 0}}, 14);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, "vgpu:free:9,vgpu:1g.10gb:4,vgpu:3g.40gb:1");
  auto empty = gres_split_value("vgpu", {}, 14);
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, "vgpu:free:14");
}

TEST(SlurmText, SplitValueRefusesWhatWouldChangeTheTotal) {
  auto over = gres_split_value("vgpu", {{"1g.10gb", 10}, {"7g.80gb", 5}}, 14);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("15 vgpu instance(s) exceed the node's constant total of 14"), std::string::npos)
      << over.error().message;
  EXPECT_FALSE(gres_split_value("vgpu", {{"free", 1}}, 14));
  EXPECT_FALSE(gres_split_value("vgpu", {{"1g.10gb", -1}}, 14));
}

TEST(SlurmText, ControllerVersionFromShowConfig) {
  auto v = parse_show_config_version(
      "Configuration data as of 2026-11-24T10:00:00\nAccountingStorageBackupHost = (null)\n"
      "SchedulerParameters     = batch_sched_delay=0,bf_interval=1\nSLURM_CONF              = /etc/slurm/slurm.conf\n"
      "SLURM_VERSION           = 26.05.3\nSlurmUser               = root(0)\n");
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, (SlurmVersion{26, 5, 3}));
  EXPECT_EQ(v->release(), 2605);
  EXPECT_FALSE(parse_show_config_version("SLURM_CONF = /x\n"));
  EXPECT_FALSE(parse_show_config_version("SLURM_VERSION = 26.05\n"));
  EXPECT_FALSE(parse_slurm_version("22.05.x"));
}

TEST(SlurmText, PidinfoNamesTheJobOrSaysWhatItGotInstead) {
  auto job = parse_pidinfo_job("Slurm JobId=42 ends at Sun Dec 06 17:10:00 2026\nJob remaining time is 3540 seconds\n");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(*job, 42u);
  auto none = parse_pidinfo_job("Failed to locate job for requested pid\n");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message,
            "scontrol pidinfo: no \"Slurm JobId=\" in 'Failed to locate job for requested pid\n'");
  auto bad = parse_pidinfo_job("Slurm JobId=0 ends at x\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "scontrol pidinfo: not a job id: '0'");
}

}  // namespace
}  // namespace vgpu
