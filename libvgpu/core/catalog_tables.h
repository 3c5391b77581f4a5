#pragma once
#include <vector>

#include "vgpu/catalog.h"

namespace vgpu::detail {
std::vector<GpuModel> builtin_models();
}
