// What a node flow runs against: this node's name and state directory, its policy and ledger, the
// GPU backend and the ports (ports.h). Wiring only: the planner's own state across rounds is
// PlannerState (planner.h), owned by the planner.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "vgpu/backend/backend.h"
#include "vgpu/ledger/ledger_store.h"
#include "vgpu/node/ports.h"
#include "vgpu/policy/policy.h"

namespace vgpu {

class PendingTally;  // hook_tally_store.h
class LaunchWatch;   // launch_watch.h

struct NodeContext {
  std::string node;
  std::string state_dir;  // $VGPU_STATE_DIR; this node's files live in <state_dir>/<node>/
  const PolicyFile* policy = nullptr;
  LedgerStore* ledger = nullptr;
  GpuBackend* backend = nullptr;
  SlurmClient* slurm = nullptr;
  Scrubber* scrubber = nullptr;
  VizLauncher* viz = nullptr;                 // null: this node offers no viz pools
  InstanceAccess* access = nullptr;           // null: instances are not confined per job (VGPU_CONFINE_DEVICES=off)
  SplitPublisher* publisher = nullptr;        // hands advertisement.json's split to slurmctld
  MpsControl* mps = nullptr;                  // null: the policy defines no share types, so no instance is shared
  CleanupHandoff* cleanup_handoff = nullptr;  // null: an epilog scrubs its job's instances itself
  // The planner: the hook runs it serves are kept here and written once per round
  // (hook_tally_store.h). Null: each run is written as it ends.
  PendingTally* pending_tally = nullptr;
  // The planner: which jobs' hooks reached it, so that a SIGHUP before 23.11 waits for a launch on
  // its way (launch_watch.h). Null: nothing waits.
  LaunchWatch* launches = nullptr;
  std::function<std::int64_t()> now;  // Unix seconds
  std::function<void(const std::string&)> log;
  // The planner serves hooks waiting on its socket here (nodeagent/hook_socket/hook_socket.h); a round calls
  // it where it holds no lock and may wait (between slot preparations, while Slurm takes a split),
  // so a served prolog waits as little as a prolog of its own would. Null outside the planner.
  std::function<void()> serve_waiting_hooks;
  // True once the planner was asked to stop (SIGTERM): a round stops at its next wait or its next
  // hardware change, with the ledger consistent (every change it made is committed, and what it did
  // not do is the next start's), so a stop never waits for seconds of creates or a slow slurmctld.
  // Null: never.
  std::function<bool()> stopping;
  [[nodiscard]] bool stop_requested() const { return stopping && stopping(); }
  int confirm_timeout_ms = 8000;  // how long a shrink waits for slurmctld to take the new split
  int confirm_poll_ms = 250;

  [[nodiscard]] std::string node_dir() const { return state_dir + "/" + node; }
};

// A job's own ledger write (a hook's claim, the instances it made or took, their release and
// cleanup): it survives the writer's death but is not fsynced, because a power cut takes the job
// and its instances with it and the node converges from the hardware and Slurm (Durability).
inline Result<Ledger> update_for_job(const NodeContext& ctx, const LedgerStore::Mutator& mutate) {
  return ctx.ledger->update(mutate, Durability::process_crash);
}

}  // namespace vgpu
