// Node-wide advisory locks shared by the prolog, the epilog and the planner. flock(2), so a
// process killed while holding one (crash points, kill -9, a reboot) gives it up.
//
//   hardware.lock  A change to the GPUs and the ledger entry that records it happen as one step:
//                  the prolog's create + record, a release's destroy + remove, and the planner's
//                  reconcile (snapshot, ledger, act). Without it a reconcile can see an instance
//                  between its creation and its record and destroy it under a starting job.
//   cleanup.lock   One process at a time works the scrub/destroy queue.
//   access.lock    Who may open an instance's device files: the planner's sweep of capability
//                  files no job holds (ledger read to last chmod) and a prolog's grants. Not the
//                  hardware lock, so a prolog that creates nothing never waits for a create.
//
// Lock order: cleanup.lock, then hardware.lock, then access.lock; nothing takes an earlier one
// while holding a later one.
#pragma once

#include <string>

#include "vgpu/node/context.h"

namespace vgpu {

class NodeLock {
 public:
  // Blocks until the lock is held, or fails (held() false) when the file cannot be opened.
  explicit NodeLock(const std::string& path);
  ~NodeLock();
  NodeLock(const NodeLock&) = delete;
  NodeLock& operator=(const NodeLock&) = delete;
  [[nodiscard]] bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

inline std::string hardware_lock_path(const NodeContext& ctx) { return ctx.node_dir() + "/hardware.lock"; }
inline std::string cleanup_lock_path(const NodeContext& ctx) { return ctx.node_dir() + "/cleanup.lock"; }
inline std::string access_lock_path(const NodeContext& ctx) { return ctx.node_dir() + "/access.lock"; }

}  // namespace vgpu
