#include <gtest/gtest.h>

#include <algorithm>

#include "sample_ledger.h"
#include "vgpu/ledger/ledger.h"

namespace vgpu {
namespace {

using testing::sample_hardware;
using testing::sample_ledger;

int claimed_by(const Ledger& l, JobId job) {
  return static_cast<int>(std::ranges::count(l.plan.slots, std::optional<JobId>(job), &PlanSlot::claimed_by_job));
}

TEST(LedgerOps, SampleLedgerIsValid) { EXPECT_TRUE(validate(sample_ledger())); }

TEST(LedgerOps, InstancesOfJobFindsOnlyThatJobsInstances) {
  Ledger l = sample_ledger();
  auto mine = instances_of_job(l, 42);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0]->profile, "3g.40gb");
  EXPECT_TRUE(instances_of_job(l, 43).empty());  // 43 only has a claimed slot, no instance yet
}

TEST(LedgerOps, ClaimMarksFreeSlotsOfTheProfile) {
  Ledger l = sample_ledger();
  ASSERT_TRUE(claim_slots(l, 50, "1g.10gb", 1));
  EXPECT_EQ(claimed_by(l, 50), 1);
  EXPECT_EQ(l.plan.slots[1].claimed_by_job, 50u);
  EXPECT_EQ(claimed_by(l, 43), 1);  // someone else's claim untouched
}

TEST(LedgerOps, ClaimIsIdempotentForARetriedProlog) {
  Ledger l = sample_ledger();
  ASSERT_TRUE(claim_slots(l, 43, "1g.10gb", 1));  // 43 already holds one
  EXPECT_EQ(claimed_by(l, 43), 1);
  EXPECT_FALSE(l.plan.slots[1].claimed_by_job);
  ASSERT_TRUE(claim_slots(l, 43, "1g.10gb", 2));  // tops up to two
  EXPECT_EQ(claimed_by(l, 43), 2);
}

TEST(LedgerOps, ClaimBeyondThePlanFailsAndChangesNothing) {
  Ledger l = sample_ledger();
  auto before = l;
  auto r = claim_slots(l, 50, "1g.10gb", 2);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::no_capacity);
  EXPECT_NE(r.error().message.find("job 50: wants 2 x 1g.10gb, plan generation 7 has 1 unclaimed"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(l, before);
  EXPECT_FALSE(claim_slots(l, 50, "7g.80gb", 1));
  EXPECT_FALSE(claim_slots(l, 50, "1g.10gb", 0));
  EXPECT_EQ(l, before);
}

TEST(LedgerOps, ReleaseClaimsFreesOnlyThatJobsSlots) {
  Ledger l = sample_ledger();
  ASSERT_TRUE(claim_slots(l, 50, "1g.10gb", 1));
  EXPECT_EQ(release_claims(l, 43), 1);
  EXPECT_EQ(claimed_by(l, 43), 0);
  EXPECT_EQ(claimed_by(l, 50), 1);
  EXPECT_EQ(release_claims(l, 43), 0);
}

LedgerInstance instance_for_43() {
  return {0,
          "1g.10gb",
          {5, 1},
          11,
          0,
          "MIG-0a0a0a0a-0000-0000-0000-00000000000b",
          43u,
          "bob",
          InstanceState::creating,
          1'700'000'500,
          false};
}

TEST(LedgerOps, AddInstanceConsumesTheJobsClaimedSlot) {
  Ledger l = sample_ledger();
  ASSERT_TRUE(add_instance(l, instance_for_43()));
  EXPECT_EQ(l.instances.size(), 4u);
  EXPECT_EQ(l.plan.slots.size(), 1u);
  EXPECT_EQ(claimed_by(l, 43), 0);
  EXPECT_TRUE(validate(l));
}

TEST(LedgerOps, AddInstanceOverAnotherJobsSlotIsRefused) {
  Ledger l = sample_ledger();
  auto before = l;
  auto inst = instance_for_43();
  inst.job = 44;  // slot {5,1} belongs to job 43
  auto r = add_instance(l, inst);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::conflict);
  EXPECT_NE(r.error().message.find("overlap"), std::string::npos) << r.error().message;
  EXPECT_EQ(l, before);
}

TEST(LedgerOps, AddInstanceWithDuplicateUuidIsRefused) {
  Ledger l = sample_ledger();
  auto inst = instance_for_43();
  inst.mig_uuid = l.instances[0].mig_uuid;
  auto r = add_instance(l, inst);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("duplicate instance"), std::string::npos) << r.error().message;
}

