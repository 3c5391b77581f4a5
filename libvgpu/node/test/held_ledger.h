// Ledgers of two H100s with instances some jobs hold, for the tests of what a node's GPUs hold
// (gpu_use_test.cpp, node_features_test.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "vgpu/ledger/ledger.h"

namespace vgpu::node::test {

inline Ledger two_h100s() {
  Ledger l;
  l.node = "n1";
  l.gpus = {LedgerGpu{0, "GPU-0", "H100-80GB", "0000:00:06.0"}, LedgerGpu{1, "GPU-1", "H100-80GB", "0000:00:07.0"}};
  return l;
}

// Held by `job`, or idle (kept for the next job) without one.
inline LedgerInstance instance(int gpu, std::optional<JobId> job, std::string profile = "1g.10gb",
                               Placement where = {0, 1}) {
  LedgerInstance i;
  i.gpu = gpu;
  i.profile = std::move(profile);
  i.placement = where;
  i.job = job;
  i.state = job ? InstanceState::ready : InstanceState::idle;
  return i;
}

}  // namespace vgpu::node::test
