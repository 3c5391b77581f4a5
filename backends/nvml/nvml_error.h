// NVML failures as data: the call (with its arguments), the return code and nvmlErrorString's
// text. The probe records them; everything else turns them into vgpu::Error messages such as
// "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 9, {4,4}): Insufficient Resources".
#pragma once

#include <string>
#include <string_view>

#include "nvml_abi.h"
#include "vgpu/base/error.h"

namespace vgpu::nvml {

struct Failure {
  std::string call;  // "nvmlDeviceGetGpuInstanceProfileInfoV(gpu 0, index 5)"
  nvmlReturn_t code = NVML_ERROR_UNKNOWN;
  std::string text;  // nvmlErrorString(code)

  [[nodiscard]] std::string message() const { return call + ": " + text; }
  [[nodiscard]] Error error() const;
};

// "NVML_ERROR_NOT_SUPPORTED"; "NVML_ERROR_<n>" for codes newer than this table.
std::string code_name(nvmlReturn_t code);
// How a failure maps onto the product's error codes (INSUFFICIENT_RESOURCES -> no_capacity, ...).
ErrorCode error_code_for(nvmlReturn_t code);

}  // namespace vgpu::nvml
