#include "vgpu/node/wide_booking.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace vgpu {
namespace {

constexpr std::int64_t kNow = 1795380601;  // 2026-11-22T20:50:01Z

PendingJobs pending(std::string_view squeue) {
  auto p = parse_pending_jobs(squeue);
  EXPECT_TRUE(p.errors.empty()) << p.errors.front();
  return p;
}

SlurmNodeStates three_nodes() {
  auto n = parse_scontrol_nodes(
      "NodeName=n1 Arch=x86_64 CoresPerSocket=2 State=MIXED ThreadsPerCore=1 OS=Linux 6.1.0 #1 SMP "
      "Partitions=gpu,debug Reason=none\n"
      "NodeName=n2 Arch=x86_64 State=IDLE Partitions=gpu\n"
      "NodeName=n3 Arch=x86_64 State=ALLOCATED Partitions=gpu\n");
  EXPECT_TRUE(n.errors.empty());
  return n;
}

// Two 7g instances: two whole H100s on one node.
constexpr std::string_view kWide =
    "42|gpu|10|2026-11-22T20:40:00|Resources|gres/vgpu:7g.80gb:2|1|alice|1:00:00|(null)\n";

TEST(WideBooking, SlurmListingsParse) {
  auto n = three_nodes();
  ASSERT_EQ(n.nodes.size(), 3u);
  EXPECT_EQ(n.nodes[0].name, "n1");
  EXPECT_EQ(n.nodes[0].state, "MIXED");
  EXPECT_EQ(n.nodes[0].partitions, (std::vector<std::string>{"gpu", "debug"}));
  EXPECT_EQ(parse_scontrol_nodes("garbage\n").errors.size(), 1u);

  auto r = parse_running_job_ends("7|n[1-2]|2026-11-22T21:00:00|R\n8|n3|Unknown|S\n");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].job, "7");
  EXPECT_EQ((*r)[0].end, kNow + 599);
  EXPECT_EQ((*r)[1].end, std::nullopt);
  EXPECT_EQ((*r)[1].state, "S");
  for (const char* short_line : {"7|n1\n", "7|n1|Unknown\n", "7|n1|Unknown|\n"}) {
    auto bad = parse_running_job_ends(short_line);
    ASSERT_FALSE(bad) << short_line;
    EXPECT_NE(bad.error().message.find("squeue line 1: expected <job>|<nodes>|<end time>|<state>"), std::string::npos);
  }

  auto b = parse_booked_reservations(
      "ReservationName=maint StartTime=2026-11-22T21:00:00 Nodes=n1 Flags=MAINT\n"
      "ReservationName=vgpu-wide-42 StartTime=2026-11-22T21:00:00 Nodes=n[2-3] NodeCnt=2 Flags=FLEX,PURGE_COMP\n");
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->size(), 1u) << "only ours";
  EXPECT_EQ((*b)[0].job, "42");
  EXPECT_EQ((*b)[0].nodes, "n[2-3]");
  ASSERT_TRUE(parse_booked_reservations("No reservations in the system\n"));
  EXPECT_TRUE(parse_booked_reservations("No reservations in the system\n")->empty());
}

TEST(WideBooking, GpusPerNodeFromTheCatalog) {
  auto p = pending(
      "1|gpu|1|2026-11-22T20:40:00|Resources|gres/vgpu:7g.80gb:2|1|a|1:00|(null)\n"
      "2|gpu|1|2026-11-22T20:40:00|Resources|gres/vgpu:1g.10gb:7|1|a|1:00|(null)\n"
      "3|gpu|1|2026-11-22T20:40:00|Resources|gres/vgpu:3g.40gb:3|1|a|1:00|(null)\n"
      "4|gpu|1|2026-11-22T20:40:00|Resources|gres/vgpu:small:1|1|a|1:00|(null)\n");
  const Catalog& c = Catalog::builtin();
  EXPECT_EQ(gpus_per_node(p.jobs[0], c), 2);
  EXPECT_EQ(gpus_per_node(p.jobs[1], c), 1) << "seven 1g instances fill one H100";
  EXPECT_EQ(gpus_per_node(p.jobs[2], c), 2) << "nine slices need two GPUs";
  EXPECT_EQ(gpus_per_node(p.jobs[3], c), 1) << "a name the catalog does not know counts as one GPU";
}

