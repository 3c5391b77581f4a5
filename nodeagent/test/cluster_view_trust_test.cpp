// The cluster view steers every node's layout, so a planner takes it only when it is genuine and
// fresh: signed with the controller's key (whoever owns the file, however it travelled), read
// whole, not older than three periods; otherwise the planner keeps its plan and asks slurmctld
// itself at most once a minute per kind of question.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "adapters.h"
#include "cluster_view_source.h"
#include "view_signature.h"
#include "view_publisher.h"
#include "view_transport.h"
#include "vgpu/contract/cluster_view.h"
#include "vgpu/node/cluster_view_snapshot.h"

namespace vgpu::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using Tick = std::chrono::steady_clock::time_point;

class ClusterViewTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-view-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
    ASSERT_TRUE(make_view_key_pair(dir + "/view.key", dir + "/view.pub"));
    ASSERT_TRUE(make_view_key_pair(dir + "/other.key", dir + "/other.pub"));
  }
  void TearDown() override { fs::remove_all(dir); }

  static contract::ClusterView view_at(std::int64_t taken_at) {
    contract::ClusterView view;
    view.taken_at = taken_at;
    view.period_s = 5;
    view.pending = {"42|infer|4294|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:2|1|alice|60|(null)"};
    view.nodes = {{"n1", "NodeName=n1 Gres=vgpu:1g.10gb:2 GresUsed=vgpu:1g.10gb:0 State=IDLE Partitions=infer"}};
    view.running = {{41, "n[1-2]"}, {43, "n3"}};
    return view;
  }
  std::string signed_text(const contract::ClusterView& view, const std::string& key = "view.key") const {
    auto signer = ViewSigner::from_private_key_file(dir + "/" + key);
    EXPECT_TRUE(signer) << signer.error().message;
    const auto body = contract::render_cluster_view(view);
    return body + contract::signature_line(*signer->sign(body));
  }
  // A source whose reads answer `answers` in turn (the last one again and again).
  ClusterViewSource source_of(std::vector<Result<std::string>>& answers, int& reads) {
    ViewSourceSpec spec = *parse_view_source("tcp:ctl1", dir + "/view.pub");
    auto source = ClusterViewSource::open(spec, [&](const ViewSourceSpec&) {
      ++reads;
      auto answer = answers.front();
      if (answers.size() > 1) answers.erase(answers.begin());
      return answer;
    });
    EXPECT_TRUE(source) << source.error().message;
    return std::move(*source);
  }
  std::string dir;
};

TEST_F(ClusterViewTrust, OnlyTheControllersKeyMakesAViewGenuine) {
  auto signer = ViewSigner::from_private_key_file(dir + "/view.key");
  auto verifier = ViewVerifier::from_public_key_file(dir + "/view.pub");
  auto other = ViewVerifier::from_public_key_file(dir + "/other.pub");
  ASSERT_TRUE(signer && verifier && other);
  const std::string body = contract::render_cluster_view(view_at(1000));
  const auto signature = signer->sign(body);
  ASSERT_TRUE(signature);
  EXPECT_TRUE(verifier->verify(body, *signature));
  std::string altered = body;
  altered[altered.find("1g.10gb:2")] = '7';
  EXPECT_FALSE(verifier->verify(altered, *signature));
  EXPECT_FALSE(other->verify(body, *signature));
}

TEST_F(ClusterViewTrust, APrivateKeyOthersMayReadIsRefusedAndNoKeyIsOverwritten) {
  ASSERT_EQ(::chmod((dir + "/view.key").c_str(), 0640), 0);
  auto signer = ViewSigner::from_private_key_file(dir + "/view.key");
  ASSERT_FALSE(signer);
  EXPECT_NE(signer.error().message.find("lets others read a private key"), std::string::npos) << signer.error().message;
  auto again = make_view_key_pair(dir + "/view.key", dir + "/new.pub");
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("File exists"), std::string::npos) << again.error().message;
  EXPECT_FALSE(fs::exists(dir + "/new.pub"));
  auto not_a_key = ViewVerifier::from_public_key_file(dir + "/view.key");
  EXPECT_FALSE(not_a_key);
}

