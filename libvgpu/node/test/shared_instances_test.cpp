// Shared instances on a node (docs/shared-instances.md). In the planner and the advertisement:
// Slurm counts every share of a slot or instance as one unit, demand for shares asks only for the
// instances the free shares do not cover, and a slot a share group stands on keeps its place as a
// claimed slot does. In the hooks: the first share makes the instance and its MPS daemon, later
// ones of the same user join it, the last one's end quits the daemon before the scrub.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "node_doubles.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/epilog.h"
#include "vgpu/node/planner.h"
#include "vgpu/node/prolog.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPolicy = R"({
  "version": 1,
  "planner": {"period_s": 5, "starvation_s": 120},
  "share_types": {"quarter": {"instance": "3g.40gb", "shares": 4}},
  "partitions": {
    "gpu": {"profiles": ["1g.10gb", "3g.40gb", "7g.80gb", "quarter"], "nodes": ["n1"], "idle_layout": ["7g.80gb"],
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

class NodeSharedInstances : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / fmt::format("vgpu-share-slots-{}-{}", ::getpid(), counter++);
    fs::remove_all(dir);
    fs::create_directories(dir / "n1");
    auto p = parse_policy(kPolicy, "test-policy.json");
    ASSERT_TRUE(p) << p.error().message;
    policy = std::move(*p);
    Catalog::install_classes(policy.site_types());
    backend = std::make_unique<testing::MemoryBackend>(*Catalog::builtin().find_model("H100-80GB"), 2);
    store = std::make_unique<LedgerStore>((dir / "n1").string());
    slurm = std::make_unique<testing::FakeSlurm>((dir / "n1" / "advertisement.json").string());
    testing::wire_test_node(ctx, dir.string(), policy, *store, *backend, *slurm, scrubber, publisher);
    ctx.mps = &mps;
    ctx.now = [this] { return clock; };
    ctx.log = [](const std::string&) {};
    ctx.confirm_timeout_ms = 2000;
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
    auto ok = store->update(
        [&](Ledger& l) { return claim_shares(l, Catalog::builtin(), job, user, "quarter", 1, false, clock); });
    ASSERT_TRUE(ok) << ok.error().message;
  }
  // The partition lets shares of several users into one instance, whose access `access` records.
  void share_across_users(testing::RecordingAccess& access) {
    auto widened = parse_policy(
        std::string(kPolicy).replace(std::string(kPolicy).find("\"scrub\""), 0, "\"share_across_users\": true, "),
        "test-policy.json");
    ASSERT_TRUE(widened) << widened.error().message;
    policy = std::move(*widened);
    ctx.access = &access;
  }
  // A node planned for `shares` pending shares.
  void plan_for(int shares) {
    round();
    slurm->squeue = pending_shares(shares);
    slurm->configured = advertised();
    round();
  }
  PrologResult prolog(JobId job, std::string user, std::string alloc = "quarter:1",
                      std::optional<unsigned> uid = std::nullopt) {
    auto r = run_prolog(ctx, {job, std::move(user), "gpu", std::move(alloc), uid});
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : PrologResult{};
  }
  nlohmann::json job_record(JobId job) {
    std::ifstream in(dir / "n1" / "jobs" / fmt::format("{}.json", job));
    return nlohmann::json::parse(in, nullptr, false);
  }
  int quarter_slots() {
    auto l = store->load();
    return l ? static_cast<int>(
                   std::ranges::count_if(l->plan.slots, [](const PlanSlot& s) { return s.profile == "quarter"; }))
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
  testing::FakeMps mps;
  std::int64_t clock = *parse_slurm_time("2027-01-15T08:01:00");
};

TEST_F(NodeSharedInstances, FiveSharesAskForTwoInstancesAndSlurmCountsFourUnitsEach) {
  plan_for(5);
  EXPECT_EQ(quarter_slots(), 2) << "five shares of four: two instances, not five";
  EXPECT_EQ(advertised()["quarter"], 8);
}

// slurmctld keeps the last count of a type a registration leaves out, and a slurmd started while
// no share is placeable knows the share type only from the file: so the file names it at 0
// (the crash matrix's shares run found a shrink never confirmed after a slurmd restart).
TEST_F(NodeSharedInstances, TheAdvertisementNamesAShareTypeAtZeroWhenNoneIsPlaceable) {
  plan_for(1);
  EXPECT_EQ(advertised()["quarter"], 4);
  slurm->squeue = "";
  clock += 600;
  slurm->configured = advertised();
  round();
  round();
  std::ifstream in(dir / "n1" / "advertisement.json");
  auto file = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(file.is_object());
  ASSERT_TRUE(file["counts"].contains("quarter")) << file.dump();
  EXPECT_EQ(file["counts"]["quarter"], 0) << file.dump();
  EXPECT_FALSE(advertised().contains("quarter")) << "the planner's own reading leaves the zeros out";
}

TEST_F(NodeSharedInstances, FreeSharesOfAHeldInstanceServeDemandBeforeANewOne) {
  plan_for(5);
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

TEST_F(NodeSharedInstances, ASlotAGroupStandsOnKeepsItsPlaceWhenDemandMovesElsewhere) {
  plan_for(1);
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

TEST_F(NodeSharedInstances, AGroupOnItsInstanceCountsItsSharesAsItsSlotDid) {
  plan_for(1);
  take_share(100, "ann");
  auto made = store->update([&](Ledger& l) -> Result<void> {
    const PlanSlot slot = *std::ranges::find_if(l.plan.slots, [](const PlanSlot& s) { return s.profile == "quarter"; });
    LedgerInstance inst{slot.gpu,     "quarter", slot.placement,       1,     0,    "MIG-shared",
                        std::nullopt, "",        InstanceState::ready, clock, false};
    return add_instance(l, inst);
  });
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(quarter_slots(), 0) << "the slot became the instance";
  EXPECT_EQ(advertised_counts(*made)["quarter"], 4);
  round();
  EXPECT_EQ(advertised()["quarter"], 4) << "the instance's shares stay counted across a round";
}

TEST_F(NodeSharedInstances, OneUsersJobsShareAnInstanceAndTheLastEndQuitsItsDaemonBeforeTheScrub) {
  plan_for(2);
  ASSERT_EQ(quarter_slots(), 1) << "two shares of four: one instance";
  auto first = prolog(100, "ann");
  ASSERT_FALSE(first.rejected) << first.reason;
  ASSERT_EQ(first.instances.size(), 1u);
  const std::string uuid = first.instances[0].mig_uuid;
  EXPECT_EQ(backend->creates, 1);
  ASSERT_EQ(mps.daemons.count(uuid), 1u);
  EXPECT_EQ(mps.daemons[uuid], (ShareLimits{10112, 25})) << "a quarter of 3g.40gb's 40,448 MiB and of its SMs";
  auto record = job_record(100);
  EXPECT_EQ(record["mps_pipe_directory"], "/run/test-mps/" + uuid + "/pipe");
  EXPECT_EQ(record["instances"][0]["device_uuid"], uuid);
  EXPECT_EQ(record["instances"][0]["memory_mib"], 10112) << "what the job got is its share";

  auto second = prolog(101, "ann");
  ASSERT_FALSE(second.rejected) << second.reason;
  EXPECT_EQ(second.instances.at(0).mig_uuid, uuid) << "the same user's second job joins the instance";
  EXPECT_EQ(backend->creates, 1);
  EXPECT_EQ(advertised_counts(*store->load())["quarter"], 4) << "Slurm's count does not move with jobs";
  auto again = prolog(101, "ann");
  EXPECT_EQ(again.instances.at(0).mig_uuid, uuid) << "a rerun takes nothing twice";
  EXPECT_EQ(share_groups_of_job(*store->load(), 101).size(), 1u);

  ASSERT_TRUE(run_epilog(ctx, 100, "completed"));
  EXPECT_EQ(mps.daemons.count(uuid), 1u) << "job 101 still runs there";
  EXPECT_TRUE(scrubber.scrubbed.empty());
  bool closed_before_scrub = false;
  scrubber.on_scrub = [&](const std::string& scrubbed) { closed_before_scrub = !mps.daemons.contains(scrubbed); };
  auto last = run_epilog(ctx, 101, "completed");
  ASSERT_TRUE(last) << last.error().message;
  EXPECT_TRUE(mps.daemons.empty());
  ASSERT_EQ(scrubber.scrubbed, std::vector<std::string>{uuid});
  EXPECT_TRUE(closed_before_scrub) << "the daemon's server holds the device: it goes first";
  EXPECT_EQ(last->kept, 1) << "kept idle at its slot for the next share";
  auto history = store->history();
  ASSERT_TRUE(history);
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].profile, "quarter");
  EXPECT_EQ((*history)[1].job, 101u);

  // The next share takes the kept instance as it is, and opens its daemon again.
  auto next = prolog(102, "ann");
  ASSERT_FALSE(next.rejected) << next.reason;
  EXPECT_EQ(next.instances.at(0).mig_uuid, uuid);
  EXPECT_EQ(backend->creates, 1);
  EXPECT_EQ(mps.daemons.count(uuid), 1u);
  EXPECT_TRUE(validate(*store->load(), Catalog::builtin()));
}

TEST_F(NodeSharedInstances, AnotherUsersShareGetsAnotherInstanceOrGoesBackToTheQueue) {
  plan_for(2);
  ASSERT_FALSE(prolog(100, "ann").rejected);
  auto bob = prolog(200, "bob");
  EXPECT_TRUE(bob.requeued) << "one slot, ann's: " << bob.reason;
  EXPECT_NE(bob.reason.find("has room for 0 beside user bob's shares or alone"), std::string::npos) << bob.reason;
  EXPECT_TRUE(share_groups_of_job(*store->load(), 200).empty()) << "a requeued share holds nothing";
  // With a second slot planned, bob's share opens a second instance.
  slurm->squeue = pending_shares(5);
  round();
  ASSERT_EQ(quarter_slots(), 1) << "ann's instance replaced its slot; one more planned";
  auto again = prolog(201, "bob");
  ASSERT_FALSE(again.rejected || again.requeued) << again.reason;
  EXPECT_EQ(backend->creates, 2);
  EXPECT_EQ(mps.daemons.size(), 2u);
}

// With share_across_users one instance holds several users' shares, and each user's MPS server
// opens it for that user's clients: every holder's user may open it, and one whose last share
// there ends may not any more. Without it the instance is its one user's, as a whole one is.
TEST_F(NodeSharedInstances, AcrossUsersEveryHoldersUserMayOpenTheInstanceAndOneWhoLeftMayNot) {
  testing::RecordingAccess access;
  share_across_users(access);
  if (HasFatalFailure()) return;
  plan_for(2);
  ASSERT_FALSE(prolog(100, "ann", "quarter:1", 1001).rejected);
  const std::string uuid = store->load()->instances.at(0).mig_uuid;
  EXPECT_EQ(access.owner[uuid], 1001u) << "one user so far: that user's, by uid";
  auto bob = prolog(200, "bob", "quarter:1", 1002);
  ASSERT_FALSE(bob.rejected || bob.requeued) << bob.reason;
  ASSERT_EQ(backend->creates, 1) << "bob's share joined ann's instance";
  EXPECT_EQ(access.users[uuid], (std::vector<std::string>{"ann", "bob"})) << "ann's first, as she came first";
  ASSERT_FALSE(prolog(101, "ann", "quarter:1", 1001).rejected);
  EXPECT_EQ(access.users[uuid], (std::vector<std::string>{"ann", "bob"}));

  ASSERT_TRUE(run_epilog(ctx, 100, "completed"));
  EXPECT_EQ(access.users[uuid], (std::vector<std::string>{"ann", "bob"})) << "ann still holds a share there";
  ASSERT_TRUE(run_epilog(ctx, 200, "completed"));
  EXPECT_EQ(access.users[uuid], (std::vector<std::string>{"ann"})) << "bob's last share there ended";
  ASSERT_TRUE(run_epilog(ctx, 101, "completed"));
  EXPECT_EQ(access.owner[uuid], 0u) << "the last share's end takes the instance back";
}

// A user leaves a shared instance before the share is retired, not after: an epilog that dies in
// between leaves the share recorded with its user already out, and the planner's backstop (which
// runs the epilog again for a job Slurm no longer runs) retires it. The other order left the user
// able to open the instance until its last share ended.
TEST_F(NodeSharedInstances, AcrossUsersAnEpilogThatDiesAfterTakingTheInstanceBackLeavesItsUserOut) {
  testing::RecordingAccess access;
  share_across_users(access);
  if (HasFatalFailure()) return;
  plan_for(2);
  ASSERT_FALSE(prolog(100, "ann", "quarter:1", 1001).rejected);
  ASSERT_FALSE(prolog(200, "bob", "quarter:1", 1002).rejected);
  const std::string uuid = store->load()->instances.at(0).mig_uuid;
  ASSERT_EQ(access.users[uuid], (std::vector<std::string>{"ann", "bob"}));

  std::optional<Ledger> at_death;  // the ledger as bob's epilog leaves it if it dies right after the grant
  access.on_grant_users = [&](const LedgerInstance&) {
    auto now = store->load();
    ASSERT_TRUE(now) << now.error().message;
    if (!at_death) at_death = *now;
  };
  ASSERT_TRUE(run_epilog(ctx, 200, "completed"));
  ASSERT_TRUE(at_death) << "bob's epilog took the instance back from him";
  EXPECT_EQ(share_groups_of_job(*at_death, 200).size(), 1u) << "before his share was retired";
  EXPECT_EQ(access.users[uuid], (std::vector<std::string>{"ann"}));

  // The death: the retire never happened. Bob stays out while his share is still recorded.
  ASSERT_TRUE(store->update([&](Ledger& l) -> Result<void> {
    l = *at_death;
    return {};
  }));
  access.on_grant_users = nullptr;
  EXPECT_EQ(access.users[uuid], (std::vector<std::string>{"ann"}));
  // The backstop's run of the same epilog retires it, and nobody is let back in.
  ASSERT_TRUE(run_epilog(ctx, 200, "ended without epilog (released by the planner)"));
  EXPECT_TRUE(share_groups_of_job(*store->load(), 200).empty());
  EXPECT_EQ(access.users[uuid], (std::vector<std::string>{"ann"}));
  EXPECT_EQ(share_groups_of_job(*store->load(), 100).size(), 1u) << "ann's share untouched";
  EXPECT_TRUE(validate(*store->load(), Catalog::builtin()));
}

// A share type multiplies an instance into many units, so demand can outgrow a node total sized
// for whole instances; the plugin would refuse an advertisement above it whole and report
// everything free. The planner plans only the share instances whose units fit (and says which it
// left out), and cuts whatever else would pass the total from the advertisement, share units
// first, never a held one.
TEST_F(NodeSharedInstances, ShareInstancesArePlannedOnlyAsFarAsTheNodesTotalAllows) {
  slurm->total = 9;
  slurm->configured = {{"free", 9}};
  round();
  slurm->squeue = pending_shares(12);
  std::vector<std::string> notes;
  for (int i = 0; i < 2; ++i) {
    auto r = run_planner_round(ctx, planner);
    ASSERT_TRUE(r) << r.error().message;
    notes.insert(notes.end(), r->notes.begin(), r->notes.end());
  }
  EXPECT_EQ(quarter_slots(), 2) << "twelve shares would be three instances; two fit a total of 9";
  auto adv = advertised();
  int sum = 0;
  for (const auto& [type, n] : adv) sum += n;
  EXPECT_LE(sum, 9);
  EXPECT_EQ(adv["quarter"], 8);
  EXPECT_TRUE(std::ranges::any_of(notes, [](const std::string& n) {
    return n.find("1 instance(s) of quarter not planned: 4 more units would pass the node's vgpu total of 9") !=
           std::string::npos;
  })) << "the admin is told why shares pend";
  // What the advertisement cut does with the rest: share units first, units jobs hold never.
  EXPECT_EQ(cap_to_node_total({{"quarter", 12}, {"1g.10gb", 3}}, {{"quarter", 2}}, {"quarter"}, 3),
            (std::map<std::string, int>{{"quarter", 2}, {"1g.10gb", 1}}));
  EXPECT_EQ(cap_to_node_total({{"quarter", 4}, {"7g.80gb", 1}}, {}, {"quarter"}, 4),
            (std::map<std::string, int>{{"quarter", 3}, {"7g.80gb", 1}}));
  // The total is known only from a split padded with `free` (every split the plugin reports is).
  EXPECT_EQ(node_total_of(NodeGres{{{"1g.10gb", 3}, {"free", 6}, {"never", 0}}, {}, "IDLE", {}, {}, {}}), 9);
  EXPECT_EQ(node_total_of(NodeGres{{{"1g.10gb", 3}}, {}, "IDLE", {}, {}, {}}), std::nullopt);
}

TEST_F(NodeSharedInstances, AShareIsAskedAloneAndOnePerNode) {
  plan_for(2);
  auto two = prolog(100, "ann", "quarter:2");
  EXPECT_TRUE(two.rejected);
  EXPECT_NE(two.reason.find("a job holds one share per node, not 2"), std::string::npos) << two.reason;
  auto mixed = prolog(101, "ann", "quarter:1,1g.10gb:1");
  EXPECT_TRUE(mixed.rejected);
  EXPECT_NE(mixed.reason.find("a share of an instance is asked alone"), std::string::npos) << mixed.reason;
  EXPECT_EQ(backend->creates, 0);
  EXPECT_TRUE(mps.daemons.empty());
}

TEST_F(NodeSharedInstances, AReRunPrologAdoptsTheInstanceACrashedRunMadeButDidNotRecord) {
  plan_for(1);
  take_share(100, "ann");  // the crashed run's claim
  auto l = store->load();
  const ShareGroup group = l->share_groups.at(0);
  const Profile* quarter = Catalog::builtin().find_model("H100-80GB")->find_profile("quarter");
  ASSERT_TRUE(backend->create_instance(group.gpu, quarter->nvml_profile_id, group.placement));
  auto rerun = prolog(100, "ann");
  ASSERT_FALSE(rerun.rejected) << rerun.reason;
  EXPECT_EQ(backend->creates, 1) << "adopted, not made twice";
  EXPECT_EQ(backend->instances().size(), 1u);
  EXPECT_EQ(mps.daemons.size(), 1u);
}

TEST_F(NodeSharedInstances, ADaemonThatWillNotStartCancelsTheJobAndItsEpilogGivesTheShareBack) {
  plan_for(1);
  mps.open_refusal = "no daemon here";
  auto r = prolog(100, "ann");
  EXPECT_TRUE(r.rejected);
  EXPECT_NE(r.reason.find("starting its MPS control daemon: no daemon here"), std::string::npos) << r.reason;
  EXPECT_FALSE(fs::exists(dir / "n1" / "jobs" / "100.json")) << "no job record, so no step runs on it";
  ASSERT_TRUE(run_epilog(ctx, 100, "cancelled"));
  auto l = store->load();
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_TRUE(l->share_groups.empty());
  EXPECT_EQ(scrubber.scrubbed.size(), 1u) << "the instance it made is scrubbed like any other";
  EXPECT_EQ(advertised_counts(*l)["quarter"], 4) << "and its place stays in the plan";
}

TEST_F(NodeSharedInstances, ThePlannerQuitsADaemonNoShareHolds) {
  plan_for(1);
  ASSERT_FALSE(prolog(100, "ann").rejected);
  mps.daemons["MIG-left-by-a-crash"] = ShareLimits{1024, 50};
  round();
  EXPECT_FALSE(mps.daemons.contains("MIG-left-by-a-crash"));
  EXPECT_EQ(mps.daemons.size(), 1u) << "the held instance's daemon stays";
}

}  // namespace
}  // namespace vgpu
