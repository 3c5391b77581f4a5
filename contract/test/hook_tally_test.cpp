// hook-tally.json (hook_tally.h): durations land in the right bucket, and the strict reader
// refuses what its writer never writes.
#include "vgpu/contract/hook_tally.h"

#include <gtest/gtest.h>

namespace vgpu::contract {
namespace {

TEST(HookTally, DurationsLandInTheFirstBucketWhoseBoundHoldsThemAndLongOnesInTheLast) {
  HookDurations d;
  d.observe(0.01);  // on a bound: that bucket (le="0.01")
  d.observe(0.011);
  d.observe(400);
  d.observe(-1);  // a clock that stepped back counts as 0
  EXPECT_EQ(d.buckets[0], 2u);
  EXPECT_EQ(d.buckets[1], 1u);
  EXPECT_EQ(d.buckets.back(), 1u);
  EXPECT_EQ(d.count, 4u);
  EXPECT_DOUBLE_EQ(d.sum_seconds, 400.021);
}

Result<HookTally> parse(std::string_view body, int version = 2) {
  return parse_hook_tally(R"({"format":"slurm-vgpu-hook-tally","version":)" + std::to_string(version) +
                              R"(,"node":"n1",)" + std::string(body) + "}",
                          "n1");
}

TEST(HookTally, StrictReaderNamesWhatIsWrong) {
  const std::string zeros = "[0,0,0,0,0,0,0,0,0,0,0,0]";
  const std::string rest = R"("cancelled":{},"requeued":0,"scrubs":{})";
  EXPECT_TRUE(parse(R"("hooks":{},)" + rest));
  EXPECT_EQ(parse(R"("hooks":{"slurmd":{"count":0,"sum_seconds":0,"buckets":)" + zeros + "}}," + rest).error().message,
            "hooks.slurmd: not a timed step (prolog, epilog, scrub)");
  EXPECT_EQ(parse(R"("hooks":{"prolog":{"count":2,"sum_seconds":0,"buckets":)" + zeros + "}}," + rest).error().message,
            "hooks.prolog: buckets add up to 0, count is 2");
  EXPECT_EQ(parse(R"("hooks":{"prolog":{"count":0,"sum_seconds":0,"buckets":[0]}},)" + rest).error().message,
            "hooks.prolog.buckets: must be 12 counts");
  EXPECT_EQ(parse(R"("hooks":{},"cancelled":{"bored":1},"requeued":0,"scrubs":{})").error().message,
            "cancelled.bored: not a cancel class");
  EXPECT_EQ(parse(R"("hooks":{},"cancelled":{},"requeued":0,"scrubs":{"skipped":1})").error().message,
            "scrubs.skipped: not a scrub outcome (clean, failed, unavailable)");
  EXPECT_FALSE(parse(R"("hooks":{},"cancelled":{},"requeued":0,"scrubs":{"clean":-1})"));
  EXPECT_FALSE(parse(R"("hooks":{},"cancelled":{},"requeued":0)")) << "version 2 has scrubs";
  EXPECT_FALSE(parse(R"("hooks":{},"cancelled":{},"requeued":-1,"scrubs":{})"));
  EXPECT_FALSE(parse(R"("hooks":{},"cancelled":{},"requeued":0,"scrubs":{},"extra":1)"));
  EXPECT_FALSE(parse(R"("hooks":{},)" + rest, 3));
  EXPECT_FALSE(parse_hook_tally(render_hook_tally({"n2", {}, {}, 0, {}}), "n1"));
}

// A node upgraded under running jobs: the previous release's hooks wrote version 1.
TEST(HookTally, VersionOneReadsAsATallyWithoutScrubs) {
  const std::string zeros = "[0,0,0,0,0,0,0,0,0,0,0,0]";
  auto v1 = parse(
      R"("hooks":{"prolog":{"count":1,"sum_seconds":0.1,"buckets":[0,0,0,0,1,0,0,0,0,0,0,0]}},"cancelled":{"policy":2},"requeued":1)",
      1);
  ASSERT_TRUE(v1) << v1.error().message;
  EXPECT_EQ(v1->hooks.at("prolog").count, 1u);
  EXPECT_EQ(v1->cancelled.at("policy"), 2u);
  EXPECT_TRUE(v1->scrubs.empty());
  EXPECT_FALSE(parse(
      R"("hooks":{"scrub":{"count":0,"sum_seconds":0,"buckets":)" + zeros + R"(}},"cancelled":{},"requeued":0)", 1))
      << "version 1 timed no scrubs";
  EXPECT_NE(render_hook_tally(*v1).find(R"("version":2)"), std::string::npos) << "written back as version 2";
}

}  // namespace
}  // namespace vgpu::contract
