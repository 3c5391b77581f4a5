// The hook tally on disk (hook_tally_store.h): every run adds up, and a corrupt file costs the
// counts so far, never the hook.
#include "vgpu/node/hook_tally_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace vgpu {
namespace {

struct TallyDir {
  std::string root;
  NodeContext ctx;
  TallyDir() {
    char tmpl[] = "/tmp/vgpu-tally-XXXXXX";
    root = ::mkdtemp(tmpl);
    ctx.node = "n1";
    ctx.state_dir = root;
    std::filesystem::create_directories(ctx.node_dir());
  }
  ~TallyDir() { std::filesystem::remove_all(root); }
};

TEST(HookTallyStore, EveryRunIsAddedToTheNodesTally) {
  TallyDir d;
  auto empty = read_hook_tally(d.ctx);
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->hooks.size(), 0u);
  ASSERT_TRUE(tally_hook_run(d.ctx, {"prolog", 0.2, "", false}));
  ASSERT_TRUE(tally_hook_run(d.ctx, {"prolog", 0.3, "policy", false}));
  ASSERT_TRUE(tally_hook_run(d.ctx, {"prolog", 0.1, "", true}));
  ASSERT_TRUE(tally_hook_run(d.ctx, {"epilog", 0.05, "", false}));
  auto t = read_hook_tally(d.ctx);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->hooks.at("prolog").count, 3u);
  EXPECT_NEAR(t->hooks.at("prolog").sum_seconds, 0.6, 1e-9);
  EXPECT_EQ(t->hooks.at("epilog").count, 1u);
  EXPECT_EQ(t->cancelled.at("policy"), 1u);
  EXPECT_EQ(t->requeued, 1u);
  struct stat st {};
  ASSERT_EQ(::stat((d.ctx.node_dir() + "/hook-tally.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(HookTallyStore, ScrubsAreTimedAndCountedByOutcome) {
  TallyDir d;
  ASSERT_TRUE(tally_scrubs(d.ctx, {}));
  EXPECT_FALSE(std::filesystem::exists(d.ctx.node_dir() + "/hook-tally.json")) << "nothing scrubbed, nothing written";
  ASSERT_TRUE(tally_scrubs(d.ctx, {{2.0, "clean"}, {3.0, "clean"}, {0.5, "failed"}}));
  ASSERT_TRUE(tally_hook_run(d.ctx, {"epilog", 6.0, "", false}));
  auto t = read_hook_tally(d.ctx);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->hooks.at("scrub").count, 3u);
  EXPECT_NEAR(t->hooks.at("scrub").sum_seconds, 5.5, 1e-9);
  EXPECT_EQ(t->scrubs.at("clean"), 2u);
  EXPECT_EQ(t->scrubs.at("failed"), 1u);
  EXPECT_EQ(t->hooks.at("epilog").count, 1u);
}

TEST(HookTallyStore, ACorruptTallyIsStartedAfreshAndSaysSo) {
  TallyDir d;
  std::ofstream(d.ctx.node_dir() + "/hook-tally.json") << "{\"format\": \"slurm-vgpu-hook-tally\", trunc";
  auto bad = read_hook_tally(d.ctx);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(d.ctx.node_dir() + "/hook-tally.json"), std::string::npos) << bad.error().message;
  auto added = tally_hook_run(d.ctx, {"epilog", 1.5, "", false});
  ASSERT_FALSE(added);
  EXPECT_NE(added.error().message.find("hook tally started afresh"), std::string::npos) << added.error().message;
  auto t = read_hook_tally(d.ctx);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->hooks.at("epilog").count, 1u);
}

// The planner keeps the runs of the hooks it serves and writes them once per round: nothing reaches
// the file before the flush, everything after it, and a hook working alone meanwhile adds its run
// to the same file without losing the pending ones.
TEST(HookTallyStore, TheRunsAPlannerServedAreWrittenAtItsFlushInOneWrite) {
  TallyDir d;
  PendingTally pending;
  d.ctx.pending_tally = &pending;
  ASSERT_TRUE(tally_hook_run(d.ctx, {"prolog", 0.02, "", false}));
  ASSERT_TRUE(tally_hook_run(d.ctx, {"prolog", 0.03, "no_room", true}));
  ASSERT_TRUE(tally_scrubs(d.ctx, {{0.7, "clean"}}));
  ASSERT_TRUE(tally_hook_run(d.ctx, {"epilog", 0.04, "", false}));
  EXPECT_FALSE(std::filesystem::exists(d.ctx.node_dir() + "/hook-tally.json")) << "written before the flush";
  EXPECT_FALSE(pending.empty());

  NodeContext alone = d.ctx;  // a hook the planner did not serve
  alone.pending_tally = nullptr;
  ASSERT_TRUE(tally_hook_run(alone, {"epilog", 0.5, "", false}));

  ASSERT_TRUE(flush_hook_tally(d.ctx, pending));
  EXPECT_TRUE(pending.empty());
  auto t = read_hook_tally(d.ctx);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->hooks.at("prolog").count, 2u);
  EXPECT_EQ(t->hooks.at("epilog").count, 2u);
  EXPECT_NEAR(t->hooks.at("epilog").sum_seconds, 0.54, 1e-9);
  EXPECT_EQ(t->hooks.at("scrub").count, 1u);
  EXPECT_EQ(t->scrubs.at("clean"), 1u);
  EXPECT_EQ(t->cancelled.at("no_room"), 1u);
  EXPECT_EQ(t->requeued, 1u);

  const auto written = std::filesystem::last_write_time(d.ctx.node_dir() + "/hook-tally.json");
  ASSERT_TRUE(flush_hook_tally(d.ctx, pending)) << "an empty flush";
  EXPECT_EQ(std::filesystem::last_write_time(d.ctx.node_dir() + "/hook-tally.json"), written) << "an empty flush wrote";
}

TEST(HookTallyStore, AFlushThatCannotWriteDropsTheRunsAndSaysWhy) {
  TallyDir d;
  PendingTally pending;
  d.ctx.pending_tally = &pending;
  ASSERT_TRUE(tally_hook_run(d.ctx, {"prolog", 0.02, "", false}));
  d.ctx.state_dir = d.root + "/missing";  // no node directory: the lock cannot be taken
  auto flushed = flush_hook_tally(d.ctx, pending);
  ASSERT_FALSE(flushed);
  EXPECT_NE(flushed.error().message.find("hook-tally.lock"), std::string::npos) << flushed.error().message;
  EXPECT_TRUE(pending.empty()) << "metrics only: a failed write must not grow a queue";
}

}  // namespace
}  // namespace vgpu
