#include "vgpu/node/wide_booking.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <limits>

#include "vgpu/core/wide_reservation.h"
#include "vgpu/policy/policy_hostlist.h"

namespace vgpu {

bool usable_state(std::string_view state) {
  for (std::string_view bad : {"DOWN", "DRAIN", "FAIL", "MAINT", "RESERVED", "NOT_RESPONDING", "POWER", "REBOOT",
                               "FUTURE", "UNKNOWN", "INVAL", "PLANNED"})
    if (state.find(bad) != std::string_view::npos) return false;
  return true;
}

namespace {

std::string utc_text(std::int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

// When every job on `node` has ended by its time limit; nullopt when one has no limit.
std::optional<std::int64_t> node_free_at(const std::string& node, const std::vector<RunningJobEnd>& running,
                                         const std::vector<NodeList>& lists, std::int64_t now) {
  std::int64_t at = now;
  for (std::size_t i = 0; i < running.size(); ++i) {
    if (!lists[i].contains(node)) continue;
    if (!running[i].end) return std::nullopt;
    at = std::max(at, *running[i].end);
  }
  return at;
}

// A pending job plan_wide_bookings may book for: waiting for resources past the limit, one job
// (not an array), not in a reservation of its own, and needing several nodes or whole GPUs.
bool starving_wide(const PendingJob& j, const Catalog& catalog, std::int64_t now, std::int64_t reserve_after_s) {
  if (j.vgpu.empty() || j.array_tasks != 1 || !waits_for_resources(j)) return false;
  if (now - j.submit_time <= reserve_after_s || !j.reservation.empty()) return false;
  return j.nodes >= 2 || gpus_per_node(j, catalog) >= 2;
}

}  // namespace

bool has_starving_wide_job(const PendingJobs& pending, const Catalog& catalog, std::int64_t now,
                           std::int64_t reserve_after_s) {
  return std::ranges::any_of(pending.jobs,
                             [&](const PendingJob& j) { return starving_wide(j, catalog, now, reserve_after_s); });
}

int gpus_per_node(const PendingJob& job, const Catalog& catalog) {
  int fewest = std::numeric_limits<int>::max();
  for (const auto& model : catalog.models()) {
    int slices = 0;
    bool all_known = true;
    for (const auto& r : job.vgpu) {
      const Profile* p = model.find_profile(r.type);
      if (!p) {
        all_known = false;
        break;
      }
      slices += r.count * p->compute_slices;
    }
    if (all_known && model.compute_slices > 0)
      fewest = std::min(fewest, (slices + model.compute_slices - 1) / model.compute_slices);
  }
  if (fewest != std::numeric_limits<int>::max()) return fewest;
  int unknown = 0;
  for (const auto& r : job.vgpu) unknown += r.count > 0 ? 1 : 0;
  return std::max(1, unknown);
}

WideBookingPlan plan_wide_bookings(const PendingJobs& pending, const SlurmNodeStates& nodes,
                                   const std::vector<RunningJobEnd>& running,
                                   const std::vector<BookedReservation>& booked, const Catalog& catalog,
                                   std::int64_t now, std::int64_t reserve_after_s) {
  WideBookingPlan plan;
  // Ours whose job neither waits nor runs go: a cancelled job's would hold its nodes for nothing.
  // So does a running job's, once the job is taken out of it (Slurm refuses to delete a
  // reservation a job uses): it got its job started, here or (FLEX) elsewhere, and its whole nodes
  // would otherwise stay closed to others until the job ends. A suspended or completing job's
  // stays and purges itself after the job.
  std::vector<const BookedReservation*> kept;
  for (const auto& b : booked) {
    bool waits = std::ranges::any_of(pending.jobs, [&](const PendingJob& j) { return j.id == b.job; });
    auto run = std::ranges::find_if(running, [&](const RunningJobEnd& r) { return r.job == b.job; });
    if (!waits && run != running.end() && run->state == "R") {
      plan.release.push_back(b);
    } else if (waits || run != running.end()) {
      kept.push_back(&b);
    } else {
      plan.remove.push_back(b.name);
    }
  }

  std::vector<NodeList> lists;
  for (const auto& r : running) lists.emplace_back(r.nodes);
  std::vector<NodeList> kept_lists;
  for (const auto* b : kept) kept_lists.emplace_back(b->nodes);
  auto in_ours = [&](const std::string& node) {
    return std::ranges::any_of(kept_lists, [&](const NodeList& l) { return l.contains(node); });
  };

  // Slurm's order: priority, then age.
  std::vector<const PendingJob*> jobs;
  for (const auto& j : pending.jobs) jobs.push_back(&j);
  std::ranges::stable_sort(jobs, [](const PendingJob* a, const PendingJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return a->submit_time < b->submit_time;
  });
  std::vector<std::string> taken;  // nodes given to a request earlier in this period
  for (const auto* j : jobs) {
    // Not wide (each node's planner drains for it alone), not yet starving, or in a reservation
    // (ours, or the user's own: Slurm's business).
    if (!starving_wide(*j, catalog, now, reserve_after_s)) continue;
    if (std::ranges::any_of(kept, [&](const BookedReservation* b) { return b->job == j->id; })) continue;
    const int gpus = gpus_per_node(*j, catalog);

    std::vector<ReservationCandidate> candidates;
    std::vector<std::int64_t> free_at;
    for (const auto& n : nodes.nodes) {
      bool in_partition = std::ranges::any_of(j->partitions, [&](const std::string& p) {
        return std::ranges::find(n.partitions, p) != n.partitions.end();
      });
      if (!in_partition || !usable_state(n.state) || in_ours(n.name) || std::ranges::find(taken, n.name) != taken.end())
        continue;
      auto at = node_free_at(n.name, running, lists, now);
      if (!at) continue;
      // The node's GPU count is not in Slurm's view; the node's planner says if it cannot host.
      candidates.push_back({n.name, 0, static_cast<int>(std::min<std::int64_t>(*at - now, 1'000'000'000))});
      free_at.push_back(*at);
    }
    std::vector<WideRequest> request = {{j->id, j->nodes, gpus}};
    auto chosen = choose_wide_reservations(request, candidates, {});
    if (chosen.empty()) {
      plan.notes.push_back(
          fmt::format("job {} ({} node(s) x {} GPU(s)) starving: only {} node(s) of its partitions "
                      "are up with time-limited jobs and not reserved",
                      j->id, j->nodes, gpus, candidates.size()));
      continue;
    }
    WideBooking b;
    b.name = std::string(kWideReservationPrefix) + j->id;
    b.job = j->id;
    b.user = j->user;
    b.nodes = chosen.front().nodes;
    b.start = now;
    for (const auto& name : b.nodes) {
      auto i = std::ranges::find(candidates, name, &ReservationCandidate::node) - candidates.begin();
      b.start = std::max(b.start, free_at[static_cast<std::size_t>(i)]);
      taken.push_back(name);
    }
    plan.create.push_back(std::move(b));
  }
  return plan;
}

std::vector<std::string> create_reservation_args(const WideBooking& b) {
  std::string nodes;
  for (const auto& n : b.nodes) nodes += (nodes.empty() ? "" : ",") + n;
  // No end: see the header. A reservation that ended before its job started would leave the job
  // held; one that ended while it ran would have it killed.
  return {"create",
          "reservation",
          "ReservationName=" + b.name,
          "StartTime=" + utc_text(b.start),
          "Duration=UNLIMITED",
          "Nodes=" + nodes,
          "Users=" + b.user,
          "Flags=FLEX,PURGE_COMP"};
}

std::vector<std::string> bind_job_args(const WideBooking& b) {
  return {"update", "JobId=" + b.job, "ReservationName=" + b.name};
}

std::vector<std::string> unbind_job_args(const BookedReservation& b) {
  return {"update", "JobId=" + b.job, "ReservationName="};
}

void BookingRetries::keep_booked(const std::vector<BookedReservation>& booked) {
  std::erase_if(unreleasable_, [&](const std::string& name) {
    return std::ranges::none_of(booked, [&](const BookedReservation& b) { return b.name == name; });
  });
}

bool BookingRetries::may_try(const std::string& job, std::int64_t now) const {
  auto it = entries_.find(job);
  return it == entries_.end() || now >= it->second.next_try;
}

std::int64_t BookingRetries::refused(const std::string& job, std::int64_t now) {
  auto& e = entries_[job];
  std::int64_t wait = kFirstRetryS;
  for (int n = 0; n < e.refusals && wait < kMaxRetryS; ++n) wait *= 2;
  wait = std::min(wait, kMaxRetryS);
  ++e.refusals;
  e.next_try = now + wait;
  return wait;
}

void BookingRetries::keep_only(const PendingJobs& pending) {
  std::erase_if(entries_, [&](const auto& entry) {
    return std::ranges::none_of(pending.jobs, [&](const PendingJob& j) { return j.id == entry.first; });
  });
}

}  // namespace vgpu
