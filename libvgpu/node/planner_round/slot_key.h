// A plan slot's place, what the round's phases match slots by: one profile at one start on one
// GPU is one slot, whoever has claimed it. Private to libvgpu/node.
#pragma once

#include <string>
#include <tuple>

#include "vgpu/ledger/ledger.h"

namespace vgpu::node {

using SlotKey = std::tuple<int, std::string, int>;  // gpu, profile, placement start
inline SlotKey slot_key(const PlanSlot& s) { return {s.gpu, s.profile, s.placement.start}; }

}  // namespace vgpu::node
