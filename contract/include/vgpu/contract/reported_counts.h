// The per-type counts slurmd reports for a node. slurm.conf declares a constant total
// (Gres=vgpu:never:0,vgpu:free:<T>); slurmctld drains a node whose reported total drops or whose
// total changes while jobs hold the GRES, so the advertised split is padded with "free" to keep T.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "vgpu/contract/advertisement.h"
#include "vgpu/base/error.h"

namespace vgpu::contract {

struct TypeCount {
  std::string type;
  std::uint64_t count = 0;
};

struct ReportedCounts {
  std::vector<TypeCount> advertised;  // sorted by type name; zero counts included
  std::uint64_t free = 0;             // padding so sum(advertised) + free == configured total
  std::string problem;                // why the advertisement was not used; empty when it was
};

// An unusable advertisement (missing, corrupt, larger than the total) reports everything as
// "free": nothing is placeable, yet the node keeps its total and never drains.
// slurmctld keeps the last count of a type a registration leaves out, so every type reported
// before (`previously_reported`) is reported again, at 0 when no longer advertised.
ReportedCounts reported_counts(const Result<Advertisement>& advertisement, std::uint64_t configured_total,
                               const std::set<std::string, std::less<>>& previously_reported = {});

}  // namespace vgpu::contract
