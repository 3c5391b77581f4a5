// The C bridge as the Slurm layer calls it: environment in, files on disk, C structs out.
#include "bridge/vgpu_gres_bridge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

class BridgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vgpu_bridge_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "n7" / "jobs");
    ::setenv("VGPU_STATE_DIR", root_.c_str(), 1);
    ::setenv("VGPU_NODENAME", "n7", 1);
  }
  void TearDown() override {
    ::unsetenv("VGPU_STATE_DIR");
    ::unsetenv("VGPU_NODENAME");
    fs::remove_all(root_);
  }
  void write(const std::string& rel, const std::string& text) { std::ofstream(root_ / rel) << text; }

  static void collect(void* ctx, const char* name, const char* value) {
    (*static_cast<std::map<std::string, std::string>*>(ctx))[name] = value;
  }

  fs::path root_;
};

}  // namespace

TEST_F(BridgeTest, ReportsTheAdvertisedSplitPaddedWithFree) {
  write("n7/advertisement.json", R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n7",
    "generation":3,"counts":{"3g.40gb":2,"1g.10gb":1}})");
  vgpu_reported_t rep;
  vgpu_gres_reported_counts(56, &rep);
  EXPECT_EQ(rep.used_advertisement, 1);
  std::map<std::string, std::uint64_t> seen;
  for (int i = 0; i < rep.advertised_cnt; ++i) seen[rep.advertised[i].type] = rep.advertised[i].count;
  EXPECT_EQ(seen.at("1g.10gb"), 1U);
  EXPECT_EQ(seen.at("3g.40gb"), 2U);
  // Every other catalog profile is reported too, at 0, so slurmctld can never keep a stale count.
  EXPECT_EQ(seen.at("7g.80gb"), 0U);
  EXPECT_EQ(seen.at("1g.5gb"), 0U);
  EXPECT_EQ(rep.free_cnt, 53U);
  EXPECT_EQ(rep.generation, 3U);
  EXPECT_STREQ(rep.node, "n7");
}

TEST_F(BridgeTest, DroppedTypeIsReportedAgainAtZero) {
  write("n7/advertisement.json", R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n7",
    "generation":1,"counts":{"2g.20gb":3}})");
  vgpu_reported_t rep;
  vgpu_gres_reported_counts(56, &rep);
  write("n7/advertisement.json", R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n7",
    "generation":2,"counts":{"7g.80gb":1}})");
  vgpu_gres_reported_counts(56, &rep);
  std::map<std::string, std::uint64_t> seen;
  for (int i = 0; i < rep.advertised_cnt; ++i) seen[rep.advertised[i].type] = rep.advertised[i].count;
  EXPECT_EQ(seen.at("2g.20gb"), 0U);
  EXPECT_EQ(seen.at("7g.80gb"), 1U);
  EXPECT_EQ(rep.free_cnt, 55U);
}

TEST_F(BridgeTest, MissingAdvertisementReportsAllFreeWithThePath) {
  vgpu_reported_t rep;
  vgpu_gres_reported_counts(56, &rep);
  EXPECT_EQ(rep.used_advertisement, 0);
  for (int i = 0; i < rep.advertised_cnt; ++i) EXPECT_EQ(rep.advertised[i].count, 0U) << rep.advertised[i].type;
  EXPECT_EQ(rep.free_cnt, 56U);
  EXPECT_THAT(rep.message, HasSubstr((root_ / "n7/advertisement.json").string() + ": no such file"));
}

TEST_F(BridgeTest, CorruptAdvertisementReportsAllFreeNamingFileAndField) {
  write("n7/advertisement.json", R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n7",
    "generation":3,"counts":{"3g.40gb":"two"}})");
  vgpu_reported_t rep;
  vgpu_gres_reported_counts(56, &rep);
  EXPECT_EQ(rep.used_advertisement, 0);
  EXPECT_EQ(rep.free_cnt, 56U);
  EXPECT_THAT(rep.message, HasSubstr("advertisement.json: counts '3g.40gb': count must be a non-negative integer"));
}

