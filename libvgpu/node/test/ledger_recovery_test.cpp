// A lost or corrupt ledger over doubles: rebuilt from the hardware, running jobs adopted again,
// orphans scrubbed then destroyed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "node_doubles.h"
#include "node_flows_fixture.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
using testing::NodeFlows;

TEST_F(NodeFlows, LostLedgerIsRebuiltAndRunningJobsReadopted) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {9, "frank", "gpu", "3g.40gb:1", std::nullopt});
  ASSERT_TRUE(pro && !pro->rejected);
  fs::remove(dir / "n1" / "ledger.json");
  auto l = ensure_ledger(ctx);
  ASSERT_TRUE(l) << l.error().message;
  ASSERT_EQ(l->instances.size(), 1u);
  EXPECT_EQ(l->instances[0].job, 9u);
  EXPECT_FALSE(l->instances[0].orphaned);
  // The epilog still finds and releases it (scrubbed, kept idle at its slot).
  auto epi = run_epilog(ctx, 9, "completed");
  ASSERT_TRUE(epi);
  EXPECT_EQ(epi->kept + epi->destroyed, 1);
  EXPECT_TRUE(instances_of_job(*store->load(), 9).empty());
}

TEST_F(NodeFlows, CorruptLedgerIsSetAsideAndOrphansAreScrubbedThenDestroyed) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(backend.create_instance(1, 9, {0, 4}));  // on the hardware, owner unknown
  { std::ofstream(dir / "n1" / "ledger.json") << "{ torn"; }
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(backend.instances().empty());
  EXPECT_EQ(scrubber.scrubbed.size(), 1u);
  bool set_aside = false;
  for (const auto& e : fs::directory_iterator(dir / "n1"))
    set_aside |= e.path().filename().string().starts_with("ledger.json.corrupt-");
  EXPECT_TRUE(set_aside);
}

}  // namespace
}  // namespace vgpu
