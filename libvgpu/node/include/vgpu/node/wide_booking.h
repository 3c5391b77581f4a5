// Reservations for starving wide jobs, booked in Slurm by the demand publisher
// (`vgpu-planner --publish-demand`), the one component that sees the whole cluster.
//
// A wide job (several nodes, or several whole GPUs on a node) that has waited past the limit gets
// a Slurm reservation named vgpu-wide-<job> on the nodes whose running jobs end first
// (vgpu/core/wide_reservation.h), starting when they end, and the job is bound to it. Slurm then
// does what backfill reservations do: a job may still start on those nodes if its time limit ends
// before the reservation starts, nothing runs there across it, and nothing running is touched
// (never a DRAIN). The reservation is FLEX, so the job may start earlier anywhere it fits; it has
// no end (Slurm holds a pending job whose reservation ended, and with ResvOverRun=0 kills a
// running one). It goes once the job runs, wherever that is: the publisher unbinds the running job
// (Slurm refuses to delete a reservation a job uses) and deletes it, since whole nodes held for a
// job that already started serve nobody; a job that stops waiting without running has its
// reservation deleted, and PURGE_COMP removes one five minutes after its job if the publisher is
// gone. Each node's planner plans the job's instances
// first on the nodes of its reservation, and drains nothing for it elsewhere.
//
// Pure: parsers of Slurm's text and the decision; the commands run in nodeagent/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/core/catalog.h"
#include "vgpu/node/slurm_text.h"

namespace vgpu {

// One node of `scontrol -o show node` (every node).
struct SlurmNodeState {
  std::string name;
  std::vector<std::string> partitions;
  std::string state;  // "IDLE", "MIXED+DRAIN", ...
};
// Lines that fail to parse are reported in `errors` and skipped.
struct SlurmNodeStates {
  std::vector<SlurmNodeState> nodes;
  std::vector<std::string> errors;
};
SlurmNodeStates parse_scontrol_nodes(std::string_view output);
// Whether Slurm would start a new job on a node in `state` ("MIXED", "IDLE+DRAIN", ...): not one
// that is down, draining, reserved, powered off or otherwise spoken for.
bool usable_state(std::string_view state);

// The squeue format of the running-job listing parse_running_job_ends() reads.
inline constexpr std::string_view kSqueueRunningFormat = "%i|%N|%e|%t";

// One line of `squeue -h -t R,CG,S -o kSqueueRunningFormat`: a job, where it runs, when its
// time limit ends and its state.
struct RunningJobEnd {
  std::string job;
  std::string nodes;                // a Slurm hostlist
  std::optional<std::int64_t> end;  // nullopt: no limit (Unknown/NONE)
  std::string state = "R";          // squeue's compact state: R, CG or S
};
Result<std::vector<RunningJobEnd>> parse_running_job_ends(std::string_view output);

// Our reservations among `scontrol -o show reservation` (others are left out): name and job.
struct BookedReservation {
  std::string name;  // vgpu-wide-<job>
  std::string job;
  std::string nodes;  // hostlist, for the notes
};
Result<std::vector<BookedReservation>> parse_booked_reservations(std::string_view output);

// A reservation to create, and the job to bind to it.
struct WideBooking {
  std::string name;
  std::string job;
  std::string user;
  std::vector<std::string> nodes;
  std::int64_t start = 0;  // Unix seconds
};

struct WideBookingPlan {
  std::vector<WideBooking> create;
  std::vector<std::string> remove;         // reservation names whose job neither waits nor runs
  std::vector<BookedReservation> release;  // ours whose job runs: unbind the job, then delete
  std::vector<std::string> notes;          // why a starving wide job got no reservation
};

// GPUs a job needs on each node: its vgpu requests' compute slices over one GPU's, on the model
// that needs fewest; a request the catalog does not know (a class, a viz pool) counts as one GPU.
int gpus_per_node(const PendingJob& job, const Catalog& catalog);

// Whether some pending job is a starving wide one at `now` (what plan_wide_bookings books for,
// before looking at nodes): lets the publisher skip reading the cluster when nothing could book.
bool has_starving_wide_job(const PendingJobs& pending, const Catalog& catalog, std::int64_t now,
                           std::int64_t reserve_after_s);

// The decision for one publisher period at `now`. A pending vgpu job is wide when it needs
// several nodes or several GPUs on a node, and starving once it waited longer than
// `reserve_after_s`. Reservations already booked stay as they are while their job waits (moving
// one would undo the draining it bought); a node holds one of ours at most; candidates are nodes
// of the job's partitions that are up and not drained, whose running jobs all have time limits.
WideBookingPlan plan_wide_bookings(const PendingJobs& pending, const SlurmNodeStates& nodes,
                                   const std::vector<RunningJobEnd>& running,
                                   const std::vector<BookedReservation>& booked, const Catalog& catalog,
                                   std::int64_t now, std::int64_t reserve_after_s);

// When a create or bind Slurm refused (the nodes overlap an admin's reservation, a user Slurm does
// not know, ...) is tried again: 30 s after the first refusal, then twice as long each time, at
// most every 10 minutes, instead of every publisher period (each try costs slurmctld RPCs and the
// log a line). A job forgotten once it no longer waits starts over.
class BookingRetries {
 public:
  static constexpr std::int64_t kFirstRetryS = 30;
  static constexpr std::int64_t kMaxRetryS = 600;
  [[nodiscard]] bool may_try(const std::string& job, std::int64_t now) const;
  // Records a refusal at `now`; returns the seconds until the next try.
  std::int64_t refused(const std::string& job, std::int64_t now);
  void booked(const std::string& job) { entries_.erase(job); }
  // Forgets every job not in `pending`.
  void keep_only(const PendingJobs& pending);

  // A running job's reservation Slurm would not let go (the unbind was refused) is not asked for
  // again while it stays booked: it goes after its job, as any booked reservation does.
  [[nodiscard]] bool may_release(const std::string& reservation) const { return !unreleasable_.contains(reservation); }
  void release_refused(const std::string& reservation) { unreleasable_.insert(reservation); }
  // Forgets every reservation not in `booked`.
  void keep_booked(const std::vector<BookedReservation>& booked);

 private:
  struct Entry {
    int refusals = 0;
    std::int64_t next_try = 0;
  };
  std::map<std::string, Entry> entries_;
  std::set<std::string> unreleasable_;
};

// `scontrol update JobId=<job> ReservationName=`: takes a running job out of its reservation (so
// that it can be deleted; the job runs on).
std::vector<std::string> unbind_job_args(const BookedReservation& reservation);

// The two commands that book one: `scontrol create reservation ...` and
// `scontrol update JobId=... ReservationName=...` (argv without the scontrol path).
std::vector<std::string> create_reservation_args(const WideBooking& booking);
std::vector<std::string> bind_job_args(const WideBooking& booking);

}  // namespace vgpu
