// Hostile text in what the planner parses as root. The squeue format carries no field a user
// writes freely (no job name, comment, account or work dir); the one user-chosen field is the
// gres request, which parse_vgpu_gres() holds to [A-Za-z0-9._+-]. A bad line is reported and
// skipped, never fatal, and never bleeds into its neighbours. docs/security.md refers here.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "vgpu/node/slurm_text.h"

namespace vgpu {
namespace {

const std::string kGood = "42|train|4294|2026-11-22T20:50:01|Resources|gres:vgpu:1g.10gb:1";

std::string line_with_gres(const std::string& gres) { return "43|train|1|2026-11-22T20:50:01|Resources|" + gres; }

TEST(SlurmTextHostile, SqueueFormatHasNoFreeTextField) {
  // %i id, %P partition, %Q priority, %V submit time, %r reason, %b gres: all but %b are
  // written by Slurm or the administrator. Adding %j (name) or %k (comment) would hand users
  // the separator and the newline.
  EXPECT_EQ(kSqueuePendingFormat, "%i|%P|%Q|%V|%r|%b|%D|%u|%l|%v");
}

TEST(SlurmTextHostile, ASeparatorInTheGresFieldRejectsOnlyThatLine) {
  auto p = parse_pending_jobs(line_with_gres("gres:vgpu:1g.10gb:1|x") + "\n" + kGood + "\n");
  ASSERT_EQ(p.jobs.size(), 1u);
  EXPECT_EQ(p.jobs[0].id, "42");
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_NE(p.errors[0].find("squeue line 1: expected 10 '|'-separated fields"), std::string::npos);
}

TEST(SlurmTextHostile, ANewlineCannotSmuggleAFragmentIntoAJob) {
  // Were a newline ever to reach the gres field, the tail becomes a line of its own that lacks
  // the other five fields, so it is reported, not planned.
  auto p = parse_pending_jobs(line_with_gres("gres:vgpu:1g.10gb:1\nvgpu:7g.80gb:8") + "\n" + kGood);
  ASSERT_EQ(p.jobs.size(), 2u);
  EXPECT_EQ(p.jobs[0].vgpu, (std::vector<GresRequest>{{"1g.10gb", 1}}));
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_NE(p.errors[0].find("squeue line 2"), std::string::npos);
}

TEST(SlurmTextHostile, TypesOutsideTheSafeAlphabetAreRejected) {
  const std::vector<std::string> hostile = {
      "gres:vgpu:../../etc/passwd:1",                 // path separators (types become file/env text)
      "gres:vgpu:$(reboot):1",                        // shell syntax
      "gres:vgpu:1g.10gb\xc3\xa9:1",                  // UTF-8
      "gres:vgpu:a b:1",                              // space
      "gres:vgpu:" + std::string(10000, 'a') + ":1",  // 10k characters
      "gres:vgpu:1g.10gb:99999999999",                // count overflow
      "gres:vgpu:1g.10gb:-1",
      std::string("gres:vgpu:1g.10gb\0x:1", 21),  // NUL byte
  };
  for (const auto& gres : hostile) {
    auto p = parse_pending_jobs(line_with_gres(gres) + "\n" + kGood + "\n");
    EXPECT_EQ(p.jobs.size(), 1u) << gres.substr(0, 40);
    EXPECT_EQ(p.errors.size(), 1u) << gres.substr(0, 40);
  }
}

TEST(SlurmTextHostile, ArrayRangesBeyondIntDoNotOverflow) {
  // Slurm's MaxArraySize keeps real ids small, but the text may come from a demand file.
  auto p = parse_pending_jobs(
      "50_[0-2147483647]|train|1|2026-11-22T20:50:01|Resources|gres:vgpu:1g.10gb:1\n"
      "51_[1-2000000000,1-2000000000]|train|1|2026-11-22T20:50:01|Resources|gres:vgpu:1g.10gb:1\n");
  ASSERT_EQ(p.jobs.size(), 2u);
  EXPECT_EQ(p.jobs[0].array_tasks, INT_MAX);
  EXPECT_EQ(p.jobs[1].array_tasks, INT_MAX);
}

TEST(SlurmTextHostile, ScontrolNodeWithHugeOrOddValuesIsRefusedNotMisread) {
  EXPECT_FALSE(parse_scontrol_node("NodeName=n1 Gres=vgpu:1g.10gb:99999999999 State=IDLE", "vgpu"));
  EXPECT_FALSE(parse_scontrol_node("NodeName=n1 Gres=vgpu:1g.10gb:1:2 State=IDLE", "vgpu"));
  auto n = parse_scontrol_node("NodeName=n1 Gres=gpu:x:1,vgpu:1g.10gb:2 State=IDLE", "vgpu");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->configured, (std::map<std::string, int>{{"1g.10gb", 2}}));
}

}  // namespace
}  // namespace vgpu
