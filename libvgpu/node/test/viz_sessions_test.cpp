// Viz sessions owned by jobs: the prolog starts and records the VM, the epilog stops it, the
// planner reaps what an ended job left behind, and the advertisement offers each pool.
#include <gtest/gtest.h>

#include <filesystem>

#include "node_doubles.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPolicy = R"({
  "version": 1,
  "images": {"tiny": {"kernel": "/img/vmlinuz", "initrd": "/img/initrd.gz"}},
  "partitions": {
    "gpu": {"profiles": ["1g.10gb", "3g.40gb"], "nodes": ["n1"], "scrub": "optional"},
    "viz": {"profiles": ["1g.10gb"], "nodes": ["n1"], "scrub": "optional",
            "viz_pools": [{"name": "viz-small", "attach": "none", "image": "tiny", "memory_mib": 256,
                           "vcpus": 1, "max_sessions": 3}]}
  }
})";

// vgpu-viz as the node agent sees it: sessions by job, with scripted failures.
class FakeViz final : public VizLauncher {
 public:
  Result<VizStarted> start(const VizStartRequest& r) override {
    starts.push_back(r);
    if (fail_start) return fail(ErrorCode::unavailable, "injected: libvirt unreachable");
    live.insert(r.job);
    return VizStarted{fmt::format("vgpu-viz-{}", r.job), "none"};
  }
  Result<void> stop(JobId job) override {
    ++stops;
    if (fail_stop) return fail(ErrorCode::unavailable, "injected: vgpu-viz not found");
    live.erase(job);
    return {};
  }
  Result<std::set<JobId>> sessions() override { return live; }
  Result<std::set<JobId>> reap(const std::set<JobId>& keep) override {
    std::set<JobId> removed;
    for (JobId j : live)
      if (!keep.contains(j)) removed.insert(j);
    for (JobId j : removed) live.erase(j);
    ++reaps;
    return removed;
  }
  std::vector<VizStartRequest> starts;
  std::set<JobId> live;
  int stops = 0, reaps = 0;
  bool fail_start = false, fail_stop = false;
};

class VizSessions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / fmt::format("vgpu-viz-node-test-{}-{}", ::getpid(), counter++);
    fs::remove_all(dir);
    fs::create_directories(dir / "n1" / "jobs");
    auto p = parse_policy(kPolicy, "test-policy.json");
    ASSERT_TRUE(p) << p.error().message;
    policy = std::move(*p);
    store = std::make_unique<LedgerStore>((dir / "n1").string());
    slurm = std::make_unique<testing::FakeSlurm>((dir / "n1" / "advertisement.json").string());
    testing::wire_test_node(ctx, dir.string(), policy, *store, backend, *slurm, scrubber, publisher);
    ctx.viz = &viz;
    ctx.now = [this] { return clock; };
    ctx.log = [this](const std::string& s) { logs += s + "\n"; };
  }
  void TearDown() override { fs::remove_all(dir); }

  std::vector<VizVm> vms() {  // no ledger yet: no VM either
    auto l = store->load();
    return l ? l->vms : std::vector<VizVm>{};
  }
  Result<PrologResult> prolog(JobId job, const std::string& partition, const std::string& alloc) {
    return run_prolog(ctx, {job, "alice", partition, alloc, std::nullopt});
  }

  static inline int counter = 0;
  fs::path dir;
  PolicyFile policy;
  std::unique_ptr<LedgerStore> store;
  testing::MemoryBackend backend{*Catalog::builtin().find_model("H100-80GB"), 1};
  std::unique_ptr<testing::FakeSlurm> slurm;
  testing::ScriptedScrubber scrubber;
  FakeViz viz;
  testing::CountingPublisher publisher;
  NodeContext ctx;
  PlannerState planner;
  std::string logs;
  std::int64_t clock = 1'800'000'000;
};

