// A GPU with MIG mode off served whole (whole.<M>gb) over doubles: the planner offers it to a
// partition that allows the whole profile, the prolog hands the job the GPU itself without a
// driver call, only the job's user can open it until the epilog takes it back and scrubs it, and
// a node that cannot confine it offers none.
#include <gtest/gtest.h>

#include "node_doubles.h"
#include "node_flows_fixture.h"
#include "vgpu/backend/whole_gpus.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

using testing::NodeFlows;

constexpr const char* kGpu1 = "GPU-00000001-0000-4000-8000-000000000000";  // MemoryBackend's

constexpr const char* kWholePolicy = R"({
  "version": 1,
  "planner": {"period_s": 5, "starvation_s": 120, "prepare_slots": true},
  "partitions": {
    "gpu": {
      "profiles": ["1g.10gb", "2g.20gb", "3g.40gb", "whole.80gb"],
      "max_instances_per_job": 4,
      "nodes": ["n1"],
      "idle_layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"],
      "scrub": "optional"
    }
  }
})";

// An access that cannot keep a whole GPU to one user, as a node whose driver recreates
// /dev/nvidia<minor> with its default mode (ModifyDeviceFiles 1).
class UnconfinableAccess final : public InstanceAccess {
 public:
  Result<void> grant(const LedgerInstance& i, unsigned uid) override { return inner.grant(i, uid); }
  Result<void> grant_users(const LedgerInstance& i, const std::vector<std::string>& u) override {
    return inner.grant_users(i, u);
  }
  Result<void> revoke(const LedgerInstance& i) override { return inner.revoke(i); }
  Result<int> secure_unheld(const Ledger& l) override { return inner.secure_unheld(l); }
  std::string whole_gpus_unconfinable() override { return "the driver resets /dev/nvidia1 (ModifyDeviceFiles: 1)"; }
  testing::RecordingAccess inner;
};

class WholeGpuFlows : public NodeFlows {
 protected:
  void SetUp() override {
    NodeFlows::SetUp();
    auto p = parse_policy(kWholePolicy, "whole-policy.json");
    ASSERT_TRUE(p) << p.error().message;
    policy = std::move(*p);
    backend.mig_off = {1};
    ctx.backend = &whole;
    ctx.access = &access;
  }
  bool has_note(const PlannerRoundResult& r, std::string_view note) {
    return std::ranges::find(r.notes, note) != r.notes.end();
  }
  WholeGpuBackend whole{backend, Catalog::builtin()};
  testing::RecordingAccess access;
};

TEST_F(WholeGpuFlows, AGpuWithMigOffIsOfferedWholeBesideTheMigGpu) {
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(advertised(),
            (std::map<std::string, int>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}, {"whole.80gb", 1}}));
  EXPECT_TRUE(has_note(*r,
                       "GPU 1 (H100-80GB): MIG mode disabled (pending disabled): planned whole, as whole.80gb, "
                       "where a partition offers it"))
      << fmt::format("{}", fmt::join(r->notes, "\n"));
  EXPECT_TRUE(std::ranges::all_of(backend.instances(), [](const InstanceInfo& i) { return i.gpu == 0; }))
      << "the whole GPU is never created through the driver";
}

TEST_F(WholeGpuFlows, TheJobGetsTheGpuItselfOnlyForItsUserUntilTheEpilogScrubsIt) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  const int creates = backend.creates;
  auto pro = run_prolog(ctx, {50, "alice", "gpu", "whole.80gb:1", 1001});
  ASSERT_TRUE(pro && !pro->rejected) << (pro ? pro->reason : pro.error().message);
  ASSERT_EQ(pro->instances.size(), 1U);
  const auto& inst = pro->instances.front();
  EXPECT_EQ(inst.gpu, 1);
  EXPECT_EQ(inst.mig_uuid, kGpu1);
  EXPECT_EQ(access.owner.at(kGpu1), 1001U);
  EXPECT_EQ(backend.creates, creates);

  auto epi = run_epilog(ctx, 50, "completed");
  ASSERT_TRUE(epi) << epi.error().message;
  EXPECT_EQ(access.owner.at(kGpu1), 0U);
  EXPECT_NE(std::ranges::find(scrubber.scrubbed, kGpu1), scrubber.scrubbed.end());
  EXPECT_EQ(backend.destroys, 0);
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems) << problems.error().message;
  EXPECT_TRUE(problems->empty()) << problems->front();
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(advertised()["whole.80gb"], 1) << "the scrubbed GPU is offered again";
}

