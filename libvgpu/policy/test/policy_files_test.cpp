// The shipped example and the intentionally broken files under test/bad/: every error's exact
// file:line:column and field path.
#include <gtest/gtest.h>

#include "read_text.h"

#include <algorithm>
#include <fstream>

#include "vgpu/policy/policy.h"

namespace vgpu {
namespace {

const std::string kBad = std::string(VGPU_SOURCE_DIR) + "/libvgpu/policy/test/bad/";
const std::string kExample = std::string(VGPU_SOURCE_DIR) + "/examples/policy.json";

using vgpu::testing::read_text;

// Checks the file under the label "bad/<name>" so the expectations read like the CLI output.
std::vector<std::string> errors_of(const std::string& name) {
  std::vector<std::string> out;
  for (const auto& d : check_policy(read_text(kBad + name), "bad/" + name).diagnostics) out.push_back(d.to_string());
  return out;
}

TEST(PolicyBadFiles, ManyErrorsAreAllReportedWithPositionsInFileOrder) {
  auto errors = errors_of("many-errors.json");
  ASSERT_EQ(errors.size(), 7u);
  EXPECT_EQ(errors[0], "bad/many-errors.json:3:27: planner.period_s: must be an integer in 1..3600, got 0");
  EXPECT_TRUE(errors[1].starts_with(
      "bad/many-errors.json:6:31: partitions.infer.profiles[1]: profile 9g.99gb does not exist on "
      "any known GPU model (valid: 1g.5gb, 1g.5gb+me, 1g.10gb,"))
      << errors[1];
  EXPECT_EQ(errors[2],
            "bad/many-errors.json:7:32: partitions.infer.max_instances_per_job: must be an "
            "integer >= 1, got \"four\"");
  EXPECT_EQ(errors[3],
            "bad/many-errors.json:8:31: partitions.infer.nodes[1]: hostlist 'n[5-2]': range '5-2' "
            "runs backwards");
  EXPECT_EQ(errors[4],
            "bad/many-errors.json:9:19: partitions.infer.gpus[1]: must be an integer in 0..63, "
            "got 64");
  EXPECT_EQ(errors[5],
            "bad/many-errors.json:10:16: partitions.infer.scrub: must be one of \"required\", "
            "\"optional\", got \"sometimes\"");
  EXPECT_EQ(errors[6],
            "bad/many-errors.json:11:7: partitions.infer.colour: unknown field (known here: "
            "profiles, max_instances_per_job, max_instances_per_user, nodes, gpus, idle_layout, "
            "scrub, mig_mode, share_across_users, viz_pools, comment)");
}

TEST(PolicyBadFiles, SyntaxErrorGivesLineAndColumn) {
  auto errors = errors_of("syntax-trailing-comma.json");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "bad/syntax-trailing-comma.json:4:39: invalid JSON: trailing comma before '}'");
}

TEST(PolicyBadFiles, IdleLayoutEntryThatDoesNotFitIsNamed) {
  auto errors = errors_of("idle-layout-does-not-fit.json");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "bad/idle-layout-does-not-fit.json:6:45: partitions.train.idle_layout[2]: 3g.40gb does "
            "not fit on an empty H100-80GB after the entries before it [4g.40gb@0|3g.40gb@4]: "
            "memory slices 0-3 overlap an existing instance");
}

TEST(PolicyBadFiles, ProfileNotOnTheNamedModelListsValidNames) {
  auto errors = errors_of("profiles-per-model.json");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0],
            "bad/profiles-per-model.json:5:45: partitions.infer.profiles.H100-80GB[1]: profile "
            "1g.5gb does not exist on H100-80GB (valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, "
            "3g.40gb, 4g.40gb, 7g.80gb, whole.80gb)");
  EXPECT_EQ(errors[1],
            "bad/profiles-per-model.json:5:56: partitions.infer.profiles.B200: unknown GPU model "
            "(known: A100-40GB, A100-80GB, H100-80GB, H100-94GB, H200-141GB, A30-24GB, L40S-48GB, L4-24GB, "
            "A10-24GB, V100-16GB, MI300X-192GB, MI325X-256GB)");
}

TEST(PolicyBadFiles, VizPoolErrorsIncludingDuplicateNames) {
  auto errors = errors_of("viz-pools.json");
  ASSERT_EQ(errors.size(), 5u);
  EXPECT_EQ(errors[0],
            "bad/viz-pools.json:3:65: images.tinyguest.initrd: must be an absolute path without "
            "'..' components (not absolute), got \"boot/initrd.gz\"");
  EXPECT_EQ(errors[1],
            "bad/viz-pools.json:7:44: partitions.viz.viz_pools[0].gpu_type: must be absent when "
            "attach is \"none\" (such a VM has no GPU device)");
  EXPECT_EQ(errors[2],
            "bad/viz-pools.json:9:18: partitions.viz.viz_pools[1].name: viz pool name \"desk\" is "
            "already used by partitions.viz.viz_pools[0].name");
  EXPECT_EQ(errors[3],
            "bad/viz-pools.json:9:79: partitions.viz.viz_pools[1].image: no image named "
            "\"bigguest\" (images: tinyguest)");
  EXPECT_EQ(errors[4],
            "bad/viz-pools.json:10:24: partitions.viz.viz_pools[1].memory_mib: must be an integer "
            "in 128..1048576, got 64");
}

TEST(PolicyBadFiles, WrongVersionIsTheOnlyErrorReported) {
  auto errors = errors_of("wrong-version.json");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "bad/wrong-version.json:2:14: version: unsupported policy version, got 2 (this reader "
            "understands version 1)");
}

TEST(PolicyBadFiles, LoadPolicyFileLabelsErrorsWithThePathAndJoinsThemByLine) {
  auto result = load_policy_file(kBad + "many-errors.json");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_TRUE(result.error().message.starts_with(kBad + "many-errors.json:3:27: "));
  EXPECT_EQ(std::ranges::count(result.error().message, '\n'), 6);
}

TEST(PolicyBadFiles, AnUnreadableFileIsAnIoError) {
  auto check = check_policy_file(kBad + "does-not-exist.json");
  EXPECT_TRUE(check.io_error);
  ASSERT_EQ(check.diagnostics.size(), 1u);
  EXPECT_EQ(check.diagnostics[0].to_string(), kBad + "does-not-exist.json: cannot read: no such file");
  auto result = load_policy_file(kBad);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::io);
  EXPECT_NE(result.error().message.find("a directory, not a regular file"), std::string::npos);
}

TEST(PolicyExample, PassesTheCheck) {
  auto check = check_policy_file(kExample);
  std::string text;
  for (const auto& d : check.diagnostics) text += d.to_string() + "\n";
  ASSERT_TRUE(check.ok()) << text;
  EXPECT_EQ(check.policy->partitions.size(), 3u);
}

}  // namespace
}  // namespace vgpu
