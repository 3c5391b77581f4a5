// How a split reaches slurmctld depends on slurmctld's release: SIGHUP to slurmd before 23.11;
// from 23.11 `scontrol update` at the constant total, sent once slurmd itself reports the split
// (slurmd-report.json, written by the plugin inside slurmd). vgpu/node/split_publisher.h.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "vgpu/contract/slurmd_report.h"
#include "vgpu/node/launch_watch.h"
#include "vgpu/node/split_publisher.h"
#include "held_ledger.h"
#include "node_doubles.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;

class SplitPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("vgpu-split-publisher-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir / "n1");
    slurm.configured = {{"free", 10}, {"1g.10gb", 4}};  // total 14
    slurm.follows_file = false;
    ctx.node = "n1";
    ctx.state_dir = dir.string();
    ctx.slurm = &slurm;
    ctx.now = [this] { return clock; };
    ctx.log = [this](const std::string& s) { logs += s + "\n"; };
    publisher = make_split_publisher(ctx,
                                     [this] {
                                       ++sighups;
                                       return sighup_works;
                                     },
                                     {.recheck_s = 600, .slurmd_report_ms = 300});
  }
  void TearDown() override { fs::remove_all(dir); }

  // A ledger of two idle H100s and the planner's launch watch, as the planner wires them.
  void watch_launches() {
    store.emplace((dir / "n1").string());
    ASSERT_TRUE(store->replace(node::test::two_h100s()));
    ctx.ledger = &*store;
    ctx.launches = &launches;
  }

  // What the plugin inside slurmd writes once it reports `counts`.
  void slurmd_reports(const std::map<std::string, std::uint64_t, std::less<>>& counts) {
    std::ofstream(dir / "n1" / "slurmd-report.json") << contract::render_slurmd_report({"n1", 7, 14, counts});
  }

  fs::path dir;
  testing::FakeSlurm slurm{"/nonexistent/advertisement.json"};
  NodeContext ctx;
  std::unique_ptr<SplitPublisher> publisher;
  int sighups = 0;
  bool sighup_works = true;
  std::int64_t clock = 1'800'000'000;
  std::string logs;
  std::optional<LedgerStore> store;
  LaunchWatch launches;
};

TEST_F(SplitPublisherTest, BeforeSlurm2311SlurmdIsSignalled) {
  slurm.controller = SlurmVersion{23, 2, 7};
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 2}}));
  EXPECT_EQ(sighups, 1);
  EXPECT_TRUE(slurm.gres_updates.empty());
}

// A SIGHUP between a job's batch launch and its prolog launch can make slurmd 22.05 fail the launch
// and slurmctld drain the node (vgpu/node/launch_watch.h): the SIGHUP waits for the prolog of a
// job the cluster view shows here unclaimed, serving hooks meanwhile so that the prolog can claim.
TEST_F(SplitPublisherTest, BeforeSlurm2311TheSignalWaitsForThePrologOfAJobStartedHere) {
  watch_launches();
  slurm.controller = SlurmVersion{22, 5, 8};
  slurm.running = {7};
  slurm.take_view(clock);
  int served = 0;
  ctx.serve_waiting_hooks = [&] {
    if (++served != 3) return;
    EXPECT_EQ(sighups, 0) << "slurmd was signalled before job 7's prolog arrived";
    launches.hook_arrived(7, clock);  // the planner serves job 7's prolog
  };
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 2}}));
  EXPECT_EQ(served, 3);
  EXPECT_EQ(sighups, 1);
  EXPECT_NE(logs.find("signalled slurmd once the prolog of job(s) 7 had arrived"), std::string::npos) << logs;
}

TEST_F(SplitPublisherTest, BeforeSlurm2311APrologThatNeverComesHoldsTheSignalOnlyForAWhile) {
  watch_launches();
  publisher = make_split_publisher(ctx,
                                   [this] {
                                     ++sighups;
                                     return true;
                                   },
                                   {.recheck_s = 600, .slurmd_report_ms = 300, .launch_wait_ms = 200});
  slurm.running = {7, 8};
  slurm.take_view(clock);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 2}}));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_EQ(sighups, 1);
  EXPECT_NE(logs.find("no prolog yet for job(s) 7,8 that slurmctld shows here; signalling slurmd after waiting 200 ms"),
            std::string::npos)
      << logs;
  // Still unclaimed a window later: a job without vgpu, which no prolog of ours claims for.
  clock += 20;
  logs.clear();
  start = std::chrono::steady_clock::now();
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 1}}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
  EXPECT_EQ(sighups, 2);
  EXPECT_EQ(logs.find("no prolog yet"), std::string::npos) << logs;
}

TEST_F(SplitPublisherTest, WithoutAClusterViewTheSignalAsksNothingAndWaitsForNothing) {
  watch_launches();
  slurm.running = {7};
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 2}}));
  EXPECT_EQ(sighups, 1);
  EXPECT_EQ(slurm.node_job_queries, 0) << "per-node polling must not gain a query per handover";
}

