// Shared instances: one MIG instance whose compute several jobs share through CUDA MPS, each job
// holding a share measured in thousandths of the whole GPU (the unit of a fractional GPU request,
// as in the openb traces' gpu_milli). An instance of k of the GPU's n compute slices holds shares
// up to floor(1000 k / n): a 3g instance of an H100 holds 428.
//
// The rules here decide which shared instance a new share joins and which profile a new shared
// instance gets; the node (and the trace simulator, through the same functions) apply them. They
// say nothing of who may share: that is the partition's policy.
#pragma once

#include <span>

#include "vgpu/base/error.h"
#include "vgpu/core/catalog.h"

namespace vgpu {

struct SharedInstance {
  const Profile* profile = nullptr;
  int used_milli = 0;  // sum of the shares it holds now
};

// Thousandths of the whole GPU that one instance of `profile` can hand out as shares.
[[nodiscard]] int share_capacity_milli(const GpuModel& model, const Profile& profile);

// The instance a share of `milli` joins: the one it fits tightest (least room left after it), the
// lowest index on ties, so that partly used instances fill up before roomy ones and an instance
// whose shares all end can be returned. -1 when none has room.
[[nodiscard]] int choose_shared_instance(const GpuModel& model, std::span<const SharedInstance> instances, int milli);

// The profile of a new shared instance opened for a first share of `milli`: the smallest hardware
// profile (fewest compute slices, then least memory, never a "+me"/"+gfx" variant) with at least
// `min_compute_slices` compute slices whose capacity covers the share. nullptr when milli is
// outside [1, 1000] or no profile qualifies.
[[nodiscard]] const Profile* profile_for_shared_instance(const GpuModel& model, int milli, int min_compute_slices = 1);

// ---- production shares: an instance opened for N equal shares, enforced by its MPS server ----

// What one of `shares` equal shares of an instance may use, set on the instance's MPS server
// before its first client (a client can lower its own limits, never raise them:
// docs/shared-instances.md). Memory is the instance's divided evenly, rounded down to whole MiB;
// compute is the percentage of the instance's SMs MPS lets one client's kernels occupy.
struct ShareLimits {
  int memory_mib = 0;
  int thread_percentage = 0;
  bool operator==(const ShareLimits&) const = default;
};

// MPS on Volta and later serves at most 48 clients per device; an instance of more shares could
// not run them all at once.
inline constexpr int kMaxSharesPerInstance = 48;
// The CUDA context counts against its own cap (145 MiB of a 4 GiB cap on an H100, measured), so a
// share below this could hold a context and next to nothing else.
inline constexpr int kMinShareMemoryMib = 512;

// The limits of one share, or an error naming the profile and why it cannot be split that way
// (fewer than 2 or more than kMaxSharesPerInstance shares, or shares too small for a context).
Result<ShareLimits> share_limits(const Profile& instance, int shares);

}  // namespace vgpu
