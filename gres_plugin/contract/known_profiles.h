// Every MIG profile name the builtin catalog knows (libvgpu core, Catalog::builtin()).
// slurmd drops zero-count slurm.conf records before the plugin sees them, and slurmctld keeps the
// last count of any type a registration leaves out. Reporting all of these at 0 unless advertised
// means a profile the planner stopped advertising while slurmd was down cannot keep a stale count.
// The plugin does not link the catalog (it must stay small and sanitizer-free inside slurmd);
// vgpu_gres_catalog_tests fails when the catalog gains a profile missing here.
#pragma once

#include <array>
#include <string_view>

namespace vgpu::gres {

inline constexpr std::array<std::string_view, 32> kKnownProfiles = {
    "1g.5gb",  "1g.5gb+me",  "1g.6gb",   "1g.6gb+me", "1g.10gb", "1g.10gb+me", "1g.12gb", "1g.12gb+me",
    "1g.18gb", "1g.18gb+me", "1g.20gb",  "1g.24gb",   "1g.35gb", "2g.10gb",    "2g.12gb", "2g.12gb+me",
    "2g.20gb", "2g.24gb",    "2g.35gb",  "3g.20gb",   "3g.40gb", "3g.47gb",    "3g.71gb", "4g.20gb",
    "4g.24gb", "4g.40gb",    "4g.47gb",  "4g.71gb",   "7g.40gb", "7g.80gb",    "7g.94gb", "7g.141gb"};

}  // namespace vgpu::gres
