// A Slurm job id, the same type on every side (the plugin, the hooks, the ledger): Slurm's own
// job ids are uint32_t, and 0 is never a job.
#pragma once

#include <cstdint>

namespace vgpu {

using JobId = std::uint32_t;

}  // namespace vgpu
