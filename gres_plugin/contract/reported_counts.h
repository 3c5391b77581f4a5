// The per-type counts slurmd reports for a node. slurm.conf declares a constant total
// (Gres=vgpu:never:0,vgpu:free:<T>); slurmctld drains a node whose reported total drops or whose
// total changes while jobs hold the GRES, so the advertised split is padded with "free" to keep T.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "advertisement.h"
#include "vgpu/error.h"

namespace vgpu::gres {

struct TypeCount {
  std::string type;
  std::uint64_t count = 0;
};

struct ReportedCounts {
  std::vector<TypeCount> advertised;  // sorted by type name
  std::uint64_t free = 0;             // padding so sum(advertised) + free == configured total
  std::string problem;                // why the advertisement was not used; empty when it was
};

// An unusable advertisement (missing, corrupt, larger than the total) reports everything as
// "free": nothing is placeable, yet the node keeps its total and never drains.
ReportedCounts reported_counts(const Result<Advertisement>& advertisement, std::uint64_t configured_total);

}  // namespace vgpu::gres
