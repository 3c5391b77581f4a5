// The node flows' fixture: one node n1 with two H100-80GB behind the memory backend, partition
// "gpu" of kPolicy, a fake Slurm, and the clock and log under the test's control.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "node_doubles.h"
#include "vgpu/node/planner.h"

namespace vgpu::testing {

namespace fs = std::filesystem;

constexpr const char* kPolicy = R"({
  "version": 1,
  "planner": {"period_s": 5, "starvation_s": 120},
  "partitions": {
    "gpu": {
      "profiles": ["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
      "max_instances_per_job": 4,
      "max_instances_per_user": 5,
      "nodes": ["n1"],
      "idle_layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"],
      "scrub": "optional"
    }
  }
})";

class NodeFlows : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / fmt::format("vgpu-node-test-{}-{}", ::getpid(), counter++);
    fs::remove_all(dir);
    fs::create_directories(dir / "n1");
    auto p = parse_policy(kPolicy, "test-policy.json");
    ASSERT_TRUE(p) << p.error().message;
    policy = std::move(*p);
    store = std::make_unique<LedgerStore>((dir / "n1").string());
    slurm = std::make_unique<FakeSlurm>((dir / "n1" / "advertisement.json").string());
    wire_test_node(ctx, dir.string(), policy, *store, backend, *slurm, scrubber, publisher);
    ctx.now = [this] { return clock; };
    ctx.log = [this](const std::string& s) { logs.push_back(s); };
    ctx.confirm_timeout_ms = 2000;
  }
  void TearDown() override { fs::remove_all(dir); }

  std::map<std::string, int> advertised() { return *read_advertised_counts(ctx); }
  std::string all_logs() {
    std::string s;
    for (const auto& l : logs) s += l + "\n";
    return s;
  }

  static inline int counter = 0;
  fs::path dir;
  PolicyFile policy;
  std::unique_ptr<LedgerStore> store;
  MemoryBackend backend{*Catalog::builtin().find_model("H100-80GB"), 2};
  std::unique_ptr<FakeSlurm> slurm;
  ScriptedScrubber scrubber;
  NodeContext ctx;
  PlannerState planner;
  CountingPublisher publisher;
  int& sighups = publisher.published;
  std::int64_t clock = 1'800'000'000;
  std::vector<std::string> logs;
};

}  // namespace vgpu::testing
