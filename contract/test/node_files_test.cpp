#include "vgpu/contract/names.h"
#include "vgpu/contract/node_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace vgpu::contract;
using ::testing::HasSubstr;
using namespace std::string_view_literals;

TEST(NodeFiles, StateDirComesFromEnvironmentOrDefault) {
  EXPECT_EQ(resolve_state_dir(nullptr), "/var/lib/slurm-vgpu");
  EXPECT_EQ(resolve_state_dir("/tmp/run1/state"), "/tmp/run1/state");
  EXPECT_EQ(resolve_state_dir("relative/dir"), "/var/lib/slurm-vgpu");
}

TEST(NodeFiles, NodeNamePrefersExplicitOverrides) {
  auto cmdline = "slurmd\0-f\0/etc/slurm.conf\0-N\0n2\0"sv;
  EXPECT_EQ(*resolve_node_name({"n9", "n3", cmdline, "host"}), "n9");
  EXPECT_EQ(*resolve_node_name({nullptr, "n3", cmdline, "host"}), "n3");
  EXPECT_EQ(*resolve_node_name({nullptr, nullptr, cmdline, "host"}), "n2");
  EXPECT_EQ(*resolve_node_name({nullptr, nullptr, "slurmd\0-Nn4\0"sv, "host"}), "n4");
  EXPECT_EQ(*resolve_node_name({nullptr, nullptr, "slurmd\0-D\0"sv, "gpu01.cluster.example"}), "gpu01");
}

TEST(NodeFiles, NodeNameThatCouldEscapeTheStateDirIsRefused) {
  auto bad = resolve_node_name({"../etc", nullptr, {}, "host"});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("node name '../etc' from VGPU_NODENAME"));
  EXPECT_FALSE(resolve_node_name({nullptr, nullptr, {}, ""}));
}

TEST(NodeFiles, PathsFollowTheContract) {
  EXPECT_EQ(advertisement_path("/s", "n1"), "/s/n1/advertisement.json");
  EXPECT_EQ(job_record_path("/s", "n1", 42), "/s/n1/jobs/42.json");
}

TEST(NodeFiles, ReadsSmallFilesAndRefusesLargeOrMissingOnes) {
  auto dir = std::filesystem::temp_directory_path() / ("vgpu_node_files_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "f.json").string();
  std::ofstream(path) << "0123456789";
  auto ok = read_small_file(path, 10);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, "0123456789");
  auto big = read_small_file(path, 9);
  ASSERT_FALSE(big);
  EXPECT_THAT(big.error().message, HasSubstr("larger than 9 bytes"));
  auto missing = read_small_file((dir / "nope.json").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, vgpu::ErrorCode::not_found);
  std::filesystem::remove_all(dir);
}

TEST(NodeFiles, JobIdMustBeStrictDecimal) {
  EXPECT_EQ(parse_job_id("42"), 42U);
  EXPECT_FALSE(parse_job_id(nullptr));
  EXPECT_FALSE(parse_job_id(""));
  EXPECT_FALSE(parse_job_id("42a"));
  EXPECT_FALSE(parse_job_id("-1"));
  EXPECT_FALSE(parse_job_id("99999999999999999999999"));
  // Slurm job ids are uint32_t on every side, and 0 is never a job.
  EXPECT_EQ(parse_job_id("4294967295"), 4294967295U);
  EXPECT_FALSE(parse_job_id("4294967296"));
  EXPECT_FALSE(parse_job_id("0"));
}

TEST(Names, ProfileNamesExcludeSlurmSeparatorsAndReservedTypes) {
  EXPECT_TRUE(is_valid_type_name("1g.10gb+me"));
  EXPECT_FALSE(is_valid_type_name("free"));
  EXPECT_FALSE(is_valid_type_name("a:b"));
  EXPECT_FALSE(is_valid_type_name(".hidden"));
  EXPECT_FALSE(is_valid_type_name(std::string(33, 'a')));
}
