#pragma once
#include <vector>

#include "vgpu/core/catalog.h"

namespace vgpu::detail {
std::vector<GpuModel> builtin_models();
}
