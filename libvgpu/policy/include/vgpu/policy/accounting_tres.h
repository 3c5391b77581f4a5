// slurm.conf's AccountingStorageTRES for slurm-vgpu: gres/vgpu plus one gres/vgpu:<type> per
// type any partition of the policy offers, so slurmdbd records each job's instances by profile
// (sacct AllocTRES, sreport -T). Generated (`vgpuctl accounting-tres`) from the same list as the
// job_submit table, so a profile the policy offers is never missing from the accounting.
#pragma once

#include <string>

#include "vgpu/core/catalog.h"
#include "vgpu/policy/policy.h"

namespace vgpu {

// "gres/vgpu,gres/vgpu:1g.10gb,...": types in the order partitions and types_offered() list
// them, each once. Slurm keeps one TRES per name it is told about; naming a type no job uses
// costs a row in slurmdbd's tres_table, nothing per job.
std::string render_accounting_tres(const PolicyFile& policy, const Catalog& catalog);

}  // namespace vgpu
