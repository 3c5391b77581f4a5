// Shares of shared instances in the ledger: which jobs hold shares of which slot or instance of a
// share type, how a job's prolog takes shares and its epilog gives them back. Pure operations on
// the ledger value, like ledger.h's; the node's hooks apply them (docs/shared-instances.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"
#include "vgpu/core/catalog.h"
#include "vgpu/ledger/ledger.h"

namespace vgpu {

// The shares one instance of `profile` is cut into, from the ledger's classes (which keep the
// policy's share types): 0 for a whole instance. What Slurm counts per slot or instance of it is
// units_of(): the shares, or 1.
int shares_of(const Ledger& ledger, std::string_view profile);
int units_of(const Ledger& ledger, std::string_view profile);

// Whether jobs hold `slot`: one claimed it, or a share group stands on it. The planner keeps a held
// slot where it is, as Slurm may have counted any of its units to those jobs.
bool slot_is_held(const Ledger& ledger, const PlanSlot& slot);

// Whether jobs hold `instance`: it has an owning job, or a share group stands on it.
bool instance_is_held(const Ledger& ledger, const LedgerInstance& instance);

// The live instance a share group stands on (made for its type, no job, neither released nor
// idle), or nullptr while the group stands on its slot.
const LedgerInstance* share_group_instance(const Ledger& ledger, const ShareGroup& group);

// The group at (gpu, placement) stands on a slot where an idle instance of its type waits (kept
// scrubbed by the last share's epilog): the instance becomes the group's (ready) and the slot is
// consumed, as add_instance does for a new one. On error nothing changes.
Result<void> adopt_idle_for_share_group(Ledger& ledger, int gpu, Placement placement);

// The group standing at (gpu, placement), or nullptr.
const ShareGroup* share_group_at(const Ledger& ledger, int gpu, Placement placement);

// The users holding shares of `group`, each once, the longest holder first (the first is who the
// instance's files belong to; docs/security.md).
std::vector<std::string> share_group_users(const ShareGroup& group);

// The groups in which `job` holds a share.
std::vector<const ShareGroup*> share_groups_of_job(const Ledger& ledger, JobId job);

// Gives `job` of `user` `count` shares of `type`, one per slot or instance (an MPS server sets one
// memory cap and compute share per client, so a job's second share is a second instance). Shares
// the job already holds count toward `count`, so a retried prolog takes nothing twice. Joins, in
// this order: groups of the type with room whose holders are all `user` (or any user's, with
// `across_users`), the fullest first, so that partly used instances fill up and empty ones can be
// returned; then slots of the type no group holds yet, those without a released instance on them
// first. no_capacity when the node has too few, and then nothing changes.
Result<void> claim_shares(Ledger& ledger, const Catalog& catalog, JobId job, const std::string& user,
                          std::string_view type, int count, bool across_users, std::int64_t now);

// Where a job's share was taken back from.
struct ReleasedShare {
  int gpu = 0;
  Placement placement;
  bool last = false;         // the group is gone: its instance (if made) needs its MPS daemon closed and a scrub
  bool on_instance = false;  // the share stood on an instance (else on a slot not yet made)
  bool operator==(const ReleasedShare&) const = default;
};

// Takes every share of `job` back. A share on an instance leaves a history record (the type as
// profile, from when the job took it). The last share of an instance retires the instance as
// retire_job() does an owned one (scrubbing, a backed slot of the type at its place); the last
// share of a slot leaves the slot in the plan, unheld.
std::vector<ReleasedShare> release_shares(Ledger& ledger, JobId job, std::int64_t end_time,
                                          std::string_view end_reason);

// The share-group rules validate() applies: each group on exactly one slot of its type that no
// job claimed or one instance of its type that no job owns and is not released; the type a share
// type of the GPU's model; 1 to its share count of holders, one share per job; one group per place.
Result<void> validate_share_groups(const Ledger& ledger, const Catalog& catalog);

}  // namespace vgpu