TEST_F(BridgeTest, JobEnvironmentComesFromTheJobRecord) {
  write("n7/jobs/42.json", R"({"format":"slurm-vgpu-job","version":1,"job_id":42,"instances":[
    {"profile":"3g.40gb","mig_uuid":"MIG-aaaa","gpu":0}]})");
  std::map<std::string, std::string> env;
  char msg[256];
  EXPECT_EQ(vgpu_gres_job_env("slurmstepd: [42.0]", "42", &BridgeTest::collect, &env, msg, sizeof msg), 1);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "MIG-aaaa");
  EXPECT_EQ(env["VGPU_PROFILES"], "3g.40gb");
  EXPECT_EQ(env["VGPU_INSTANCES"], "1");
  EXPECT_EQ(env["VGPU_PLACEMENT"], "0");  // a version 1 record (a job started before an upgrade)
  write("n7/jobs/44.json", R"({"format":"slurm-vgpu-job","version":2,"job_id":44,"instances":[
    {"profile":"3g.40gb","mig_uuid":"MIG-cccc","gpu":1,"placement":{"start":4,"size":4}}]})");
  std::map<std::string, std::string> env2;
  EXPECT_EQ(vgpu_gres_job_env("slurmstepd: [44.0]", "44", &BridgeTest::collect, &env2, msg, sizeof msg), 1);
  EXPECT_EQ(env2["CUDA_VISIBLE_DEVICES"], "MIG-cccc");
  EXPECT_EQ(env2["VGPU_PLACEMENT"], "1:4-7");
}

// A vgpu job without its record (its prolog was cancelled or never finished) must not run with
// CUDA_VISIBLE_DEVICES unset, which CUDA reads as "every GPU on the node".
TEST_F(BridgeTest, AbsentJobRecordHidesGpus) {
  std::map<std::string, std::string> env;
  char msg[256];
  EXPECT_EQ(vgpu_gres_job_env("slurmstepd: [43.batch]", "43", &BridgeTest::collect, &env, msg, sizeof msg), -1);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(env["VGPU_INSTANCES"], "0");
  EXPECT_NE(std::string(msg).find("no job record"), std::string::npos) << msg;
  std::map<std::string, std::string> env2;
  EXPECT_EQ(vgpu_gres_job_env("slurmstepd: [43.0]", nullptr, &BridgeTest::collect, &env2, msg, sizeof msg), -1);
  EXPECT_EQ(env2["CUDA_VISIBLE_DEVICES"], "");
}

// The job is slurmstepd's, from its title: a step whose environment names another job (an srun
// client can send any SLURM_JOB_ID) gets nothing, not that job's instances.
TEST_F(BridgeTest, StepClaimingAnotherJobGetsNothing) {
  write("n7/jobs/42.json", R"({"format":"slurm-vgpu-job","version":1,"job_id":42,"instances":[
    {"profile":"3g.40gb","mig_uuid":"MIG-aaaa","gpu":0}]})");
  write("n7/jobs/50.json", R"({"format":"slurm-vgpu-job","version":1,"job_id":50,"instances":[
    {"profile":"1g.10gb","mig_uuid":"MIG-bbbb","gpu":0}]})");
  std::map<std::string, std::string> env;
  char msg[256];
  EXPECT_EQ(vgpu_gres_job_env("slurmstepd: [50.0]", "42", &BridgeTest::collect, &env, msg, sizeof msg), -1);
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(env.at("VGPU_INSTANCES"), "0");
  EXPECT_THAT(msg, HasSubstr("the step's SLURM_JOB_ID '42' is not this step's job 50 (slurmstepd: [50.0])"));
  std::map<std::string, std::string> garbage;
  EXPECT_EQ(vgpu_gres_job_env("slurmstepd: [50.0]", "42\n", &BridgeTest::collect, &garbage, msg, sizeof msg), -1);
  EXPECT_EQ(garbage.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_THAT(msg, HasSubstr("SLURM_JOB_ID '42?'"));
  // With no SLURM_JOB_ID at all, the title alone decides.
  std::map<std::string, std::string> unset;
  EXPECT_EQ(vgpu_gres_job_env("slurmstepd: [50.0]", nullptr, &BridgeTest::collect, &unset, msg, sizeof msg), 1);
  EXPECT_EQ(unset.at("CUDA_VISIBLE_DEVICES"), "MIG-bbbb");
}

