// MIG mode as part of the plan (docs/policy.md, "mig_mode"): a partition's "partitioned" has the
// planner turn MIG on for its GPUs found with MIG off, "whole" has it turn MIG off for its GPUs
// found with MIG on, "on_demand" either, as pending demand asks (mig_mode_on_demand.h), each once
// nothing of ours is on the GPU. Deciding is pure (which GPUs, and
// why not the others); switching goes through the backend under the hardware lock, so no prolog
// creates or records anything on a GPU while its mode changes.
#pragma once

#include <set>
#include <span>
#include <string>
#include <vector>

#include "vgpu/backend/backend.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/node/mig_mode_on_demand.h"
#include "vgpu/policy/policy.h"

namespace vgpu {

struct MigModeChoice {
  std::vector<int> turn_on;          // GPU indexes to ask for MIG mode now
  std::vector<int> turn_off;         // GPU indexes to ask to leave MIG mode now
  std::set<int> wanted_partitioned;  // GPUs a partition wants in MIG mode: never served whole
  std::set<int> wanted_whole;        // GPUs a partition wants whole: never planned as MIG
  std::set<int> for_demand;          // of the GPUs wanted either way, those pending demand asks for
  std::vector<std::string> notes;    // GPUs the policy wants switched that stay as they are, and why
};

// The GPUs of `snapshot` whose MIG mode the policy wants changed. A GPU qualifies when it is of an
// NVIDIA MIG model, some partition of `parts` that uses it asks for the mode it is not in now
// ("partitioned" where MIG is off, "whole" where it is on; "partitioned" wins where partitions
// disagree; a fixed mode wins over "on_demand", whose GPUs follow `on_demand`), and nothing of
// ours is on it (no ledger instance, no plan slot). A process on it is
// the driver's to refuse (IN_USE). A model whose switch needs a GPU reset (A100, A30) is never
// switched: its new mode would wait, pending, for a reset nobody announced.
MigModeChoice choose_mig_mode_switches(const NodeSnapshot& snapshot, const Catalog& catalog,
                                       std::span<const PartitionPolicy* const> parts, const Ledger& ledger,
                                       const MigModeTargets& on_demand = {});

// The GPUs of `snapshot` whose mode pending demand steers: a partition of `parts` that uses the GPU
// says "on_demand", none says a fixed mode, and its model switches without a reset (a reset model
// gets a note instead).
std::set<int> gpus_on_demand(const NodeSnapshot& snapshot, const Catalog& catalog,
                             std::span<const PartitionPolicy* const> parts, std::vector<std::string>& notes);

}  // namespace vgpu