TEST(WideBooking, AStarvingWideJobBooksTheNodeFreeFirstFromWhenItsJobsEnd) {
  auto running = parse_running_job_ends("7|n1|2026-11-22T22:00:00|R\n8|n3|2026-11-22T21:00:00|R\n");
  ASSERT_TRUE(running);
  auto plan = plan_wide_bookings(pending(kWide), three_nodes(), *running, {}, Catalog::builtin(), kNow, 120);
  ASSERT_EQ(plan.create.size(), 1u);
  const WideBooking& b = plan.create[0];
  EXPECT_EQ(b.name, "vgpu-wide-42");
  EXPECT_EQ(b.nodes, (std::vector<std::string>{"n2"})) << "idle n2 is free now";
  EXPECT_EQ(b.start, kNow);
  EXPECT_EQ(create_reservation_args(b),
            (std::vector<std::string>{"create", "reservation", "ReservationName=vgpu-wide-42",
                                      "StartTime=2026-11-22T20:50:01", "Duration=UNLIMITED", "Nodes=n2", "Users=alice",
                                      "Flags=FLEX,PURGE_COMP"}));
  EXPECT_EQ(bind_job_args(b), (std::vector<std::string>{"update", "JobId=42", "ReservationName=vgpu-wide-42"}));

  // Without n2, n3 (free at 21:00) beats n1 (22:00), and the reservation starts when n3's job ends.
  auto no_n2 = three_nodes();
  no_n2.nodes[1].state = "IDLE+DRAIN";
  plan = plan_wide_bookings(pending(kWide), no_n2, *running, {}, Catalog::builtin(), kNow, 120);
  ASSERT_EQ(plan.create.size(), 1u);
  EXPECT_EQ(plan.create[0].nodes, (std::vector<std::string>{"n3"}));
  EXPECT_EQ(create_reservation_args(plan.create[0])[3], "StartTime=2026-11-22T21:00:00");
}

TEST(WideBooking, AMultiNodeJobGetsAllItsNodesAndStartsWhenTheLastIsFree) {
  auto p = pending("50|gpu|10|2026-11-22T20:40:00|Resources|gres/vgpu:1g.10gb:1|2|bob|UNLIMITED|(null)\n");
  auto running = parse_running_job_ends("7|n1|2026-11-22T22:00:00|R\n8|n3|2026-11-22T21:00:00|R\n");
  auto plan = plan_wide_bookings(p, three_nodes(), *running, {}, Catalog::builtin(), kNow, 120);
  ASSERT_EQ(plan.create.size(), 1u);
  EXPECT_EQ(plan.create[0].nodes, (std::vector<std::string>{"n2", "n3"}));
  EXPECT_EQ(create_reservation_args(plan.create[0])[3], "StartTime=2026-11-22T21:00:00");
}

TEST(WideBooking, OnlyStarvingWideVgpuJobsBook) {
  auto running = parse_running_job_ends("");
  auto p = pending(
      "1|gpu|10|2026-11-22T20:49:00|Resources|gres/vgpu:7g.80gb:2|1|a|1:00|(null)\n"        // not starving yet
      "2|gpu|10|2026-11-22T20:40:00|Resources|gres/vgpu:7g.80gb:1|1|a|1:00|(null)\n"        // one GPU: not wide
      "3|gpu|10|2026-11-22T20:40:00|JobHeldUser|gres/vgpu:7g.80gb:2|1|a|1:00|(null)\n"      // held
      "4|gpu|10|2026-11-22T20:40:00|Resources|N/A|4|a|1:00|(null)\n"                        // no vgpu
      "5_[1-3]|gpu|10|2026-11-22T20:40:00|Resources|gres/vgpu:7g.80gb:2|1|a|1:00|(null)\n"  // array
      "6|gpu|10|2026-11-22T20:40:00|Resources|gres/vgpu:7g.80gb:2|1|a|1:00|theirs\n"        // user's reservation
      "7|other|10|2026-11-22T20:40:00|Resources|gres/vgpu:7g.80gb:2|1|a|1:00|(null)\n");    // no nodes
  EXPECT_TRUE(has_starving_wide_job(p, Catalog::builtin(), kNow, 120)) << "job 7 starves";
  auto plan = plan_wide_bookings(p, three_nodes(), *running, {}, Catalog::builtin(), kNow, 120);
  EXPECT_TRUE(plan.create.empty()) << plan.create.front().name;
  p.jobs.pop_back();
  EXPECT_FALSE(has_starving_wide_job(p, Catalog::builtin(), kNow, 120))
      << "without job 7 the publisher need not read the cluster";
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("job 7 (1 node(s) x 2 GPU(s)) starving: only 0 node(s)"), std::string::npos)
      << plan.notes[0];
}

TEST(WideBooking, NodesWithUnlimitedJobsOrOurReservationsAreNotCandidates) {
  auto running = parse_running_job_ends("7|n1|Unknown|R\n9|n3|2026-11-22T21:00:00|R\n");
  auto booked = parse_booked_reservations("ReservationName=vgpu-wide-9 Nodes=n2\n");
  auto p = pending(std::string(kWide) + "9|gpu|5|2026-11-22T20:30:00|Resources|gres/vgpu:7g.80gb:2|1|a|1:00|(null)\n");
  auto plan = plan_wide_bookings(p, three_nodes(), *running, *booked, Catalog::builtin(), kNow, 120);
  ASSERT_EQ(plan.create.size(), 1u) << "job 9 already has n2";
  EXPECT_EQ(plan.create[0].job, "42");
  EXPECT_EQ(plan.create[0].nodes, (std::vector<std::string>{"n3"})) << "n1 runs a job without a time limit";
  EXPECT_TRUE(plan.remove.empty());
}