TEST_F(WholeGpuFlows, TheWholeGpuIsNotOfferedOnceMigIsOnAgain) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_EQ(advertised()["whole.80gb"], 1);
  backend.mig_off.clear();  // an admin turned MIG on
  for (int round = 0; round < 4 && advertised().contains("whole.80gb"); ++round)
    ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_FALSE(advertised().contains("whole.80gb"));
  EXPECT_EQ(advertised()["3g.40gb"], 2);
}

TEST_F(WholeGpuFlows, ANodeThatCannotConfineAWholeGpuOffersNone) {
  UnconfinableAccess unconfinable;
  ctx.access = &unconfinable;
  auto r = run_planner_round(ctx, planner);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(advertised().contains("whole.80gb"));
  EXPECT_TRUE(has_note(*r, "no whole GPU is offered: the driver resets /dev/nvidia1 (ModifyDeviceFiles: 1)"))
      << fmt::format("{}", fmt::join(r->notes, "\n"));
}

// "mig_mode": "whole": an idle GPU in MIG mode is switched off and served whole; one whose job
// still runs keeps its instance until the job ends, takes no new MIG slot meanwhile, and leaves MIG
// mode once its last instance is gone. Slurm is never offered what is not there.
TEST_F(WholeGpuFlows, AWholePolicyTakesAGpuOutOfMigModeOnceItsLastJobEnds) {
  ASSERT_TRUE(run_planner_round(ctx, planner));
  auto pro = run_prolog(ctx, {60, "alice", "gpu", "3g.40gb:1", 1001});
  ASSERT_TRUE(pro && !pro->rejected) << (pro ? pro->reason : pro.error().message);
  ASSERT_EQ(pro->instances.front().gpu, 0);
  policy.partitions[0].mig_mode = MigModePolicy::whole;
  for (int round = 0; round < 4; ++round) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_FALSE(backend.mig_off.contains(0)) << "the job's instance keeps GPU 0 in MIG mode";
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"3g.40gb", 1}, {"whole.80gb", 1}}))
      << "nothing new is offered on a GPU leaving MIG mode";

  ASSERT_TRUE(run_epilog(ctx, 60, "completed"));
  for (int round = 0; round < 6 && advertised()["whole.80gb"] < 2; ++round) {
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r) << r.error().message;
  }
  EXPECT_TRUE(backend.mig_off.contains(0));
  EXPECT_TRUE(backend.instances().empty());
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"whole.80gb", 2}}));
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems) << problems.error().message;
  EXPECT_TRUE(problems->empty()) << problems->front();
}

TEST_F(WholeGpuFlows, AGpuThePolicyWantsPartitionedIsNotServedWholeMeanwhile) {
  policy.partitions[0].mig_mode = MigModePolicy::partitioned;
  backend.busy = {1};  // the switch stays pending while a process holds the GPU
  ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_FALSE(advertised().contains("whole.80gb")) << "a whole slot would keep GPU 1 from ever emptying";
  backend.busy.clear();
  for (int round = 0; round < 3 && advertised()["3g.40gb"] < 2; ++round) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_FALSE(backend.mig_off.contains(1));
  EXPECT_EQ(advertised()["3g.40gb"], 2);
}

