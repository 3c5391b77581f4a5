// MIG mode as part of the plan (docs/policy.md, "mig_mode"): a partition's "partitioned" has the
// planner turn MIG on for its GPUs found with MIG off, "whole" has it turn MIG off for its GPUs
// found with MIG on, each once nothing of ours is on the GPU. Deciding is pure (which GPUs, and
// why not the others); switching goes through the backend under the hardware lock, so no prolog
// creates or records anything on a GPU while its mode changes.
#pragma once

#include <set>
#include <span>
#include <string>
#include <vector>

#include "vgpu/backend/backend.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/policy/policy.h"

namespace vgpu {

struct MigModeChoice {
  std::vector<int> turn_on;          // GPU indexes to ask for MIG mode now
  std::vector<int> turn_off;         // GPU indexes to ask to leave MIG mode now
  std::set<int> wanted_partitioned;  // GPUs a partition wants in MIG mode: never served whole
  std::set<int> wanted_whole;        // GPUs a partition wants whole: never planned as MIG
  std::vector<std::string> notes;    // GPUs the policy wants switched that stay as they are, and why
};

// The GPUs of `snapshot` whose MIG mode the policy wants changed. A GPU qualifies when it is of an
// NVIDIA MIG model, some partition of `parts` that uses it asks for the mode it is not in now
// ("partitioned" where MIG is off, "whole" where it is on; "partitioned" wins where partitions
// disagree), and nothing of ours is on it (no ledger instance, no plan slot). A process on it is
// the driver's to refuse (IN_USE). A model whose switch needs a GPU reset (A100, A30) is never
// switched: its new mode would wait, pending, for a reset nobody announced.
MigModeChoice choose_mig_mode_switches(const NodeSnapshot& snapshot, const Catalog& catalog,
                                       std::span<const PartitionPolicy* const> parts, const Ledger& ledger);

}  // namespace vgpu