TEST_F(VizSessions, PrologStartsTheJobsVmForItsUserAndRecordsItRunning) {
  auto r = prolog(7, "viz", "viz-small:1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->rejected) << r->reason;
  ASSERT_EQ(viz.starts.size(), 1u);
  EXPECT_EQ(viz.starts[0].pool, "viz-small");
  EXPECT_EQ(viz.starts[0].user, "alice");
  ASSERT_EQ(vms().size(), 1u);
  EXPECT_EQ(vms()[0].job, 7u);
  EXPECT_EQ(vms()[0].domain, "vgpu-viz-7");
  EXPECT_EQ(vms()[0].state, VmState::running);
  // A job record with no instances: the job's steps see no GPU.
  auto records = read_job_records(ctx);
  ASSERT_TRUE(records.contains(7));
  EXPECT_TRUE(records[7].empty());
  EXPECT_TRUE(backend.instances().empty());
}

TEST_F(VizSessions, PoolNotOfferedByThePartitionCancelsTheJobAndStartsNothing) {
  auto r = prolog(8, "gpu", "viz-small:1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->rejected);
  EXPECT_NE(r->reason.find("viz pool viz-small is not offered by partition gpu"), std::string::npos) << r->reason;
  EXPECT_TRUE(viz.starts.empty());
  EXPECT_TRUE(vms().empty());
  ASSERT_EQ(slurm->rejected.size(), 1u);
  EXPECT_EQ(slurm->rejected[0].first, 8u);
}

TEST_F(VizSessions, MoreThanOneSessionPerJobIsRefused) {
  auto r = prolog(9, "viz", "viz-small:2");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->rejected);
  EXPECT_NE(r->reason.find("one session per node, asked for 2"), std::string::npos) << r->reason;
  EXPECT_TRUE(viz.starts.empty());
}

TEST_F(VizSessions, NodeWithoutVizSupportRefusesInsteadOfRunningTheJobWithoutItsVm) {
  ctx.viz = nullptr;
  auto r = prolog(10, "viz", "viz-small:1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->rejected);
  EXPECT_NE(r->reason.find("node n1 runs no viz sessions"), std::string::npos) << r->reason;
}

TEST_F(VizSessions, FailedStartCancelsTheJobCleansUpAndLeavesNoRecord) {
  viz.fail_start = true;
  auto r = prolog(11, "viz", "viz-small:1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->rejected);
  EXPECT_NE(r->reason.find("libvirt unreachable"), std::string::npos) << r->reason;
  EXPECT_EQ(viz.stops, 1);  // whatever the failed start left is removed
  EXPECT_TRUE(vms().empty());
}

TEST_F(VizSessions, MigInstancesAndAVmInOneJob) {
  auto r = prolog(12, "viz", "1g.10gb:1,viz-small:1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->rejected) << r->reason;
  EXPECT_EQ(r->instances.size(), 1u);
  EXPECT_EQ(vms().size(), 1u);
  auto e = run_epilog(ctx, 12, "completed");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->kept + e->destroyed, 1);
  EXPECT_TRUE(vms().empty());
  EXPECT_TRUE(viz.live.empty());
}

TEST_F(VizSessions, EpilogStopsTheVmAndDropsItsRecord) {
  ASSERT_TRUE(prolog(13, "viz", "viz-small:1"));
  auto e = run_epilog(ctx, 13, "completed");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_TRUE(e->problems.empty());
  EXPECT_TRUE(viz.live.empty());
  EXPECT_TRUE(vms().empty());
  EXPECT_FALSE(read_job_records(ctx).contains(13));
}

TEST_F(VizSessions, EpilogThatCannotStopTheVmLeavesItStoppingAndThePlannerStopsItOnceTheJobIsGone) {
  ASSERT_TRUE(prolog(14, "viz", "viz-small:1"));
  viz.fail_stop = true;
  auto e = run_epilog(ctx, 14, "cancelled");
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ(e->problems.size(), 1u);
  EXPECT_NE(e->problems[0].find("viz VM of job 14"), std::string::npos);
  ASSERT_EQ(vms().size(), 1u);
  EXPECT_EQ(vms()[0].state, VmState::stopping);
  EXPECT_TRUE(viz.live.contains(14));

  viz.fail_stop = false;
  slurm->running = {};  // Slurm no longer runs job 14 here
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_TRUE(viz.live.contains(14)) << "one missing answer is not enough";
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_TRUE(viz.live.empty());
  EXPECT_TRUE(vms().empty());
  EXPECT_NE(logs.find("job 14 is no longer running here"), std::string::npos) << logs;
}

TEST_F(VizSessions, PlannerKeepsVmsOfRunningJobsAndReapsSessionsTheLedgerNeverSaw) {
  ASSERT_TRUE(prolog(15, "viz", "viz-small:1"));
  viz.live.insert(99);  // a session whose prolog died before its ledger record
  slurm->running = {15};
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(viz.reaps, 1);
  EXPECT_EQ(viz.live, (std::set<JobId>{15}));
  ASSERT_EQ(vms().size(), 1u);
  EXPECT_EQ(vms()[0].job, 15u);
  EXPECT_NE(logs.find("viz VM of ended job 99 removed"), std::string::npos) << logs;
}

TEST_F(VizSessions, PlannerAsksSlurmForTheNodesJobsOnlyWhenThereAreSessions) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(slurm->node_job_queries, 0);
  ASSERT_TRUE(prolog(16, "viz", "viz-small:1"));
  slurm->running = {16};
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(slurm->node_job_queries, 1);
  EXPECT_EQ(viz.reaps, 0);
}

// The backstop for an epilog that never ran (or died before releasing): instances of a job
// Slurm no longer runs here go back, those of a running job are never touched.
TEST_F(VizSessions, PlannerReleasesInstancesOfJobsSlurmNoLongerRunsAndNeverThoseOfRunningJobs) {
  ASSERT_TRUE(prolog(20, "gpu", "1g.10gb:1"));
  ASSERT_TRUE(prolog(21, "gpu", "3g.40gb:1"));
  ASSERT_EQ(backend.instances().size(), 2u);
  slurm->running = {21};                         // job 20's epilog never ran
  ASSERT_TRUE(run_planner_round(ctx, planner));  // first miss
  EXPECT_EQ(slurm->node_job_queries, 1);
  ASSERT_TRUE(run_planner_round(ctx, planner));  // too soon to ask again: no query, no release
  EXPECT_EQ(slurm->node_job_queries, 1);
  EXPECT_EQ(backend.instances().size(), 2u);
  clock += planner.ended_job_check_s;
  ASSERT_TRUE(run_planner_round(ctx, planner));  // second miss: released
  ASSERT_EQ(backend.instances().size(), 1u);
  EXPECT_EQ(backend.instances()[0].profile, "3g.40gb");
  auto l = store->load();
  ASSERT_TRUE(l);
  for (const auto& i : l->instances) EXPECT_EQ(i.job, std::optional<JobId>(21));
  EXPECT_NE(logs.find("job 20 is no longer running here"), std::string::npos) << logs;
  EXPECT_FALSE(read_job_records(ctx).contains(20));
  EXPECT_TRUE(read_job_records(ctx).contains(21));
}

TEST_F(VizSessions, AJobBackInSlurmsAnswerLosesItsMissMark) {
  ASSERT_TRUE(prolog(22, "gpu", "1g.10gb:1"));
  slurm->running = {};
  ASSERT_TRUE(run_planner_round(ctx, planner));  // missed once (e.g. slurmctld answered mid-restart)
  slurm->running = {22};
  clock += planner.ended_job_check_s;
  ASSERT_TRUE(run_planner_round(ctx, planner));  // seen again: mark cleared
  slurm->running = {};
  clock += planner.ended_job_check_s;
  ASSERT_TRUE(run_planner_round(ctx, planner));  // missed once more: still only once in a row
  EXPECT_EQ(backend.instances().size(), 1u);
}

TEST_F(VizSessions, AdvertisementOffersEachPoolAtItsSessionLimitAndVerifyAgrees) {
  auto round = run_planner_round(ctx, planner);
  ASSERT_TRUE(round) << round.error().message;
  auto ad = read_advertised_counts(ctx);
  ASSERT_TRUE(ad);
  EXPECT_EQ(ad->at("viz-small"), 3);
  ASSERT_TRUE(prolog(17, "viz", "viz-small:1"));
  slurm->running = {17};
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems) << problems.error().message;
  EXPECT_TRUE(problems->empty()) << problems->front();
  viz.live.insert(18);  // a session the ledger does not know
  problems = verify_node(ctx);
  ASSERT_TRUE(problems);
  ASSERT_EQ(problems->size(), 1u);
  EXPECT_NE(problems->front().find("viz: ledger records VMs of 1 job(s), vgpu-viz has 2 session(s)"),
            std::string::npos);
}

TEST_F(VizSessions, NodeWithoutVizAdvertisesNoPool) {
  ctx.viz = nullptr;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto ad = read_advertised_counts(ctx);
  ASSERT_TRUE(ad);
  EXPECT_FALSE(ad->contains("viz-small"));
}

}  // namespace
}  // namespace vgpu