// "mig_mode": "on_demand": a pending whole-GPU job takes an empty GPU out of MIG mode, its job
// gets it; once it is free and a pending 7g.80gb finds no empty MIG GPU, it goes back into MIG mode.
TEST_F(WholeGpuFlows, OnDemandSwitchesAGpuEachWayForWhatIsPending) {
  backend.mig_off.clear();
  policy.partitions[0].mig_mode = MigModePolicy::on_demand;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_FALSE(advertised().contains("whole.80gb"));
  auto busy = run_prolog(ctx, {70, "bob", "gpu", "1g.10gb:1", 1002});
  ASSERT_TRUE(busy && !busy->rejected) << (busy ? busy->reason : busy.error().message);
  const int busy_gpu = busy->instances.front().gpu, free_gpu = 1 - busy_gpu;

  slurm->squeue = "71|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:whole.80gb:1\n";
  bool said = false;
  for (int round = 0; round < 6 && advertised()["whole.80gb"] < 1; ++round) {
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r) << r.error().message;
    said = said || has_note(*r, fmt::format("GPU {}: MIG mode off, as pending demand asks (mig_mode on_demand): "
                                            "activated",
                                            free_gpu));
  }
  EXPECT_TRUE(said);
  EXPECT_EQ(backend.mig_off, (std::set<int>{free_gpu})) << "the GPU that runs bob's job stays in MIG mode";
  EXPECT_EQ(advertised()["whole.80gb"], 1);
  slurm->squeue.clear();
  auto trained = run_prolog(ctx, {71, "alice", "gpu", "whole.80gb:1", 1001});
  ASSERT_TRUE(trained && !trained->rejected) << (trained ? trained->reason : trained.error().message);
  EXPECT_EQ(trained->instances.front().gpu, free_gpu);
  ASSERT_TRUE(run_epilog(ctx, 71, "completed"));
  for (int round = 0; round < 3; ++round) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_EQ(backend.mig_off, (std::set<int>{free_gpu})) << "nothing pending: the GPU stays whole";

  slurm->squeue = "72|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:3g.40gb:2\n";
  for (int round = 0; round < 6 && advertised()["3g.40gb"] < 2; ++round) ASSERT_TRUE(run_planner_round(ctx, planner));
  EXPECT_TRUE(backend.mig_off.empty()) << "two 3g.40gb do not fit beside bob's 1g.10gb";
  EXPECT_GE(advertised()["3g.40gb"], 2);
  EXPECT_FALSE(advertised().contains("whole.80gb"));
  auto problems = verify_node(ctx);
  ASSERT_TRUE(problems) << problems.error().message;
  EXPECT_TRUE(problems->empty()) << problems->front();
}

// Four whole GPUs in two NVLink-bridged pairs (as four H200 NVL): a job for two gets a bridged
// pair, never one GPU of each, even when a single-GPU job already broke the first pair.
TEST_F(WholeGpuFlows, AJobForTwoWholeGpusGetsABridgedPair) {
  testing::MemoryBackend four{*Catalog::builtin().find_model("H100-80GB"), 4};
  four.mig_off = {0, 1, 2, 3};
  four.links = GpuLinks{4, {{0, 1}, {2, 3}}, {}};
  WholeGpuBackend four_whole{four, Catalog::builtin()};
  ctx.backend = &four_whole;
  ASSERT_TRUE(run_planner_round(ctx, planner));
  ASSERT_EQ(advertised()["whole.80gb"], 4);
  auto one = run_prolog(ctx, {80, "alice", "gpu", "whole.80gb:1", 1001});
  ASSERT_TRUE(one && !one->rejected) << (one ? one->reason : one.error().message);
  ASSERT_EQ(one->instances.front().gpu, 0);
  auto two = run_prolog(ctx, {81, "alice", "gpu", "whole.80gb:2", 1001});
  ASSERT_TRUE(two && !two->rejected) << (two ? two->reason : two.error().message);
  std::vector<int> got;
  for (const auto& i : two->instances) got.push_back(i.gpu);
  std::ranges::sort(got);
  EXPECT_EQ(got, (std::vector<int>{2, 3})) << "GPU 1 is free too, but reaches 2 and 3 only through the host";
}

}  // namespace
}  // namespace vgpu
