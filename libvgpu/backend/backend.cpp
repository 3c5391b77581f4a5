#include "vgpu/backend/backend.h"

#include <fmt/format.h>

namespace vgpu {

std::string_view to_string(MigMode mode) {
  switch (mode) {
    case MigMode::disabled: return "disabled";
    case MigMode::enabled: return "enabled";
    case MigMode::unsupported: return "unsupported";
  }
  return "unsupported";
}

std::string_view to_string(MigModeSwitch outcome) {
  switch (outcome) {
    case MigModeSwitch::activated: return "activated";
    case MigModeSwitch::pending_in_use: return "pending: the GPU is in use";
    case MigModeSwitch::pending_reset_required: return "pending: needs a GPU reset";
  }
  return "pending";
}

Result<MigModeSwitch> GpuBackend::set_mig_mode(int gpu, MigMode mode) {
  return fail(ErrorCode::unavailable, fmt::format("{}: gpu {}: MIG mode {}: this backend has no MIG mode",
                                                  backend_name(), gpu, to_string(mode)));
}

Result<std::vector<GpuProcess>> GpuReader::compute_processes(int gpu) {
  return fail(ErrorCode::unavailable,
              fmt::format("{}: gpu {}: this backend cannot list a GPU's processes", backend_name(), gpu));
}

Result<NodeSnapshot> take_snapshot(GpuReader& reader) {
  NodeSnapshot snap;
  snap.backend = std::string(reader.backend_name());
  auto gpus = reader.discover();
  if (!gpus) return std::unexpected(gpus.error().within(snap.backend + ": snapshot"));
  snap.gpus = std::move(*gpus);
  if (auto why = reader.unavailable_reason(); !why.empty()) snap.notes.push_back(why);
  for (const auto& gpu : snap.gpus) {
    // A GPU outside MIG mode holds no MIG instances; asking would only produce NOT_SUPPORTED.
    if (gpu.mig_current != MigMode::enabled && !reader.lists_whole_gpus()) {
      snap.notes.push_back(fmt::format("gpu {}: MIG mode {}, no instances", gpu.index, to_string(gpu.mig_current)));
      continue;
    }
    auto instances = reader.list_instances(gpu.index);
    if (!instances)
      return std::unexpected(instances.error().within(fmt::format("{}: snapshot: gpu {}", snap.backend, gpu.index)));
    snap.instances.insert(snap.instances.end(), instances->begin(), instances->end());
  }
  return snap;
}

}  // namespace vgpu
