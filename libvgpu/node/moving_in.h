// Moving in (docs/admin.md, "Moving in"): when a node's ledger is first made, the instances on its
// GPUs that no job record names belong to the layout before slurm-vgpu, usually an admin's static
// MIG layout. One that a process uses is a running job's: it stays that job's, released by its
// epilog like any job's instance, so the layout becomes dynamic as those jobs end. One used by a
// process that no Slurm job of this node runs, by several jobs' processes, or where Slurm could not
// say, is quarantined and left to the admin. The rest are free space, scrubbed before anything else uses them. Private to
// libvgpu/node.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "vgpu/ledger/ledger.h"
#include "vgpu/node/context.h"

namespace vgpu::node {

struct MovingIn {
  int for_jobs = 0;     // adopted for the running Slurm job that uses each
  int quarantined = 0;  // in use, but not by exactly one Slurm job of this node that Slurm named
  // Who gets each adopted instance's device files: its job's user (MIG UUID, uid).
  std::vector<std::pair<std::string, unsigned>> grants;
  std::vector<std::string> notes;  // what could not be asked, and each quarantine's reason
};

// Marks the unowned instances of a freshly rebuilt ledger that are in use, as above. Asks the
// backend once per GPU with such instances and Slurm once per process found on them. Where the
// backend cannot say who uses a GPU, its unowned instances stay as the rebuild left them (free,
// to be scrubbed; a driver refuses to destroy one in use) and a note says so.
MovingIn adopt_instances_in_use(const NodeContext& ctx, Ledger& rebuilt);

}  // namespace vgpu::node
