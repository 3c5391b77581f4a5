// Node-wide advisory locks shared by the prolog, the epilog and the planner. flock(2), so a
// process killed while holding one (crash points, kill -9, a reboot) gives it up.
//
//   hardware.lock  A change to the GPUs and the ledger entry that records it happen as one step:
//                  the prolog's create + record, a release's destroy + remove, and the planner's
//                  reconcile (snapshot, ledger, act). Without it a reconcile can see an instance
//                  between its creation and its record and destroy it under a starting job.
//   cleanup-<gpu>-<gi>.lock  One process at a time scrubs or destroys one released instance.
//                  Per instance, not per node: a scrub takes 0.7 s on an H100, and one node-wide
//                  lock held every epilog behind the others' scrubs (86 jobs/min per node at most).
//   access.lock    Who may open an instance's device files: the planner's sweep of capability
//                  files no job holds (ledger read to last chmod) and a prolog's grants. Not the
//                  hardware lock, so a prolog that creates nothing never waits for a create.
//
// Lock order: cleanup locks (by GPU, then instance id), then hardware.lock, then access.lock; nothing takes an earlier one
// while holding a later one.
#pragma once

#include <string>

#include "vgpu/node/context.h"

namespace vgpu {

enum class LockWait { block, try_once };

class NodeLock {
 public:
  // Blocks until the lock is held (LockWait::block), or tries once (held() false and busy() true
  // when another holds it); held() is false too when the file cannot be opened. flock(2) locks an
  // open file, so a process must never wait for a lock it holds through another descriptor.
  explicit NodeLock(const std::string& path, LockWait wait = LockWait::block);
  // Takes over a descriptor that already holds its lock (one inherited from the epilog that handed
  // its cleanup to this process: ports.h, CleanupHandoff).
  struct Adopt {};
  NodeLock(int held_fd, Adopt) : fd_(held_fd) {}
  ~NodeLock();
  NodeLock(const NodeLock&) = delete;
  NodeLock& operator=(const NodeLock&) = delete;
  [[nodiscard]] bool held() const { return fd_ >= 0; }
  [[nodiscard]] bool busy() const { return busy_; }
  [[nodiscard]] int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool busy_ = false;
};

inline std::string hardware_lock_path(const NodeContext& ctx) { return ctx.node_dir() + "/hardware.lock"; }
inline std::string cleanup_lock_path(const NodeContext& ctx, int gpu, int gpu_instance_id) {
  return ctx.node_dir() + "/cleanup-" + std::to_string(gpu) + "-" + std::to_string(gpu_instance_id) + ".lock";
}
inline std::string access_lock_path(const NodeContext& ctx) { return ctx.node_dir() + "/access.lock"; }

}  // namespace vgpu
