// Whether any process has one of a GPU's render nodes open: the fake driver's stand-in for the
// kernel's "KFD processes exist on this device" check (kgd2kfd_check_and_lock_kfd). It walks
// /proc/<pid>/fd like fuser(1) does.
#pragma once

#include <string>
#include <vector>

namespace vgpu::fake {

// `dev_root` holds dev/dri/renderD<minor>; `proc` is normally "/proc".
bool render_nodes_in_use(const std::string& dev_root, const std::vector<int>& minors,
                         const std::string& proc = "/proc");

}  // namespace vgpu::fake
