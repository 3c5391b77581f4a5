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

}  // namespace
}  // namespace vgpu
