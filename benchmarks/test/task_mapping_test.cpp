#include "task_mapping.h"

#include <gtest/gtest.h>

namespace vgpu::bench {
namespace {

const GpuModel& h100() { return **Catalog::builtin().require_model("H100-80GB"); }

TEST(TaskMapping, SmallestH100ProfileWhoseComputeCoversTheRequest) {
  std::vector<MappingRow> rows = mapping_table(h100());
  ASSERT_EQ(rows.size(), 5u);
  // Boundaries are k/7 of a GPU: 142/1000 < 1/7 < 143/1000, and so on.
  EXPECT_EQ(rows[0].milli_from, 1);
  EXPECT_EQ(rows[0].milli_to, 142);
  EXPECT_EQ(rows[0].profile, "1g.10gb");
  EXPECT_EQ(rows[1].milli_to, 285);
  EXPECT_EQ(rows[1].profile, "2g.20gb");
  EXPECT_EQ(rows[2].milli_to, 428);
  EXPECT_EQ(rows[2].profile, "3g.40gb");
  EXPECT_EQ(rows[3].milli_to, 571);
  EXPECT_EQ(rows[3].profile, "4g.40gb");
  EXPECT_EQ(rows[4].milli_to, 1000);
  EXPECT_EQ(rows[4].profile, "7g.80gb");
  EXPECT_EQ(profile_for_milli(h100(), 0), nullptr);
  EXPECT_EQ(profile_for_milli(h100(), 1001), nullptr);
}

TEST(TaskMapping, TasksBecomeKindsAndProfiles) {
  Trace t;
  auto add = [&](int gpus, int milli) {
    TraceTask x;
    x.num_gpu = gpus;
    x.gpu_milli = milli;
    t.tasks.push_back(x);
  };
  add(0, 0);
  add(1, 460);
  add(1, 1000);
  add(4, 1000);
  add(16, 1000);
  auto m = map_tasks(t, h100(), 8);
  EXPECT_EQ(m[0].kind, TaskKind::cpu_only);
  EXPECT_EQ(m[1].kind, TaskKind::sharing);
  EXPECT_EQ(m[1].profile->name, "4g.40gb");
  EXPECT_EQ(m[1].slices(), 4);
  EXPECT_EQ(m[2].kind, TaskKind::whole_gpu);
  EXPECT_EQ(m[2].profile->name, "7g.80gb");
  EXPECT_EQ(m[3].gpus, 4);
  EXPECT_EQ(m[3].slices(), 28);
  EXPECT_EQ(m[4].kind, TaskKind::too_wide);

  MappingSummary s = summarize(m);
  EXPECT_EQ(s.cpu_only, 1);
  EXPECT_EQ(s.too_wide, 1);
  EXPECT_EQ(s.gpu_tasks, 3);
  EXPECT_EQ(s.requested_milli, 460 + 1000 + 4000);
  EXPECT_EQ(s.granted_slices, 4 + 7 + 28);
}

}  // namespace
}  // namespace vgpu::bench