TEST_F(ClusterViewTrust, AServedViewArrivesWholeAndAnOversizedOneIsRefused) {
  auto server = ViewServer::listen(0);
  ASSERT_TRUE(server) << server.error().message;
  std::string big = signed_text(view_at(1000));
  big.insert(0, std::string(3 << 20, 'x'));  // several socket buffers: the reader must loop
  (*server)->publish(big);
  auto fetched = fetch_view("127.0.0.1", (*server)->port(), "n1", 8 << 20, std::chrono::milliseconds(5000));
  ASSERT_TRUE(fetched) << fetched.error().message;
  EXPECT_EQ(*fetched, big);
  auto capped = fetch_view("127.0.0.1", (*server)->port(), "n1", 1 << 20, std::chrono::milliseconds(5000));
  ASSERT_FALSE(capped);
  EXPECT_NE(capped.error().message.find("over the 1048576 byte limit"), std::string::npos) << capped.error().message;
}

TEST_F(ClusterViewTrust, EachNodeIsServedItsOwnSignedViewAndANodeThatNamesNoneTheWhole) {
  auto server = ViewServer::listen(0);
  ASSERT_TRUE(server) << server.error().message;
  auto whole = view_at(1000);
  whole.nodes.emplace("n2", "NodeName=n2 Gres=vgpu:7g.80gb:1 State=IDLE");
  auto signer = ViewSigner::from_private_key_file(dir + "/view.key");
  auto verifier = ViewVerifier::from_public_key_file(dir + "/view.pub");
  ASSERT_TRUE(signer && verifier);
  const std::string whole_text = signed_text(whole);
  (*server)->publish(period_answers(whole, whole_text, &*signer));
  auto own_view = [&](const std::string& node) -> contract::ClusterView {
    auto text = fetch_view("127.0.0.1", (*server)->port(), node, 1 << 20, std::chrono::milliseconds(5000));
    EXPECT_TRUE(text) << text.error().message;
    auto split = contract::split_view_signature(*text, "answer");
    EXPECT_TRUE(split && split->signature && verifier->verify(split->body, *split->signature)) << *text;
    auto view = contract::parse_cluster_view(split->body, "answer");
    EXPECT_TRUE(view) << view.error().message;
    return *view;
  };
  const auto n2 = own_view("n2");
  EXPECT_EQ(n2.for_node, "n2");
  ASSERT_EQ(n2.nodes.size(), 1u);
  EXPECT_TRUE(n2.nodes.contains("n2"));
  EXPECT_EQ(n2.running, (std::vector<contract::RunningJob>{{41, "n[1-2]"}}));
  EXPECT_EQ(own_view("n1").for_node, "n1");
  EXPECT_EQ(own_view("").for_node, contract::kWholeCluster);  // a planner of the release before
  auto again = fetch_view("127.0.0.1", (*server)->port(), "", 1 << 20, std::chrono::milliseconds(5000));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, whole_text);
  EXPECT_EQ((*server)->served(), 4u);
  auto bad = fetch_view("127.0.0.1", (*server)->port(), "n1 n2", 1 << 20, std::chrono::milliseconds(5000));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
}

TEST_F(ClusterViewTrust, AnotherNodesViewIsNotTaken) {
  auto other = view_at(1000);
  other.for_node = "n2";
  std::vector<Result<std::string>> answers{signed_text(other)};
  int reads = 0;
  ViewSourceSpec spec = *parse_view_source("tcp:ctl1", dir + "/view.pub", "n1");
  auto source = ClusterViewSource::open(spec, [&](const ViewSourceSpec&) {
    ++reads;
    return answers.front();
  });
  ASSERT_TRUE(source);
  auto view = source->fresh_view(1001, Tick{seconds(100)});
  ASSERT_FALSE(view);
  EXPECT_NE(view.error().message.find("cluster view tcp:ctl1:6828: the view of node n2, not of n1"), std::string::npos)
      << view.error().message;
  other.for_node = "n1";
  answers = {signed_text(other)};
  EXPECT_TRUE(source->fresh_view(1001, Tick{seconds(200)}));
}

