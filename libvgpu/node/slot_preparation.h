// Planned slots prepared ahead of demand (policy planner.prepare_slots): the planner creates an
// instance, idle, in each unclaimed slot nothing stands on, so the job that claims the slot takes
// it in the same ledger write as its claim and its prolog makes no MIG change. Creating is slow
// on real hardware (seconds per instance on an H100), so it happens here, off every job's way to
// its first command. Private to libvgpu/node.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "vgpu/node/context.h"

namespace vgpu::node {

struct Preparation {
  int created = 0;
  std::vector<std::string> notes;  // failures; the next round tries again
};

// Creates instances in unclaimed, unbacked slots (never a uniform model's partition or a whole
// GPU: those exist with the GPU's mode, exists_with_gpu_mode) until none is left or `budget` is
// spent, so a round on a node with many slots still re-plans on time. One create per hold of the hardware lock: a
// prolog waits for one create at most. Stops at the first failure.
Preparation prepare_slots(NodeContext& ctx, std::chrono::milliseconds budget);

}  // namespace vgpu::node
