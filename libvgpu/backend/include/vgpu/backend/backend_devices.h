// Device files a job needs for one MIG instance. The GI/CI capability minors come from the
// driver's /proc/driver/nvidia-caps/mig-minors ("gpu0/gi1/access 12", "gpu0/gi1/ci0/access 13");
// the path is a parameter so tests read a fixture.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "vgpu/backend/backend.h"

namespace vgpu {

inline constexpr std::string_view kMigMinorsPath = "/proc/driver/nvidia-caps/mig-minors";

class MigMinors {
 public:
  // Strict: every non-empty line is "<name> <minor>"; names other than gpu*/gi*/access,
  // gpu*/gi*/ci*/access, "config" and "monitor" are errors naming the line.
  static Result<MigMinors> parse(std::string_view text, std::string_view source);
  static Result<MigMinors> load(const std::string& path);

  [[nodiscard]] std::optional<int> gi_access(int gpu_minor, int gi) const;
  [[nodiscard]] std::optional<int> ci_access(int gpu_minor, int gi, int ci) const;
  // Every GPU-instance (ci empty) and compute-instance capability of one GPU.
  struct Entry {
    int gi = 0;
    std::optional<int> ci;
    int minor = 0;
  };
  [[nodiscard]] std::vector<Entry> of_gpu(int gpu_minor) const;

 private:
  std::map<std::tuple<int, int, int>, int> minors_;  // (gpu, gi, ci or -1) -> cap minor
};

// The device UUID and /dev files for `instance` on `gpu`. The gpu<g> in mig-minors is the GPU's
// device minor (what /dev/nvidia<g> uses), which is also the NVML index on ordinary systems. A
// whole GPU (whole_gpus.h) has no capability files: its own device file is the gate.
Result<JobDevices> job_devices(const GpuInfo& gpu, const InstanceInfo& instance, const MigMinors& minors);

}  // namespace vgpu
