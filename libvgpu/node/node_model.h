// Small shared helpers of the node flows (private to libvgpu/node).
#pragma once

#include <string>
#include <vector>

#include "vgpu/node/context.h"

namespace vgpu::node {

// The catalog model of a ledger GPU, or an error naming the GPU.
Result<const GpuModel*> model_of(const Ledger& ledger, int gpu);

// Occupancy per ledger GPU: every existing instance, plus the plan slots `include_slot` accepts.
template <class Pred>
Result<std::vector<GpuLayout>> layouts_of(const Ledger& ledger, Pred include_slot);

bool is_viz_pool(const PolicyFile& policy, const std::string& type);

}  // namespace vgpu::node

#include "node_model_impl.h"
