// What the epilog's flow (epilog_flow.cpp) and the release pass (release_pass.cpp) share: how an
// instance is named in the cleanup locks and in log lines (private to libvgpu/node).
#pragma once

#include <string>
#include <utility>

#include "vgpu/ledger/ledger.h"

namespace vgpu::node::epilog {

using InstanceKey = std::pair<int, int>;  // GPU, GPU instance id

inline InstanceKey key_of(const LedgerInstance& inst) { return {inst.gpu, inst.gpu_instance_id}; }

}  // namespace vgpu::node::epilog