TEST_F(ClusterViewTrust, NoPublisherListeningIsAnErrorNotAWait) {
  int port = 0;
  {
    auto server = ViewServer::listen(0);
    ASSERT_TRUE(server);
    port = (*server)->port();
  }
  const auto start = std::chrono::steady_clock::now();
  auto fetched = fetch_view("127.0.0.1", port, "n1", 1 << 20, std::chrono::milliseconds(2000));
  ASSERT_FALSE(fetched);
  EXPECT_EQ(fetched.error().code, ErrorCode::unavailable);
  EXPECT_NE(fetched.error().message.find("cluster view from 127.0.0.1:"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(3));
}

TEST_F(ClusterViewTrust, ASignedFreshViewIsUsedAndReadAtMostOnceASecond) {
  std::vector<Result<std::string>> answers = {signed_text(view_at(1000))};
  int reads = 0;
  auto source = source_of(answers, reads);
  const Tick t0{};
  auto view = source.fresh_view(1003, t0);
  ASSERT_TRUE(view) << view.error().message;
  EXPECT_EQ((*view)->nodes.size(), 1u);
  ASSERT_TRUE(source.fresh_view(1003, t0 + std::chrono::milliseconds(900)));
  EXPECT_EQ(reads, 1);
  ASSERT_TRUE(source.fresh_view(1004, t0 + seconds(1)));
  EXPECT_EQ(reads, 2);
  const auto status = source.status(1004);
  EXPECT_TRUE(status.usable);
  EXPECT_EQ(status.age_s, 4);
  EXPECT_EQ(status.source, "tcp:ctl1:6828");
}

TEST_F(ClusterViewTrust, AnUnsignedAlteredOrForeignViewIsNotTaken) {
  std::string altered = signed_text(view_at(1000));
  altered[altered.find("1g.10gb:2")] = '7';
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {contract::render_cluster_view(view_at(1000)), "not signed"},
           {altered, "signature does not verify"},
           {signed_text(view_at(1000), "other.key"), "signature does not verify"}}) {
    std::vector<Result<std::string>> answers = {text};
    int reads = 0;
    auto source = source_of(answers, reads);
    auto view = source.fresh_view(1001, Tick{});
    ASSERT_FALSE(view) << why;
    EXPECT_NE(view.error().message.find(why), std::string::npos) << view.error().message;
    EXPECT_FALSE(source.status(1001).usable);
  }
}

TEST_F(ClusterViewTrust, ALostReadKeepsTheLastViewUntilItIsStale) {
  std::vector<Result<std::string>> answers = {signed_text(view_at(1000)),
                                              fail(ErrorCode::unavailable, "connection refused")};
  int reads = 0;
  auto source = source_of(answers, reads);
  ASSERT_TRUE(source.fresh_view(1001, Tick{}));
  auto kept = source.fresh_view(1010, Tick{} + seconds(9));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ((*kept)->taken_at, 1000);
  auto stale = source.fresh_view(1016, Tick{} + seconds(15));
  ASSERT_FALSE(stale);
  EXPECT_NE(stale.error().message.find("stale: taken 16 s ago, 15 s at most (cluster view tcp:ctl1:6828: "
                                       "connection refused)"),
            std::string::npos)
      << stale.error().message;
  EXPECT_FALSE(source.status(1016).usable);
}

TEST_F(ClusterViewTrust, AnOlderViewNeverReplacesANewerOne) {
  std::vector<Result<std::string>> answers = {signed_text(view_at(1005)), signed_text(view_at(1000))};
  int reads = 0;
  auto source = source_of(answers, reads);
  ASSERT_TRUE(source.fresh_view(1006, Tick{}));
  auto view = source.fresh_view(1008, Tick{} + seconds(2));
  ASSERT_TRUE(view);
  EXPECT_EQ((*view)->taken_at, 1005);
  EXPECT_EQ(reads, 2);
}

