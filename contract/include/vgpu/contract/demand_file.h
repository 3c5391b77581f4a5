// The published demand file: on a large cluster one `vgpu-planner --publish-demand FILE` on the
// controller writes the pending jobs once per period (squeue's text, kSqueuePendingFormat), and
// every node's planner reads it ($VGPU_DEMAND_FILE) instead of asking slurmctld itself.
// Whoever can write it steers every node's layout, so it is 0644 and trusted only when root or the
// reader's own user owns it; a file older than a minute means the publisher stopped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"
#include "vgpu/contract/file_system.h"

namespace vgpu::contract {

inline constexpr std::int64_t kDemandFileMaxAgeS = 60;
// About 250,000 pending jobs of squeue's text: a round's cost is linear in it (docs/benchmarks.md).
inline constexpr std::uint64_t kDemandFileMaxBytes = 16u << 20;

// The one writer: atomic, 0644 whatever the umask, not durable (it is rewritten every period).
Result<void> write_demand_file(FileSystem& fs, const std::string& path, std::string_view text);

// The one reader: the text, or `unavailable` naming the file and why it is not trusted (missing,
// unreadable, a symbolic link, not a regular file, larger than kDemandFileMaxBytes, owned by someone
// other than root or `reader_uid`, writable by group or others, or older than kDemandFileMaxAgeS at
// `now`). Opened without following a symlink or blocking; checked on the descriptor that is read.
Result<std::string> read_demand_file(FileSystem& fs, const std::string& path, uid_t reader_uid, std::int64_t now);

}  // namespace vgpu::contract
