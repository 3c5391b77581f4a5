// slurmd-report.json: the split slurmd itself reports for this node right now, written by the
// plugin inside slurmd whenever it has taken a new advertisement.json (Slurm 23.11 and later).
// From 23.11 slurmctld applies a node's registration report at its own restart and while the node
// has a zero-count type; the planner therefore hands a split to slurmctld (scontrol update) only
// once slurmd reports it too, and reads this file to know (docs/slurm.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"

namespace vgpu::contract {

inline constexpr std::string_view kSlurmdReportFormat = "slurm-vgpu-slurmd-report";
inline constexpr std::uint64_t kSlurmdReportVersion = 1;

struct SlurmdReport {
  std::string node;
  std::uint64_t generation = 0;  // of the advertisement it reports
  // The node's constant vgpu total as slurmd reads it from slurm.conf (counts plus the padding).
  // The planner hands slurmctld a split of exactly this total: slurmctld's own `Gres=` view can
  // show more for a while (it keeps a type's last reported count until a registration lists the
  // type again), and a split summed from that view makes slurmctld expect a total slurmd never
  // reports, so the next registration invalidates the node ("count reported lower than configured").
  std::uint64_t total = 0;
  std::map<std::string, std::uint64_t, std::less<>> counts;  // non-zero types, without the padding
  bool operator==(const SlurmdReport&) const = default;
};

std::string render_slurmd_report(const SlurmdReport& report);
Result<SlurmdReport> parse_slurmd_report(std::string_view text, std::string_view expected_node);
std::string slurmd_report_path(std::string_view state_dir, std::string_view node);

}  // namespace vgpu::contract
