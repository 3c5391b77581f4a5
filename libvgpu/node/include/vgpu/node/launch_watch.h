// Which of a node's jobs may have a launch on its way to slurmd right now, so that a handover by
// SIGHUP (Slurm before 23.11, split_publisher.h) waits for it.
//
// Why: slurmd 22.05 accepts no connection while it reconfigures on SIGHUP. It first waits up to
// max(5 s, MessageTimeout / 2) for its running RPCs, then re-reads its configuration (10.6 s on
// the 256-node scale host, docs/benchmarks.md). With PrologFlags=Alloc a batch launch that arrives
// before the job's REQUEST_LAUNCH_PROLOG waits at most 2 x MessageTimeout for it
// (_wait_for_request_launch_prolog, src/slurmd/slurmd/req.c), then fails as ESLURMD_PROLOG_FAILED:
// slurmctld drains the node ("Prolog error") and holds the job (launch failed requeued held). A
// SIGHUP that lands between the two RPCs can make that wait run out. The planner sees the second
// RPC arrive (the job's prolog reaches the planner's socket), so it waits, a bounded time, while
// slurmctld shows a job here whose prolog has not arrived.
#pragma once

#include <cstdint>
#include <map>
#include <set>

#include "vgpu/base/job_id.h"
#include "vgpu/ledger/ledger.h"

namespace vgpu {

class LaunchWatch {
 public:
  // A job whose hooks have not arrived for `window_s` since it was first seen has none coming: a
  // job that asks for no vgpu, one that ended before this planner started. 20 s is slurmd's own
  // wait at the default MessageTimeout of 10 s.
  explicit LaunchWatch(std::int64_t window_s = 20) : window_s_(window_s) {}

  // The job's prolog or epilog reached the planner at `now`: its launch is no longer on its way.
  void hook_arrived(JobId job, std::int64_t now);

  // Of `on_node` (the jobs slurmctld shows on this node, up to a view's age late), those whose
  // launch may be on its way: no hook of theirs arrived, the ledger names none of them (a prolog
  // run without the planner claims there), and each was first seen less than window_s before `now`.
  std::set<JobId> in_flight(const std::set<JobId>& on_node, const Ledger& ledger, std::int64_t now);

 private:
  // How long an arrival is remembered once the job is no longer on the node: far longer than a
  // cluster view may be old before it is stale.
  static constexpr std::int64_t kArrivalKeptS = 600;

  std::int64_t window_s_;
  std::map<JobId, std::int64_t> unknown_since_;
  std::map<JobId, std::int64_t> arrived_;
};

}  // namespace vgpu
