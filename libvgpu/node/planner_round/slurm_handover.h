// The planner round's exchange with slurmctld over the node's split (docs/slurm.md): handing the
// advertisement over, confirming a shrink before its space is re-planned (bounded per handover:
// each question is two RPCs slurmctld answers to every shrinking node), and repairing what
// slurmctld lost (a split it never took, instances it stopped counting). The rules are in
// slurm_handover.cpp beside each function. Private to libvgpu/node.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/node/context.h"
#include "vgpu/node/planner.h"

namespace vgpu::node {

// Equal counts, a type at 0 the same as one left out.
bool same_counts(std::map<std::string, int> a, std::map<std::string, int> b);

// slurmctld's split of the node less its padding types ("never", "free").
std::map<std::string, int> split_of(const NodeGres& node);

// Writes the advertisement of `l` and hands it to slurmctld when it changed.
Result<void> publish(NodeContext& ctx, PlannerState& state, const Ledger& l, PlannerRoundResult& result);

// Whether `view` can tell if slurmctld took the last handover.
bool view_shows_last_handover(const NodeGres& view, const PlannerState& state, std::uint64_t handovers_when_read);

// Whether slurmctld has taken the split without `dropped` (and counts what jobs hold), from the
// round's view or by asking, within the handover's question budget.
bool wait_until_slurm_caught_up(NodeContext& ctx, PlannerState& state, const std::vector<PlanSlot>& dropped,
                                const std::optional<NodeGres>& round_view, std::uint64_t handovers_when_read);

// Whether capacity that left the advertisement outside a handover is seen gone from slurmctld.
Result<bool> released_capacity_confirmed(NodeContext& ctx, PlannerState& state,
                                         const std::optional<NodeGres>& slurm_view, std::uint64_t handovers_when_read,
                                         PlannerRoundResult& result);

// PlannerState::slurm_uncounted from one more view of slurmctld.
void refresh_slurm_uncounted(NodeContext& ctx, PlannerState& state, const NodeGres& node, const std::string& where,
                             PlannerRoundResult& result);

// Hands the advertisement over again when slurmctld's split keeps differing from it, backing off.
void resync_slurm_split(NodeContext& ctx, PlannerState& state, const NodeGres& node, PlannerRoundResult& result);

}  // namespace vgpu::node