// Per-node polling is never what a node gets by leaving the setting out (issue: controller load).
TEST(ClusterViewSetting, UnsetMeansTheControllersServiceWithTheInstalledKey) {
  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    auto env = view_environment(unset, unset);
    EXPECT_EQ(env.value, "service");
    EXPECT_EQ(env.public_key, "/etc/slurm-vgpu/cluster-view.pub");
    EXPECT_TRUE(env.defaulted);
  }
  auto asked = view_environment("slurmctld", "/k.pub");
  EXPECT_EQ(asked.value, "slurmctld");
  EXPECT_EQ(asked.public_key, "/k.pub");
  EXPECT_FALSE(asked.defaulted);
  EXPECT_EQ(view_environment("tcp:ctl1", nullptr).value, "tcp:ctl1");
}

TEST(ClusterViewSetting, EachFormIsReadAndANetworkViewNeedsAKey) {
  // The default ("service") is view_environment's alone: an empty value reaching here is refused,
  // not read as a second default.
  EXPECT_NE(parse_view_source("", "").error().message.find("VGPU_CLUSTER_VIEW=: not \"service\""), std::string::npos);
  EXPECT_EQ(parse_view_source("slurmctld", "")->kind, ViewSourceSpec::Kind::slurmctld);
  auto file = parse_view_source("/shared/vgpu/view", "");
  ASSERT_TRUE(file);
  EXPECT_EQ(file->name(), "/shared/vgpu/view");
  auto tcp = parse_view_source("tcp:ctl1:7000", "/etc/slurm-vgpu/cluster-view.pub");
  ASSERT_TRUE(tcp);
  EXPECT_EQ(tcp->name(), "tcp:ctl1:7000");
  auto keyless = parse_view_source("tcp:ctl1", "");
  ASSERT_FALSE(keyless);
  EXPECT_NE(keyless.error().message.find("VGPU_CLUSTER_VIEW=tcp:ctl1: a view over the network needs "
                                         "VGPU_CLUSTER_VIEW_KEY"),
            std::string::npos);
  EXPECT_NE(parse_view_source("tcp:ctl1:99999", "k").error().message.find("port \"99999\""), std::string::npos);
  EXPECT_NE(parse_view_source("shared/view", "").error().message.find("an absolute path"), std::string::npos);
}

TEST(DirectQueryBudget, OneQuestionAMinute) {
  DirectQueryBudget budget;
  const Tick t0{};
  EXPECT_TRUE(budget.take(t0));
  EXPECT_FALSE(budget.take(t0 + seconds(59)));
  EXPECT_TRUE(budget.take(t0 + seconds(60)));
  EXPECT_EQ(budget.taken(), 2u);
}

