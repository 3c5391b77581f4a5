#include "mig_mode.h"

namespace fakenvml {

MigModeState mig_mode_now(const State& s, const Gpu& gpu) {
  if (auto it = s.mig_modes.find(gpu.uuid); it != s.mig_modes.end()) return it->second;
  auto nvml = [](Mig m) { return m == Mig::enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE; };
  return {static_cast<unsigned>(nvml(gpu.mig_current)), static_cast<unsigned>(nvml(gpu.mig_pending))};
}

bool mig_enabled_now(const State& s, const Gpu& gpu) {
  return gpu.mig_current != Mig::unsupported && mig_mode_now(s, gpu).current == NVML_DEVICE_MIG_ENABLE;
}

bool switch_needs_reset(const Gpu& gpu) {
  for (const char* part : {"A100", "A30", "A800"})
    if (gpu.name.find(part) != std::string::npos) return true;
  return false;
}

namespace {

bool held(const State& s, const Gpu& gpu, unsigned from, bool context_on_whole_gpu) {
  if (from == NVML_DEVICE_MIG_ENABLE) {
    auto it = s.gpus.find(gpu.uuid);
    return it != s.gpus.end() && !it->second.empty();
  }
  auto it = s.whole_gpus.find(gpu.uuid);
  return context_on_whole_gpu || (it != s.whole_gpus.end() && it->second.memory_used_mib > 0);
}

}  // namespace

nvmlReturn_t set_mig_mode(State& s, const Gpu& gpu, unsigned mode, bool root, nvmlReturn_t& activation,
                          bool context_on_whole_gpu) {
  if (gpu.mig_current == Mig::unsupported) return NVML_ERROR_NOT_SUPPORTED;
  if (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_INVALID_ARGUMENT;
  if (!root) return NVML_ERROR_NO_PERMISSION;
  MigModeState now = mig_mode_now(s, gpu);
  now.pending = mode;
  if (now.current == mode) {
    activation = NVML_SUCCESS;
  } else if (switch_needs_reset(gpu)) {
    activation = NVML_ERROR_RESET_REQUIRED;
  } else if (held(s, gpu, now.current, context_on_whole_gpu)) {
    activation = NVML_ERROR_IN_USE;
  } else {
    now.current = mode;
    activation = NVML_SUCCESS;
  }
  s.mig_modes[gpu.uuid] = now;
  return NVML_SUCCESS;
}

}  // namespace fakenvml
