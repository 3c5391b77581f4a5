// Device implemented with the CUDA runtime on device 0 of CUDA_VISIBLE_DEVICES.
#pragma once

#include <memory>

#include "device.h"

namespace vgpu::scrub {

std::unique_ptr<Device> make_cuda_device();

}  // namespace vgpu::scrub
