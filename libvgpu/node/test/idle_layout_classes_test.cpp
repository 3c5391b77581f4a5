// A class in a partition's idle layout (docs/policy.md, "classes"): the node realizes it on its
// model as it would for a job, plans the idle GPU with it and advertises it under the class's name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "node_doubles.h"
#include "vgpu/node/planner.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPolicy = R"({
  "version": 1,
  "planner": {"period_s": 5, "starvation_s": 120},
  "classes": {"small": {"min_memory_gb": 10, "min_compute_fraction": 0.125}},
  "partitions": {
    "gpu": {"profiles": ["small", "3g.40gb"], "nodes": ["n1"], "idle_layout": ["3g.40gb", "small", "small"],
            "scrub": "optional"}
  }
})";

TEST(IdleLayoutClasses, AnIdleGpuIsSplitIntoTheClassAsItsModelRealizesIt) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("vgpu-idle-classes-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "n1");
  auto policy = parse_policy(kPolicy, "test-policy.json");
  ASSERT_TRUE(policy) << policy.error().message;
  Catalog::install_classes(policy->site_types());
  {
    testing::MemoryBackend backend(*Catalog::builtin().find_model("H100-80GB"), 1);
    LedgerStore store((dir / "n1").string());
    testing::FakeSlurm slurm((dir / "n1" / "advertisement.json").string());
    testing::ScriptedScrubber scrubber;
    testing::CountingPublisher publisher;
    NodeContext ctx;
    testing::wire_test_node(ctx, dir.string(), *policy, store, backend, slurm, scrubber, publisher);
    ctx.now = [] { return std::int64_t{1'800'000'000}; };
    ctx.log = [](const std::string&) {};
    ctx.confirm_timeout_ms = 2000;
    PlannerState planner;
    for (int round = 0; round < 3; ++round) {
      auto r = run_planner_round(ctx, planner);
      ASSERT_TRUE(r) << r.error().message;
    }
    EXPECT_EQ(*read_advertised_counts(ctx), (std::map<std::string, int>{{"3g.40gb", 1}, {"small", 2}}));
    auto l = store.load();
    ASSERT_TRUE(l) << l.error().message;
    for (const auto& s : l->plan.slots) {
      if (s.profile == "small") {
        EXPECT_EQ(s.placement.size, 1) << "an H100 realizes small as 1g.10gb, one slice";
      }
    }
  }
  Catalog::install_classes({});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vgpu
