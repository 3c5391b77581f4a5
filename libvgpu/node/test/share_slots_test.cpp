// Share types in the planner and the advertisement: Slurm counts every share of a slot or instance
// as one unit, demand for shares asks only for the instances the free shares do not cover, and a
// slot a share group stands on keeps its place as a claimed slot does (docs/shared-instances.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "node_doubles.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/planner.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPolicy = R"({
  "version": 1,
  "planner": {"period_s": 5, "starvation_s": 120},
  "share_types": {"quarter": {"instance": "3g.40gb", "shares": 4}},
  "partitions": {
    "gpu": {"profiles": ["1g.10gb", "3g.40gb", "7g.80gb"], "nodes": ["n1"], "idle_layout": ["7g.80gb"],
            "scrub": "optional"}
  }
})";

// `n` pending jobs of one share each, Slurm's order by id.
std::string pending_shares(int n, std::string_view user = "ann") {
  std::string out;
  for (int j = 0; j < n; ++j)
    out += fmt::format("{}|gpu|1000|2027-01-15T08:00:{:02}|Resources|gres:vgpu:quarter:1|1|{}|1:00:00|(null)\n",
                       200 + j, j, user);
  return out;
}

class ShareSlots : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / fmt::format("vgpu-share-slots-{}-{}", ::getpid(), counter++);
    fs::remove_all(dir);
    fs::create_directories(dir / "n1");
    auto p = parse_policy(kPolicy, "test-policy.json");
    ASSERT_TRUE(p) << p.error().message;
    policy = std::move(*p);
    // Offered here by hand: the parser refuses a partition that offers one until the hooks run them.
    policy.partitions[0].profiles.push_back("quarter");
    Catalog::install_classes(policy.site_types());
    backend = std::make_unique<testing::MemoryBackend>(*Catalog::builtin().find_model("H100-80GB"), 2);
    store = std::make_unique<LedgerStore>((dir / "n1").string());
    slurm = std::make_unique<testing::FakeSlurm>((dir / "n1" / "advertisement.json").string());
    slurm->ledger = store.get();
    ctx.node = "n1";
    ctx.state_dir = dir.string();
    ctx.policy = &policy;
    ctx.ledger = store.get();
    ctx.backend = backend.get();
    ctx.slurm = slurm.get();
    ctx.scrubber = &scrubber;
    ctx.publisher = &publisher;
    ctx.now = [this] { return clock; };
    ctx.log = [](const std::string&) {};
    ctx.confirm_timeout_ms = 2000;
    ctx.confirm_poll_ms = 1;
  }
  void TearDown() override {
    backend.reset();  // it holds a model of the installed catalog
    Catalog::install_classes({});
    fs::remove_all(dir);
  }

  std::map<std::string, int> advertised() { return *read_advertised_counts(ctx); }
  void round() {
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r) << r.error().message;
  }
  void take_share(JobId job, std::string user) {
    auto ok = store->update([&](Ledger& l) {
      return claim_shares(l, Catalog::builtin(), job, user, "quarter", 1, false, clock);
    });
    ASSERT_TRUE(ok) << ok.error().message;
  }
  int quarter_slots() {
    auto l = store->load();
    return l ? static_cast<int>(std::ranges::count_if(l->plan.slots, [](const PlanSlot& s) { return s.profile == "quarter"; }))
             : -1;
  }

  static inline int counter = 0;
  fs::path dir;
  PolicyFile policy;
  std::unique_ptr<LedgerStore> store;
  std::unique_ptr<testing::MemoryBackend> backend;
  std::unique_ptr<testing::FakeSlurm> slurm;
  testing::ScriptedScrubber scrubber;
  NodeContext ctx;
  PlannerState planner;
  testing::CountingPublisher publisher;
  std::int64_t clock = *parse_slurm_time("2027-01-15T08:01:00");
};

TEST_F(ShareSlots, FiveSharesAskForTwoInstancesAndSlurmCountsFourUnitsEach) {
  round();
  slurm->squeue = pending_shares(5);
  slurm->configured = advertised();
  round();
  EXPECT_EQ(quarter_slots(), 2) << "five shares of four: two instances, not five";
  EXPECT_EQ(advertised()["quarter"], 8);
}

TEST_F(ShareSlots, FreeSharesOfAHeldInstanceServeDemandBeforeANewOne) {
  round();
  slurm->squeue = pending_shares(5);
  slurm->configured = advertised();
  round();
  ASSERT_EQ(quarter_slots(), 2);
  take_share(100, "ann");
  // Seven more: three fit beside job 100, four fill the other slot; no third instance.
  slurm->squeue = pending_shares(7);
  round();
  EXPECT_EQ(quarter_slots(), 2);
  EXPECT_EQ(advertised()["quarter"], 8);
  // Eight more do need a third.
  slurm->squeue = pending_shares(8);
  round();
  EXPECT_EQ(quarter_slots(), 3);
  EXPECT_EQ(advertised()["quarter"], 12);
}

TEST_F(ShareSlots, ASlotAGroupStandsOnKeepsItsPlaceWhenDemandMovesElsewhere) {
  round();
  slurm->squeue = pending_shares(1);
  slurm->configured = advertised();
  round();
  ASSERT_EQ(quarter_slots(), 1);
  take_share(100, "ann");
  // Two whole GPUs wanted: everything unheld goes, the held share slot stays (its group's ledger
  // entry would not validate without it), and Slurm still counts its four shares, one of them held.
  slurm->squeue = "300|gpu|1000|2027-01-15T08:00:00|Resources|gres:vgpu:7g.80gb:2|1|bo|1:00:00|(null)\n";
  slurm->configured = advertised();
  round();
  round();
  auto l = store->load();
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(quarter_slots(), 1);
  ASSERT_NE(share_group_at(*l, 0, l->share_groups.at(0).placement), nullptr);
  EXPECT_EQ(advertised(), (std::map<std::string, int>{{"7g.80gb", 1}, {"quarter", 4}}));
  EXPECT_EQ(held_by_jobs(*l)["quarter"], 1);
}

TEST_F(ShareSlots, AGroupOnItsInstanceCountsItsSharesAsItsSlotDid) {
  round();
  slurm->squeue = pending_shares(1);
  slurm->configured = advertised();
  round();
  take_share(100, "ann");
  auto made = store->update([&](Ledger& l) -> Result<void> {
    const PlanSlot slot = *std::ranges::find_if(l.plan.slots, [](const PlanSlot& s) { return s.profile == "quarter"; });
    LedgerInstance inst{slot.gpu, "quarter", slot.placement, 1, 0, "MIG-shared", std::nullopt, "", InstanceState::ready,
                        clock, false};
    return add_instance(l, inst);
  });
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(quarter_slots(), 0) << "the slot became the instance";
  EXPECT_EQ(advertised_counts(*made)["quarter"], 4);
  round();
  EXPECT_EQ(advertised()["quarter"], 4) << "the instance's shares stay counted across a round";
}

}  // namespace
}  // namespace vgpu