// Outside slurmstepd (or with its title unreadable) no job can be trusted: GPUs hidden, and why.
TEST_F(BridgeTest, NoStepdTitleHidesGpus) {
  write("n7/jobs/42.json", R"({"format":"slurm-vgpu-job","version":1,"job_id":42,"instances":[
    {"profile":"3g.40gb","mig_uuid":"MIG-aaaa","gpu":0}]})");
  for (const char* title : {"", "slurmd", "/usr/sbin/slurmstepd"}) {
    std::map<std::string, std::string> env;
    char msg[256];
    EXPECT_EQ(vgpu_gres_job_env(title, "42", &BridgeTest::collect, &env, msg, sizeof msg), -1) << title;
    EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "") << title;
    EXPECT_THAT(msg, HasSubstr("is not slurmstepd's for a job")) << title;
  }
  std::map<std::string, std::string> env;
  char msg[256];
  EXPECT_EQ(vgpu_gres_job_env(nullptr, "42", &BridgeTest::collect, &env, msg, sizeof msg), -1);
  EXPECT_THAT(msg, HasSubstr("process title '(unreadable)'"));
}

TEST_F(BridgeTest, CorruptJobRecordHidesGpusAndSaysWhy) {
  write("n7/jobs/44.json", R"({"format":"slurm-vgpu-job","version":1,"job_id":45,"instances":[]})");
  std::map<std::string, std::string> env;
  char msg[256];
  EXPECT_EQ(vgpu_gres_job_env("slurmstepd: [44.0]", "44", &BridgeTest::collect, &env, msg, sizeof msg), -1);
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_THAT(msg, HasSubstr("jobs/44.json: field 'job_id' is 45, expected 44"));
}

TEST_F(BridgeTest, AllocationTypeTravelsThroughBits) {
  unsigned char bits[512];
  const size_t n = vgpu_gres_type_bits("3g.40gb", bits, sizeof bits);
  ASSERT_EQ(n, 56U);
  char out[128];
  ASSERT_EQ(vgpu_gres_alloc_append(nullptr, bits, n, 2, out, sizeof out), 0);
  EXPECT_STREQ(out, "3g.40gb:2");
  const size_t m = vgpu_gres_type_bits("7g.80gb", bits, sizeof bits);
  std::string previous = out;
  ASSERT_EQ(vgpu_gres_alloc_append(previous.c_str(), bits, m, 1, out, sizeof out), 0);
  EXPECT_STREQ(out, "3g.40gb:2,7g.80gb:1");
  ASSERT_EQ(vgpu_gres_alloc_append(nullptr, bits, 0, 1, out, sizeof out), 0);
  EXPECT_STREQ(out, "any:1");
  EXPECT_EQ(vgpu_gres_type_bits("3g.40gb", bits, 8), 0U);
  EXPECT_EQ(vgpu_gres_alloc_append(nullptr, bits, 7, 1, out, sizeof out), -1);
}

TEST_F(BridgeTest, AdvertisementAboveTheTotalIsRefusedNamingTheFile) {
  write("n7/advertisement.json", R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n7",
    "generation":3,"counts":{"1g.10gb":57}})");
  vgpu_reported_t rep;
  vgpu_gres_reported_counts(56, &rep);
  EXPECT_EQ(rep.used_advertisement, 0);
  EXPECT_EQ(rep.free_cnt, 56U);
  for (int i = 0; i < rep.advertised_cnt; ++i) EXPECT_EQ(rep.advertised[i].count, 0U) << rep.advertised[i].type;
  EXPECT_THAT(rep.message,
              HasSubstr("advertisement.json: advertised 57 instances but slurm.conf declares a total of 56"));
}