// The real client over a view file and a stand-in for Slurm's commands that counts its calls.
class ClusterViewClient : public ClusterViewTrust {
 protected:
  void SetUp() override {
    ClusterViewTrust::SetUp();
    fs::create_directories(dir + "/bin");
    for (const char* tool : {"squeue", "scontrol"}) {
      const std::string path = dir + "/bin/" + tool;
      std::ofstream(path) << "#!/bin/sh\necho \"$0 $*\" >> " << dir << "/calls\n"
                          << (std::string(tool) == "scontrol"
                                  ? "echo 'NodeName=n1 Gres=vgpu:1g.10gb:1 GresUsed=vgpu:1g.10gb:0 State=IDLE'\n"
                                  : "");
      ::chmod(path.c_str(), 0755);
    }
    ::setenv("VGPU_SLURM_BIN", (dir + "/bin").c_str(), 1);
    ::setenv("VGPU_CLUSTER_VIEW", (dir + "/view").c_str(), 1);
    ::setenv("VGPU_CLUSTER_VIEW_KEY", (dir + "/view.pub").c_str(), 1);
    ::setenv("VGPU_NODENAME", "n1", 1);
  }
  void TearDown() override {
    for (const char* v : {"VGPU_SLURM_BIN", "VGPU_CLUSTER_VIEW", "VGPU_CLUSTER_VIEW_KEY", "VGPU_NODENAME"})
      ::unsetenv(v);
    ClusterViewTrust::TearDown();
  }
  void publish(std::int64_t taken_at) {
    std::ofstream(dir + "/view") << signed_text(view_at(taken_at));
    ::chmod((dir + "/view").c_str(), 0666);  // as NFS root squash may leave it: the signature decides
  }
  int calls() const {
    std::ifstream in(dir + "/calls");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  static std::int64_t now() { return static_cast<std::int64_t>(std::time(nullptr)); }
};

// Slurm's time text for `t` in UTC, as squeue prints it for the planner (TZ=UTC).
std::string utc_time(std::int64_t t) {
  const auto tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  return text;
}

TEST_F(ClusterViewClient, AWholeViewFromAFileIsCutForThisNodeAsThePublisherWould) {
  auto whole = view_at(now());
  for (int i = 2; i <= 9; ++i)
    whole.nodes.emplace(fmt::format("n{}", i),
                        fmt::format("NodeName=n{} Gres=vgpu:free:14 State=IDLE Partitions=infer", i));
  whole.pending.clear();
  for (int job = 100; job < 140; ++job)
    whole.pending.push_back(
        fmt::format("{}|infer|9|{}|Resources|gres/vgpu:1g.10gb:1|1|amy|60|(null)", job, utc_time(whole.taken_at)));
  std::ofstream(dir + "/view") << signed_text(whole);
  auto slurm = make_command_slurm_client();
  auto pending = slurm->pending_jobs();
  ASSERT_TRUE(pending) << pending.error().message;
  const auto mine = ClusterViewCuts(whole).cut("n1").pending.size();
  EXPECT_EQ(pending->jobs.size(), mine);
  EXPECT_LT(mine, 40u);  // four preparers of nine nodes: about 18 of the 40 new jobs
  EXPECT_GT(mine, 0u);
  auto jobs = slurm->jobs_on_node("n3");  // another node's jobs are not in this node's share
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_TRUE(jobs->jobs.empty());
}

TEST_F(ClusterViewClient, AFreshViewAnswersEveryQuestionWithoutAskingSlurmctld) {
  publish(now());
  auto slurm = make_command_slurm_client();
  auto pending = slurm->pending_jobs();
  ASSERT_TRUE(pending) << pending.error().message;
  ASSERT_EQ(pending->jobs.size(), 1u);
  EXPECT_EQ(pending->jobs[0].vgpu, (std::vector<GresRequest>{{"1g.10gb", 2}}));
  auto gres = slurm->node_gres("n1");
  ASSERT_TRUE(gres) << gres.error().message;
  EXPECT_EQ(gres->configured.at("1g.10gb"), 2);
  EXPECT_TRUE(gres->published_at);
  auto jobs = slurm->jobs_on_node("n1");
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ(jobs->jobs, (std::set<JobId>{41}));
  EXPECT_TRUE(jobs->published_at);
  EXPECT_EQ(calls(), 0);
  // A shrink's confirmation still asks slurmctld itself.
  auto now_gres = slurm->node_gres_now("n1");
  ASSERT_TRUE(now_gres) << now_gres.error().message;
  EXPECT_EQ(now_gres->configured.at("1g.10gb"), 1);
  EXPECT_FALSE(now_gres->published_at);
  EXPECT_EQ(calls(), 1);
  const auto status = slurm->cluster_view_status();
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->usable);
  EXPECT_EQ(status->direct_queries, 0u);
}

TEST_F(ClusterViewClient, AStaleViewAsksSlurmctldOnceAMinuteAndOtherwiseKeepsThePlan) {
  publish(now() - 60);
  auto slurm = make_command_slurm_client();
  auto first = slurm->node_gres("n1");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(first->published_at);  // asked directly
  EXPECT_EQ(calls(), 1);
  auto second = slurm->node_gres("n1");
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("node n1: cluster view " + dir + "/view: stale"), std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find("slurmctld was asked directly less than 60 s ago"), std::string::npos);
  EXPECT_EQ(calls(), 1);
  const auto status = slurm->cluster_view_status();
  ASSERT_TRUE(status);
  EXPECT_FALSE(status->usable);
  EXPECT_EQ(status->direct_queries, 1u);
}

}  // namespace
}  // namespace vgpu::agent
