// Draws one GPU as a row of memory slices so an admin sees the layout at a glance:
//   GPU 0  H100-80GB  compute 5/7 used, 1 planned
//     slice  0         1         2         3         4         5         6         7
//           [3g.40gb job 42                      ][~1g.10gb ][1g.10gb j7][   free   ]
// Running instances are boxed with their job, planned (advertised, not yet created) ones start with '~'.
#pragma once

#include <string>
#include <vector>

#include "vgpu/core/catalog.h"

namespace vgpuctl {

struct DrawnInstance {
  vgpu::Placement placement;
  std::string profile;
  std::string owner;     // "job 42", "" when unowned
  bool planned = false;  // advertised to Slurm but not created yet
  int compute_slices = 0;
};

std::string draw_gpu(int index, const vgpu::GpuModel& model, const std::vector<DrawnInstance>& instances);

}  // namespace vgpuctl
