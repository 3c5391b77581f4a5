// The viz backends use the project's one sysfs door (backends/sysfs) under their own namespace.
#pragma once

#include "vgpu/sysfs/sysfs.h"

namespace vgpu::viz {
using vgpu::RootedSysfs;
using vgpu::Sysfs;
}  // namespace vgpu::viz
