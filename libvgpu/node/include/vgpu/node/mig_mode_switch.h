// MIG mode as part of the plan: a partition's "mig_mode": "partitioned" (docs/policy.md) has the
// planner turn MIG on for its GPUs that it finds with MIG off. Deciding is pure (which GPUs, and
// why not the others); switching goes through the backend under the hardware lock, so no prolog
// creates or records anything on a GPU while its mode changes.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "vgpu/backend/backend.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/policy/policy.h"

namespace vgpu {

struct MigModeChoice {
  std::vector<int> turn_on;        // GPU indexes to ask for MIG mode now
  std::vector<std::string> notes;  // GPUs the policy wants partitioned that stay as they are, and why
};

// The GPUs of `snapshot` to switch to MIG. A GPU qualifies when it is of an NVIDIA MIG model, its
// MIG mode is off now, some partition of `parts` that uses it asks for "partitioned", and nothing
// of ours is on it (no ledger instance, no plan slot). A process on it is the driver's to refuse
// (IN_USE). A model whose switch needs a GPU reset (A100, A30) is never switched: its new mode
// would wait, pending, for a reset nobody announced.
MigModeChoice choose_mig_mode_switches(const NodeSnapshot& snapshot, const Catalog& catalog,
                                       std::span<const PartitionPolicy* const> parts, const Ledger& ledger);

}  // namespace vgpu
