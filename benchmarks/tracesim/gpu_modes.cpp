#include "gpu_modes.h"

#include <stdexcept>
#include <string>

namespace vgpu::bench {

bool GpuModes::enter(int gpu, GpuMode mode, bool empty) {
  GpuMode& now = modes_[static_cast<std::size_t>(gpu)];
  if (now == mode) return false;
  if (!empty) throw std::logic_error("GPU " + std::to_string(gpu) + ": MIG mode switched while it holds work");
  now = mode;
  ++switches_;
  return true;
}

}  // namespace vgpu::bench
