// vgpu_profiles.lua: the table the job_submit filter (jobsubmit/job_submit.lua) reads to refuse,
// at submission, a vgpu type no node of the partition could ever serve. Generated from the policy
// and the GPU catalog (`vgpuctl submit-table`), so the filter, the planner and the prolog agree
// on what each partition offers; nobody writes the table by hand.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/core/catalog.h"
#include "vgpu/policy/policy.h"

namespace vgpu {

// The vgpu types a partition offers: every profile the policy allows on any model of `catalog`
// (catalog order), then the partition's viz pool names. The one list the job_submit table and
// the accounting TRES line are both made of.
std::vector<std::string> types_offered(const PartitionPolicy& partition, const Catalog& catalog);

// Per partition: types_offered(), and which of them are share types ("user": the filter gives the
// job `--exclusive=user`; "any": the partition shares instances across users). `default_partition` is the one slurm.conf marks Default=YES (a
// job that names no partition is checked against it); it must be a partition of the policy.
// With planner.node_features, also the preferences the filter gives jobs on the policy's
// partitions (vgpu/contract/node_features.h): a job asking only for types that are parts of a GPU
// (is_part_of_a_gpu; listed in the table) prefers nodes with a partly used GPU, any other GPU job
// nodes in use, other jobs nodes with no idle GPU.
// A share type, or a profile or class smaller than the whole GPU (fewer compute slices) on every
// model of `catalog` that has it. Not a viz pool.
bool is_part_of_a_gpu(const PolicyFile& policy, const Catalog& catalog, std::string_view type);

Result<std::string> render_submit_table(const PolicyFile& policy, const Catalog& catalog,
                                        std::string_view default_partition);

}  // namespace vgpu