TEST(LedgerOps, RemoveInstanceForgetsItAndFreesItsSlices) {
  Ledger l = sample_ledger();
  ASSERT_TRUE(remove_instance(l, 0, 13));
  EXPECT_EQ(l.instances.size(), 2u);
  auto again = remove_instance(l, 0, 13);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::not_found);
  // the freed slice {4,1} can be planned again
  l.plan.slots.push_back({0, "1g.10gb", {4, 1}, std::nullopt});
  EXPECT_TRUE(validate(l));
}

TEST(LedgerOps, NamesJobWhereverTheJobHoldsSomethingAndNowhereOnceRetired) {
  Ledger l = sample_ledger();
  EXPECT_TRUE(names_job(l, 42));   // owns an instance
  EXPECT_FALSE(names_job(l, 77));  // a job this node never served
  ASSERT_TRUE(claim_slots(l, 77, "1g.10gb", 1));
  EXPECT_TRUE(names_job(l, 77));  // a claimed slot, no instance yet
  l.share_groups.push_back({0, {4, 1}, "1g.10gb", {{78, "bob", 1'700'000'000}}});
  EXPECT_TRUE(names_job(l, 78));  // a share
  l.vms.push_back({79, "vgpu-viz-79", "MIG-x", VmState::running});
  EXPECT_TRUE(names_job(l, 79));  // a viz VM
  EXPECT_EQ(retire_job(l, 42, 1'700'009'000, "completed"), 1);
  EXPECT_EQ(retire_job(l, 77, 1'700'009'000, "completed"), 0);
  EXPECT_TRUE(names_job(l, 42));  // its viz VM (the sample's) is still recorded until it stops
  std::erase_if(l.vms, [](const VizVm& vm) { return vm.job == 42; });
  EXPECT_FALSE(names_job(l, 42));
  EXPECT_FALSE(names_job(l, 77));
}

TEST(LedgerOps, RetireJobRecordsHistoryAndSendsInstancesToScrub) {
  Ledger l = sample_ledger();
  ASSERT_TRUE(claim_slots(l, 42, "1g.10gb", 1));
  EXPECT_EQ(retire_job(l, 42, 1'700'009'000, "completed"), 1);
  ASSERT_EQ(l.new_history.size(), 1u);
  const auto& h = l.new_history[0];
  EXPECT_EQ(h.job, 42u);
  EXPECT_EQ(h.user, "alice");
  EXPECT_EQ(h.gpu, 0);
  EXPECT_EQ(h.profile, "3g.40gb");
  EXPECT_EQ(h.placement, (Placement{0, 4}));
  EXPECT_EQ(h.mig_uuid, "MIG-0a0a0a0a-0000-0000-0000-000000000001");
  EXPECT_EQ(h.start_time, 1'700'000'000);
  EXPECT_EQ(h.end_time, 1'700'009'000);
  EXPECT_EQ(h.end_reason, "completed");
  EXPECT_FALSE(l.instances[0].job);
  EXPECT_TRUE(l.instances[0].user.empty());
  EXPECT_EQ(l.instances[0].state, InstanceState::scrubbing);
  EXPECT_EQ(claimed_by(l, 42), 0);
  EXPECT_TRUE(validate(l));
  EXPECT_EQ(retire_job(l, 42, 1'700'009'001, "completed"), 0);  // a retried epilog adds nothing
  EXPECT_EQ(l.new_history.size(), 1u);
}

// A job's end must not change Slurm's count (slurmctld frees the allocation at once and may
// start the next job of that profile there before any shrink could reach it).
TEST(LedgerOps, RetiredInstancesPlaceStaysInThePlanAsABackedSlot) {
  Ledger l = sample_ledger();
  const auto slots_before = l.plan.slots.size();
  ASSERT_EQ(retire_job(l, 42, 1'700'009'000, "completed"), 1);
  ASSERT_EQ(l.plan.slots.size(), slots_before + 1);
  EXPECT_EQ(l.plan.slots.back(), (PlanSlot{0, "3g.40gb", {0, 4}, std::nullopt}));
  auto backing = slot_backings(l);
  ASSERT_EQ(backing.size(), l.plan.slots.size());
  EXPECT_EQ(backing.back(), 0u) << "backed by the instance it replaces";
  EXPECT_TRUE(validate(l)) << "the slot and its released instance are one space";
  Ledger twice = l;
  twice.plan.slots.push_back(twice.plan.slots.back());
  EXPECT_FALSE(validate(twice)) << "one instance backs one slot; a second is a real overlap";
  ASSERT_TRUE(remove_instance(l, 0, 2));
  EXPECT_FALSE(slot_backings(l).back()) << "destroyed: the slot holds the space alone";
  EXPECT_TRUE(validate(l));
}

TEST(LedgerOps, OnlyAReleasedInstanceBacksASlot) {
  Ledger l = sample_ledger();
  l.plan.slots.push_back({0, "3g.40gb", {0, 4}, std::nullopt});  // over job 42's running instance
  EXPECT_FALSE(slot_backings(l).back());
  EXPECT_FALSE(validate(l));
  Ledger q = sample_ledger();
  q.plan.slots.push_back({1, "7g.40gb", {0, 8}, std::nullopt});  // over a quarantined one
  EXPECT_FALSE(slot_backings(q).back());
  EXPECT_FALSE(validate(q));
}

// Claiming a backed slot makes the prolog wait for a scrub; a free slot does not.
TEST(LedgerOps, ClaimTakesASlotWithNothingToWaitForFirst) {
  Ledger l = sample_ledger();
  l.plan.slots.insert(l.plan.slots.begin(), PlanSlot{0, "1g.10gb", {4, 1}, std::nullopt});  // over the scrubbing one
  ASSERT_TRUE(validate(l));
  ASSERT_TRUE(claim_slots(l, 50, "1g.10gb", 1));
  EXPECT_FALSE(l.plan.slots[0].claimed_by_job) << "the backed slot is the last resort";
  EXPECT_EQ(l.plan.slots[2].claimed_by_job, 50u);
  ASSERT_TRUE(claim_slots(l, 50, "1g.10gb", 2));
  EXPECT_EQ(l.plan.slots[0].claimed_by_job, 50u);
}

// An idle instance (scrubbed, kept for the next job) backs its slot like a released one, is the
// first choice of a claim (nothing to create), and goes to the job that claimed its slot.
TEST(LedgerOps, IdleInstanceBacksItsSlotAndGoesToTheJobThatClaimsIt) {
  Ledger l = sample_ledger();
  l.instances[1].state = InstanceState::idle;  // the 1g.10gb at slice 4
  l.plan.slots.push_back({0, "1g.10gb", {4, 1}, std::nullopt});
  ASSERT_TRUE(validate(l)) << "the slot and its idle instance are one space";
  EXPECT_EQ(slot_backings(l).back(), 1u);
  ASSERT_TRUE(claim_slots(l, 50, "1g.10gb", 1));
  EXPECT_EQ(l.plan.slots.back().claimed_by_job, 50u) << "the idle one first: nothing to create";
  EXPECT_FALSE(l.plan.slots[1].claimed_by_job);
  ASSERT_TRUE(adopt_idle_instance(l, 0, 13, 50, "bob", 1'700'009'000));
  EXPECT_EQ(l.instances[1].job, 50u);
  EXPECT_EQ(l.instances[1].user, "bob");
  EXPECT_EQ(l.instances[1].state, InstanceState::ready);
  EXPECT_EQ(l.instances[1].created_at, 1'700'009'000);
  EXPECT_EQ(l.plan.slots.size(), 2u) << "the slot became the job's instance";
  EXPECT_TRUE(validate(l));
}

TEST(LedgerOps, AdoptingRefusesAnInstanceThatIsNotIdleOrWhoseSlotIsNotTheJobs) {
  Ledger l = sample_ledger();
  l.plan.slots.push_back({0, "1g.10gb", {4, 1}, std::nullopt});  // backed by the scrubbing one
  auto scrubbing = adopt_idle_instance(l, 0, 13, 50, "bob", 1);
  ASSERT_FALSE(scrubbing);
  EXPECT_NE(scrubbing.error().message.find("it is scrubbing, not idle"), std::string::npos)
      << scrubbing.error().message;
  l.instances[1].state = InstanceState::idle;
  const Ledger before = l;
  auto unclaimed = adopt_idle_instance(l, 0, 13, 50, "bob", 1);
  ASSERT_FALSE(unclaimed);
  EXPECT_NE(unclaimed.error().message.find("its slot is not claimed by the job"), std::string::npos)
      << unclaimed.error().message;
  l.plan.slots.back().claimed_by_job = 51;
  auto others = adopt_idle_instance(l, 0, 13, 50, "bob", 1);
  ASSERT_FALSE(others);
  EXPECT_NE(others.error().message.find("claimed by job 51"), std::string::npos) << others.error().message;
  l.plan.slots.pop_back();
  auto slotless = adopt_idle_instance(l, 0, 13, 50, "bob", 1);
  ASSERT_FALSE(slotless);
  EXPECT_NE(slotless.error().message.find("it backs no plan slot"), std::string::npos) << slotless.error().message;
  Ledger owned = before;
  owned.instances[1].job = 7;
  owned.instances[1].user = "x";
  auto bad = validate(owned);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("instances[1].state: idle but the instance has an owning job (7)"),
            std::string::npos)
      << bad.error().message;
}

TEST(LedgerOps, QuarantiningAReleasedInstanceTakesItsSlotAway) {
  Ledger l = sample_ledger();
  ASSERT_EQ(retire_job(l, 42, 1'700'009'000, "completed"), 1);
  const auto slots = l.plan.slots.size();
  ASSERT_TRUE(quarantine_instance(l, 0, 2));
  EXPECT_EQ(l.instances[0].state, InstanceState::quarantined);
  EXPECT_EQ(l.plan.slots.size(), slots - 1);
  EXPECT_TRUE(std::ranges::none_of(l.plan.slots, [](const PlanSlot& s) { return s.profile == "3g.40gb"; }));
  EXPECT_TRUE(validate(l));
  auto unknown = quarantine_instance(l, 0, 99);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::not_found);
}

TEST(LedgerOps, RebuildFromHardwareMarksEveryInstanceOrphanedAndQuarantined) {
  HardwareView view = sample_hardware();
  view.gpus[0].model = "NVIDIA H100 80GB HBM3";  // NVML's product name maps to the catalog
  auto r = rebuild_from_hardware("gpu-node-1", view, 1'800'000'000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->gpus, sample_ledger().gpus);
  ASSERT_EQ(r->instances.size(), 3u);
  for (const auto& inst : r->instances) {
    EXPECT_TRUE(inst.orphaned);
    EXPECT_FALSE(inst.job);
    EXPECT_EQ(inst.state, InstanceState::quarantined);
    EXPECT_EQ(inst.created_at, 1'800'000'000);
  }
  EXPECT_TRUE(r->plan.slots.empty());
  EXPECT_TRUE(reconcile(*r, view).empty());
}

TEST(LedgerOps, RebuildRefusesAnImpossibleHardwareView) {
  HardwareView view = sample_hardware();
  view.instances[1].placement = {2, 1};  // overlaps the 3g.40gb at {0,4}
  auto r = rebuild_from_hardware("gpu-node-1", view, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("rebuild: the hardware view: instances[1].placement"), std::string::npos)
      << r.error().message;
  view = sample_hardware();
  view.gpus[1].model = "Tesla V100";
  EXPECT_EQ(rebuild_from_hardware("n", view, 1).error().code, ErrorCode::not_found);
}

TEST(LedgerOps, ReconcileAgreesWithMatchingHardware) {
  EXPECT_TRUE(reconcile(sample_ledger(), sample_hardware()).empty());
}

TEST(LedgerOps, ReconcileReportsLeakedMissingAndMismatchedInstances) {
  HardwareView view = sample_hardware();
  view.instances.erase(view.instances.begin() + 1);                         // ledger GI 13 is gone
  view.instances[0].mig_uuid = "MIG-ffffffff-0000-0000-0000-000000000000";  // GI 2 differs
  view.instances.push_back({0, "1g.10gb", {6, 1}, 14, 0, "MIG-leak"});      // unknown GI 14
  auto diffs = reconcile(sample_ledger(), view);
  ASSERT_EQ(diffs.size(), 3u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::mismatched_instance);
  EXPECT_EQ(diffs[0].gpu_instance_id, 2);
  EXPECT_NE(diffs[0].detail.find("MIG-0a0a0a0a-0000-0000-0000-000000000001"), std::string::npos);
  EXPECT_NE(diffs[0].detail.find("MIG-ffffffff"), std::string::npos);
  EXPECT_EQ(diffs[1].kind, DifferenceKind::missing_instance);
  EXPECT_EQ(diffs[1].gpu_instance_id, 13);
  EXPECT_EQ(diffs[2].kind, DifferenceKind::leaked_instance);
  EXPECT_EQ(diffs[2].gpu_instance_id, 14);
}

TEST(LedgerOps, ReconcileReportsGpuChanges) {
  HardwareView view = sample_hardware();
  view.gpus[0].uuid = "GPU-replaced";
  view.gpus.erase(view.gpus.begin() + 1);
  view.instances.pop_back();  // the A100's instance went with it
  view.gpus.push_back({2, "GPU-new", "H100-80GB", "0000:00:08.0"});
  auto diffs = reconcile(sample_ledger(), view);
  ASSERT_EQ(diffs.size(), 4u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::gpu_mismatch);
  EXPECT_EQ(diffs[1].kind, DifferenceKind::missing_gpu);
  EXPECT_EQ(diffs[2].kind, DifferenceKind::unknown_gpu);
  EXPECT_EQ(diffs[3].kind, DifferenceKind::missing_instance);
  EXPECT_EQ(diffs[3].gpu, 1);
}

}  // namespace
}  // namespace vgpu
