// MIG mode on demand: per GPU the node runs either MIG instances (partitioned) or one job on the
// physical GPU with MIG off (whole), the only way a multi-GPU job keeps its peer-to-peer/NVLink
// paths (a MIG instance has none: is_p2p_supported is 0 for every profile, 7g included, on a real
// H200). The driver changes a GPU's mode only while nothing holds it, so a switch is legal only on
// an empty GPU; the twin holds every policy to that and counts the switches.
#pragma once

#include <vector>

namespace vgpu::bench {

enum class GpuMode { partitioned, whole };

class GpuModes {
 public:
  // Every GPU starts partitioned: a site that runs slurm-vgpu has MIG on.
  explicit GpuModes(int gpus) : modes_(static_cast<std::size_t>(gpus), GpuMode::partitioned) {}

  [[nodiscard]] GpuMode mode(int gpu) const { return modes_[static_cast<std::size_t>(gpu)]; }
  // Puts `gpu` in `mode` for new work; true when that took a switch. A GPU stays in its mode once
  // emptied, so a switch is paid only when a task needs the other one. Throws std::logic_error when
  // the GPU is not `empty` and in the other mode: the driver would refuse, so it is a twin bug.
  bool enter(int gpu, GpuMode mode, bool empty);
  [[nodiscard]] long long switches() const { return switches_; }

 private:
  std::vector<GpuMode> modes_;
  long long switches_ = 0;
};

}  // namespace vgpu::bench
