// Every record the contract owns round-trips through its one writer and its one strict reader.
#include <gtest/gtest.h>

#include "vgpu/contract/advertisement.h"
#include "vgpu/contract/alloc_codec.h"
#include "vgpu/contract/hook_tally.h"
#include "vgpu/contract/job_record.h"
#include "vgpu/contract/slurmd_report.h"

namespace vgpu::contract {
namespace {

TEST(Records, AdvertisementRoundTrips) {
  for (const Advertisement& adv :
       {Advertisement{"n1", 0, {}}, Advertisement{"gpu-017.cluster", 42, {{"1g.10gb", 4}, {"viz-small", 2}}},
        Advertisement{"n1", UINT64_MAX, {{"7g.80gb", 8}}}}) {
    auto back = parse_advertisement(render_advertisement(adv), adv.node);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->node, adv.node);
    EXPECT_EQ(back->generation, adv.generation);
    EXPECT_EQ(back->counts, adv.counts);
  }
}

// A type at 0 stays in the file: it tells a freshly started slurmd to report that type at 0, which
// it cannot know otherwise for a type outside the builtin catalog (a class, a share type).
TEST(Records, AdvertisementKeepsTheZeroCountsItIsGiven) {
  auto back = parse_advertisement(render_advertisement({"n1", 1, {{"quarter", 0}, {"2g.20gb", 1}}}), "n1");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->counts, (std::map<std::string, std::uint64_t, std::less<>>{{"quarter", 0}, {"2g.20gb", 1}}));
}

TEST(Records, JobRecordRoundTrips) {
  for (const JobRecord& record :
       {JobRecord{1, {}, ""},
        JobRecord{
            4294967295U,
            {{"1g.10gb", "MIG-01234567-89ab-cdef-0123-456789abcdef", 0, SlicePlacement{6, 1}, "H100-80GB", 9984, 1, 7},
             {"3g.40gb", "MIG-fedcba98-7654-3210-fedc-ba9876543210", 7, SlicePlacement{0, 4}, "H100-80GB", 40448, 3,
              7}},
            ""},
        JobRecord{12,
                  {{"quarter", "MIG-01234567-89ab-cdef-0123-456789abcdef", 0, SlicePlacement{0, 4}, "H100-80GB", 20224,
                    3, 7}},
                  "/run/slurm-vgpu/mps/MIG-01234567-89ab-cdef-0123-456789abcdef/pipe"},
        JobRecord{
            9, {{"cpx.24gb", "GPU-0466935ebd0f020d", 1, SlicePlacement{4, 1}, "MI300X-192GB", 24576, 1, 8}}, ""}}) {
    auto back = parse_job_record(render_job_record(record), record.job_id);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, record);
  }
}

TEST(Records, HookTallyRoundTrips) {
  HookTally empty{"n1", {}, {}, 0, {}};
  HookTally busy{"gpu-017.cluster", {}, {{"policy", 3}, {"no_room", 1}}, 7, {{"clean", 12}, {"failed", 1}}};
  busy.hooks["scrub"].observe(2.5);
  busy.hooks["prolog"].observe(0.004);
  busy.hooks["prolog"].observe(0.3);
  busy.hooks["epilog"].observe(45);
  for (const HookTally& t : {empty, busy}) {
    auto back = parse_hook_tally(render_hook_tally(t), t.node);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, t);
  }
}

TEST(Records, SlurmdReportRoundTrips) {
  SlurmdReport report{"n1", 9, 14, {{"1g.10gb", 4}, {"7g.80gb", 1}}};
  auto back = parse_slurmd_report(render_slurmd_report(report), "n1");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, report);
}

TEST(Records, VgpuAllocRoundTrips) {
  const std::vector<AllocItem> items{{"1g.10gb", 2}, {"viz-small", 1}, {"free", 4096}};
  std::string text;
  for (const auto& item : items) text = append_alloc_item(text, item.type, static_cast<std::uint64_t>(item.count));
  auto back = parse_alloc(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, items);
  for (const auto& item : items) {
    auto bits = encode_type_bits(item.type);
    auto name = decode_type_bits(bits);
    ASSERT_TRUE(name) << item.type;
    EXPECT_EQ(*name, item.type);
  }
}

}  // namespace
}  // namespace vgpu::contract
