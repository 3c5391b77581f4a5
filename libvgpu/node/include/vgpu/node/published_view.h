// Reading slurmctld's view of this node when it comes from the published cluster view, up to a
// period old (contract/cluster_view.h): what it shows is compared only with what happened here
// before it was taken. A job that claimed a slot after the view was taken is not yet counted in
// it, a split handed over after it is not yet in it, and a job that started after it is not yet
// listed as running: misread, each would look like a restarted slurmctld, a lost notification or
// an ended job. Asked of slurmctld directly (published_at none), the answer is newer than anything
// the round has seen, as before.
#pragma once

#include <cstdint>
#include <optional>
#include <set>

#include "vgpu/base/job_id.h"
#include "vgpu/ledger/ledger.h"
#include "vgpu/node/planner.h"

namespace vgpu {

// Whether a view taken at `published_at` may predate an event here at `event_at` (the node's
// clock), allowing kClusterViewClockMarginS of skew between the controller's clock and the node's.
bool view_predates(const std::optional<std::int64_t>& published_at, std::int64_t event_at);

// Every job holding an instance, a claim or a share in `ledger`.
std::set<JobId> holders_of(const Ledger& ledger);

// Records `now` for holders not seen before and forgets those that hold nothing any more. A
// claim is at or before the time its holder was first seen; a restarted planner sees every
// holder anew, which only delays the checks by one view.
void note_holders(PlannerState& state, const std::set<JobId>& holders, std::int64_t now);

// `ledger` without what jobs hold that a view taken at `published_at` may not count yet.
Ledger without_holders_newer_than(const Ledger& ledger, const PlannerState& state,
                                  const std::optional<std::int64_t>& published_at);

}  // namespace vgpu