TEST(WideBooking, OursAreRemovedWhenTheirJobNeitherWaitsNorRuns) {
  auto booked = parse_booked_reservations(
      "ReservationName=vgpu-wide-42 Nodes=n2\nReservationName=vgpu-wide-43 Nodes=n1\n"
      "ReservationName=vgpu-wide-44 Nodes=n3\n");
  auto running = parse_running_job_ends("43|n1|2026-11-22T21:00:00|S\n");
  auto plan = plan_wide_bookings(pending(kWide), three_nodes(), *running, *booked, Catalog::builtin(), kNow, 120);
  EXPECT_EQ(plan.remove, (std::vector<std::string>{"vgpu-wide-44"})) << "42 waits, 43 is suspended, 44 is gone";
  EXPECT_TRUE(plan.release.empty());
  EXPECT_TRUE(plan.create.empty()) << "42 keeps the reservation it has";
}

// A FLEX reservation's job may start anywhere it fits; once it runs, here or elsewhere, whole
// nodes held for it would serve nobody until it ends. The running job is taken out of it (Slurm
// will not delete a reservation a job uses; 22.05 and later let a running job's reservation be
// cleared) and it is deleted; its nodes may then be booked for the next starving job.
TEST(WideBooking, ARunningJobsReservationIsReleasedWhereverTheJobStarted) {
  auto booked = parse_booked_reservations("ReservationName=vgpu-wide-43 Nodes=n3\n");
  // 43 started on n1, not on n3; n2 is busy longer.
  auto running = parse_running_job_ends("43|n1|2026-11-22T21:00:00|R\n44|n2|2026-11-22T23:00:00|R\n");
  auto plan = plan_wide_bookings(pending(kWide), three_nodes(), *running, *booked, Catalog::builtin(), kNow, 120);
  ASSERT_EQ(plan.release.size(), 1u);
  EXPECT_EQ(plan.release[0].name, "vgpu-wide-43");
  EXPECT_TRUE(plan.remove.empty()) << "deleted only once its job is out of it";
  EXPECT_EQ(unbind_job_args(plan.release[0]), (std::vector<std::string>{"update", "JobId=43", "ReservationName="}));
  ASSERT_EQ(plan.create.size(), 1u);
  EXPECT_EQ(plan.create[0].job, "42");
  EXPECT_NE(std::ranges::find(plan.create[0].nodes, "n3"), plan.create[0].nodes.end())
      << "n3 no longer holds one of ours, so job 42 may have it";

  BookingRetries retries;
  EXPECT_TRUE(retries.may_release("vgpu-wide-43"));
  retries.release_refused("vgpu-wide-43");
  EXPECT_FALSE(retries.may_release("vgpu-wide-43")) << "a refused release is not asked again every period";
  retries.keep_booked(*booked);
  EXPECT_FALSE(retries.may_release("vgpu-wide-43"));
  retries.keep_booked({});
  EXPECT_TRUE(retries.may_release("vgpu-wide-43")) << "forgotten once it is gone";
}

TEST(WideBooking, EarlierJobsChooseFirstAndANodeHoldsForOneJob) {
  auto p = pending(
      "60|gpu|10|2026-11-22T20:40:00|Resources|gres/vgpu:7g.80gb:2|1|a|1:00|(null)\n"
      "61|gpu|20|2026-11-22T20:41:00|Resources|gres/vgpu:7g.80gb:2|1|b|1:00|(null)\n");
  auto running = parse_running_job_ends("");
  auto plan = plan_wide_bookings(p, three_nodes(), *running, {}, Catalog::builtin(), kNow, 120);
  ASSERT_EQ(plan.create.size(), 2u);
  EXPECT_EQ(plan.create[0].job, "61") << "higher priority first, as Slurm orders them";
  EXPECT_NE(plan.create[0].nodes, plan.create[1].nodes);
}

// A refused booking is tried again after 30 s, then twice as long each time up to 10 minutes, not
// every period; a booking that works, or a job that stops waiting, starts over.
TEST(WideBooking, ARefusedBookingIsTriedAgainLaterAndLaterUpToTenMinutes) {
  BookingRetries retries;
  EXPECT_TRUE(retries.may_try("42", 1000));
  std::vector<std::int64_t> waits;
  std::int64_t now = 1000;
  for (int n = 0; n < 7; ++n) {
    const auto wait = retries.refused("42", now);
    waits.push_back(wait);
    EXPECT_FALSE(retries.may_try("42", now + wait - 1));
    now += wait;
    EXPECT_TRUE(retries.may_try("42", now));
  }
  EXPECT_EQ(waits, (std::vector<std::int64_t>{30, 60, 120, 240, 480, 600, 600}));
  EXPECT_TRUE(retries.may_try("43", now)) << "another job is not held back";
  retries.booked("42");
  EXPECT_EQ(retries.refused("42", now), 30);
  PendingJobs pending;
  PendingJob other;
  other.id = "43";
  pending.jobs.push_back(other);
  retries.keep_only(pending);
  EXPECT_TRUE(retries.may_try("42", now)) << "a job no longer waiting is forgotten";
  EXPECT_EQ(retries.refused("42", now), 30);
}

}  // namespace
}  // namespace vgpu
