// Turning profile records read from a device into a vgpu::GpuModel that compare_models() can diff
// against the built-in catalog. Hardware-neutral: the NVML reader fills DeviceProfile from
// nvmlGpuInstanceProfileInfo_v2_t and the possible placements.
#pragma once

#include <string>
#include <vector>

#include "vgpu/core/catalog.h"

namespace vgpu {

struct DeviceProfile {
  int index = 0;           // NVML_GPU_INSTANCE_PROFILE_* asked for
  int id = 0;              // profile id the device answered
  std::string name;        // as reported, e.g. "MIG 3g.40gb" (the "MIG " prefix is dropped)
  int compute_slices = 0;  // sliceCount
  int instance_count = 0;
  int sm_count = 0;
  int memory_mib = 0;
  std::vector<Placement> placements;
};

// Short model name from the built-in catalog when the product is known (so results line up with
// policy files), else the product name itself. Memory slices are the widest placement's end,
// compute slices the largest profile's slice count.
Result<GpuModel> model_from_device(const std::string& product_name, int memory_mib,
                                   const std::vector<DeviceProfile>& profiles);

// "MIG 1g.10gb+me" -> "1g.10gb+me"
std::string profile_name_from_device(std::string_view reported);

}  // namespace vgpu
