// hook-tally.json (hook_tally.h): durations land in the right bucket, and the strict reader
// refuses what its writer never writes.
#include "vgpu/contract/hook_tally.h"

#include <gtest/gtest.h>

namespace vgpu::contract {
namespace {

TEST(HookTally, DurationsLandInTheFirstBucketWhoseBoundHoldsThemAndLongOnesInTheLast) {
  HookDurations d;
  d.observe(0.01);   // on a bound: that bucket (le="0.01")
  d.observe(0.011);
  d.observe(400);
  d.observe(-1);     // a clock that stepped back counts as 0
  EXPECT_EQ(d.buckets[0], 2u);
  EXPECT_EQ(d.buckets[1], 1u);
  EXPECT_EQ(d.buckets.back(), 1u);
  EXPECT_EQ(d.count, 4u);
  EXPECT_DOUBLE_EQ(d.sum_seconds, 400.021);
}

Result<HookTally> parse(std::string_view body) {
  return parse_hook_tally(std::string(R"({"format":"slurm-vgpu-hook-tally","version":1,"node":"n1",)") + std::string(body) + "}",
                          "n1");
}

TEST(HookTally, StrictReaderNamesWhatIsWrong) {
  const std::string zeros = "[0,0,0,0,0,0,0,0,0,0,0,0]";
  EXPECT_TRUE(parse(R"("hooks":{},"cancelled":{},"requeued":0)"));
  EXPECT_EQ(parse(R"("hooks":{"slurmd":{"count":0,"sum_seconds":0,"buckets":)" + zeros + R"(}},"cancelled":{},"requeued":0)")
                .error().message, "hooks.slurmd: not a hook (prolog, epilog)");
  EXPECT_EQ(parse(R"("hooks":{"prolog":{"count":2,"sum_seconds":0,"buckets":)" + zeros + R"(}},"cancelled":{},"requeued":0)")
                .error().message, "hooks.prolog: buckets add up to 0, count is 2");
  EXPECT_EQ(parse(R"("hooks":{"prolog":{"count":0,"sum_seconds":0,"buckets":[0]}},"cancelled":{},"requeued":0)")
                .error().message, "hooks.prolog.buckets: must be 12 counts");
  EXPECT_EQ(parse(R"("hooks":{},"cancelled":{"bored":1},"requeued":0)").error().message, "cancelled.bored: not a cancel class");
  EXPECT_FALSE(parse(R"("hooks":{},"cancelled":{},"requeued":-1)"));
  EXPECT_FALSE(parse(R"("hooks":{},"cancelled":{},"requeued":0,"extra":1)"));
  EXPECT_FALSE(parse_hook_tally(render_hook_tally({"n2", {}, {}, 0}), "n1"));
}

}  // namespace
}  // namespace vgpu::contract