TEST_F(SplitPublisherTest, FromSlurm2311TheSplitIsSetWithScontrolUpdateOnceSlurmdReportsIt) {
  slurm.controller = SlurmVersion{26, 5, 3};
  slurmd_reports({{"1g.10gb", 2}, {"3g.40gb", 1}});
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 2}, {"3g.40gb", 1}, {"2g.20gb", 0}}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250)) << "no wait once reported";
  EXPECT_EQ(sighups, 0) << "from 23.11 SIGHUP re-execs slurmd: never sent";
  ASSERT_EQ(slurm.gres_updates.size(), 1u);
  EXPECT_EQ(slurm.gres_updates[0].first, "n1");
  EXPECT_EQ(slurm.gres_updates[0].second, "vgpu:free:11,vgpu:1g.10gb:2,vgpu:3g.40gb:1");
  EXPECT_EQ(logs.find("does not report"), std::string::npos) << logs;
}

TEST_F(SplitPublisherTest, ASplitSlurmdDoesNotReportIsHandedOverAfterTheWaitWithAWarning) {
  slurm.controller = SlurmVersion{24, 11, 5};
  slurmd_reports({{"1g.10gb", 4}});  // the old split
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 2}}));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  EXPECT_EQ(slurm.gres_updates.size(), 1u);
  EXPECT_NE(logs.find("slurmd does not report the new split after 300 ms"), std::string::npos) << logs;
}

// slurmctld keeps a type's last reported count until a registration lists the type again, so its
// Gres= can add up to more than slurm.conf's total for a while (seen in the 26.05 soak). A split
// summed from that view sets a total slurmd never reports, and the next registration invalidates
// the node: the total comes from slurmd's own report.
TEST_F(SplitPublisherTest, TheTotalIsTheOneSlurmdReportsNotTheSumSlurmctldShows) {
  slurm.controller = SlurmVersion{26, 5, 3};
  slurm.configured = {{"free", 4}, {"1g.10gb", 6}, {"2g.20gb", 4}, {"1g.20gb", 4}};  // shows 18
  slurmd_reports({{"1g.10gb", 6}, {"2g.20gb", 4}});
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 6}, {"2g.20gb", 4}}));
  ASSERT_EQ(slurm.gres_updates.size(), 1u);
  EXPECT_EQ(slurm.gres_updates[0].second, "vgpu:free:4,vgpu:1g.10gb:6,vgpu:2g.20gb:4");
  EXPECT_NE(logs.find("slurmctld shows a vgpu total of 18 but slurmd reports 14"), std::string::npos) << logs;
}

TEST_F(SplitPublisherTest, ASplitAboveTheTotalIsRefusedNotSent) {
  slurm.controller = SlurmVersion{24, 11, 5};
  slurmd_reports({{"7g.80gb", 15}});
  auto r = publisher->publish({{"7g.80gb", 15}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exceed the node's constant total of 14"), std::string::npos) << r.error().message;
  EXPECT_TRUE(slurm.gres_updates.empty());
}

TEST_F(SplitPublisherTest, TheReleaseIsAskedOnceThenAgainAfterTheRecheckPeriod) {
  slurm.controller = SlurmVersion{23, 2, 7};
  ASSERT_TRUE(publisher->publish({}));
  ASSERT_TRUE(publisher->publish({}));
  EXPECT_EQ(slurm.version_queries, 1);
  // slurmctld was upgraded across 23.11 in the meantime.
  slurm.controller = SlurmVersion{23, 11, 10};
  clock += 600;
  slurmd_reports({{"1g.10gb", 1}});
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 1}}));
  EXPECT_EQ(slurm.version_queries, 2);
  EXPECT_EQ(sighups, 2);
  EXPECT_EQ(slurm.gres_updates.size(), 1u);
  EXPECT_NE(logs.find("slurmctld is 23.11.10: splits are handed over by scontrol update"), std::string::npos) << logs;
}

TEST_F(SplitPublisherTest, AFailedPublishAsksTheReleaseAgainNextTime) {
  slurm.controller = SlurmVersion{22, 5, 8};
  sighup_works = false;
  EXPECT_FALSE(publisher->publish({}));
  sighup_works = true;
  ASSERT_TRUE(publisher->publish({}));
  EXPECT_EQ(slurm.version_queries, 2);
}

TEST_F(SplitPublisherTest, WithoutAnAnswerFromSlurmctldNothingIsSent) {
  slurm.controller.reset();
  auto r = publisher->publish({{"1g.10gb", 1}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("slurmctld is not responding"), std::string::npos) << r.error().message;
  EXPECT_EQ(sighups, 0);
  EXPECT_TRUE(slurm.gres_updates.empty());
}

}  // namespace
}  // namespace vgpu
