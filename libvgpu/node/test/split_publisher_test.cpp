// How a split reaches slurmctld depends on slurmctld's release: SIGHUP to slurmd before 23.11;
// from 23.11 `scontrol update` at the constant total, and slurmd's own report refreshed by SIGHUP
// (at once when a type went to zero, else at most every refresh_s). node_agent.h, SplitPublisher.
#include <gtest/gtest.h>

#include "node_doubles.h"

namespace vgpu {
namespace {

class SplitPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    slurm.configured = {{"free", 10}, {"1g.10gb", 4}};  // total 14
    slurm.follows_file = false;
    ctx.node = "n1";
    ctx.slurm = &slurm;
    ctx.now = [this] { return clock; };
    ctx.log = [this](const std::string& s) { logs += s + "\n"; };
    publisher = make_split_publisher(ctx, [this] {
      ++sighups;
      return sighup_works;
    });
  }

  testing::FakeSlurm slurm{"/nonexistent/advertisement.json"};
  NodeContext ctx;
  std::unique_ptr<SplitPublisher> publisher;
  int sighups = 0;
  bool sighup_works = true;
  std::int64_t clock = 1'800'000'000;
  std::string logs;
};

TEST_F(SplitPublisherTest, BeforeSlurm2311SlurmdIsSignalled) {
  slurm.controller = SlurmVersion{23, 2, 7};
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 2}}));
  EXPECT_EQ(sighups, 1);
  EXPECT_TRUE(slurm.gres_updates.empty());
}

TEST_F(SplitPublisherTest, FromSlurm2311TheSplitIsSetWithScontrolUpdateAtTheSameTotal) {
  slurm.controller = SlurmVersion{26, 5, 3};
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 2}, {"3g.40gb", 1}}));
  ASSERT_EQ(slurm.gres_updates.size(), 1u);
  EXPECT_EQ(slurm.gres_updates[0].first, "n1");
  EXPECT_EQ(slurm.gres_updates[0].second, "vgpu:free:11,vgpu:1g.10gb:2,vgpu:3g.40gb:1");
}

TEST_F(SplitPublisherTest, AnUpdateThatZeroesATypeRefreshesSlurmdsReportAtOnce) {
  slurm.controller = SlurmVersion{26, 5, 3};
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 4}}));  // the first one always refreshes
  ASSERT_EQ(sighups, 1);
  clock += 1;
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 4}, {"2g.20gb", 1}}));
  EXPECT_EQ(sighups, 1) << "no type went to zero: the refresh may wait";
  slurm.configured = {{"free", 9}, {"1g.10gb", 4}, {"2g.20gb", 1}};
  clock += 1;
  ASSERT_TRUE(publisher->publish({{"2g.20gb", 3}}));  // 1g.10gb goes to zero
  EXPECT_EQ(sighups, 2);
  EXPECT_EQ(slurm.gres_updates.back().second, "vgpu:free:11,vgpu:2g.20gb:3");
}

TEST_F(SplitPublisherTest, ADeferredRefreshIsSentByTickOnceRefreshPeriodPassed) {
  slurm.controller = SlurmVersion{24, 11, 5};
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 4}}));
  ASSERT_EQ(sighups, 1);
  clock += 5;
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 5}}));
  publisher->tick();
  EXPECT_EQ(sighups, 1);
  clock += 30;
  publisher->tick();
  EXPECT_EQ(sighups, 2);
  publisher->tick();
  EXPECT_EQ(sighups, 2) << "nothing changed since the refresh";
}

TEST_F(SplitPublisherTest, ASplitAboveTheTotalIsRefusedNotSent) {
  slurm.controller = SlurmVersion{24, 11, 5};
  auto r = publisher->publish({{"7g.80gb", 15}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exceed the node's constant total of 14"), std::string::npos) << r.error().message;
  EXPECT_TRUE(slurm.gres_updates.empty());
  EXPECT_EQ(sighups, 0);
}

TEST_F(SplitPublisherTest, TheReleaseIsAskedOnceThenAgainAfterTheRecheckPeriod) {
  slurm.controller = SlurmVersion{23, 2, 7};
  ASSERT_TRUE(publisher->publish({}));
  ASSERT_TRUE(publisher->publish({}));
  EXPECT_EQ(slurm.version_queries, 1);
  // slurmctld was upgraded across 23.11 in the meantime.
  slurm.controller = SlurmVersion{23, 11, 10};
  clock += 600;
  ASSERT_TRUE(publisher->publish({{"1g.10gb", 1}}));
  EXPECT_EQ(slurm.version_queries, 2);
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
