// Does the running Slurm give a policy what it needs? What docs/slurm.md and docs/admin.md ask of
// slurm.conf, checked against what slurmctld reports, so a missing placeholder type or feature is
// found by the admin before a user's job is refused for it. Pure: the three scontrol outputs in,
// findings out (vgpuctl slurm-check runs scontrol; the tests feed captured text).
#pragma once

#include <string>
#include <vector>

#include "vgpu/core/catalog.h"
#include "vgpu/policy/policy.h"

namespace vgpuctl {

struct SlurmViews {
  std::string config;      // scontrol show config
  std::string partitions;  // scontrol show partition -o
  std::string nodes;       // scontrol --future show node -o (FUTURE nodes are hidden without it)
};

struct SlurmConfFinding {
  // An error: valid jobs are refused, or the product cannot work. A warning: it works, but
  // loses something (accounting by profile, the submit filter's checks).
  bool error = true;
  std::string message;  // "partition infer: no FUTURE node of it declares vgpu:3g.40gb ..."
};

struct SlurmConfCheck {
  std::string slurm_version;  // SLURM_VERSION, "" when not shown
  int partitions_checked = 0;
  std::vector<SlurmConfFinding> findings;
  [[nodiscard]] int errors() const;
};

SlurmConfCheck check_slurm_conf(const vgpu::PolicyFile& policy, const vgpu::Catalog& catalog, const SlurmViews& slurm);

}  // namespace vgpuctl
