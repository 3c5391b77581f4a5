// Which nodes prepare for a pending job. Every planner of a partition once planned for every job
// pending there, so one burst of demand made every node reshape, advertise and confirm a shrink
// at once, although Slurm starts each job on a few of them (at 256 nodes: ~50 RPCs per job,
// docs/benchmarks.md). The publisher sees all nodes and all demand, so it gives each job a few
// preparers and widens the set the longer the job waits, until, after a bounded wait, every
// usable node of the partition prepares for it as before.
//
// The preparers of a job are the first `preparer_count()` of its partition's usable nodes ranked
// by rendezvous hashing (highest-random-weight over the job's id and the node's name): a node
// once chosen stays chosen while the set widens, a node joining or leaving the partition moves
// only the jobs it ranks first for, and the publisher and a planner reading the whole view from
// a file compute the same sets without talking to each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu {

// The fewest preparers a job gets, and how long (in view periods) each width is tried before it
// doubles: 4 nodes, then 8 after 3 periods (15 s at the default 5 s), 16 after 6 ... all 256 of
// a partition after 18 periods (90 s).
inline constexpr std::size_t kMinPreparers = 4;
inline constexpr std::int64_t kWidenEveryPeriods = 3;
// How long (in view periods) a job whose preparers already offer what it asks keeps them
// instead of widening: 24 (2 minutes at 5 s). See preparers_for.
inline constexpr std::int64_t kOfferHoldPeriods = 24;

// How many of a partition's `usable_nodes` prepare for a job that needs `nodes_needed` nodes
// (its node count times its pending array tasks) and has waited `waited_s` seconds in a view of
// `period_s`: twice what it needs, at least kMinPreparers, doubled every kWidenEveryPeriods.
std::size_t preparer_count(std::int64_t nodes_needed, std::int64_t waited_s, std::int64_t period_s,
                           std::size_t usable_nodes);

// Whether a node in Slurm's `state` ("MIXED", "IDLE+DRAIN", ...) is one to prepare on: not one
// Slurm starts nothing on (down, draining, failed, not responding, powered down, not yet in the
// cluster). A reserved or planned node stays one: the job it is held for may be the one pending.
bool may_prepare(std::string_view state);

// The rendezvous weight of `node` for job `job_id`: a fixed 64-bit hash, the same in every
// process and release (not std::hash, which is neither).
std::uint64_t preparer_weight(std::string_view job_id, std::string_view node);

// The `count` preparers among `nodes` (indices into it, highest weight first).
std::vector<std::size_t> preparers(std::string_view job_id, const std::vector<std::string>& nodes, std::size_t count);

// The preparers of a job that needs `nodes_needed` nodes and has waited `waited_s`: those of
// preparer_count's width, unless a narrower set (its first width, doubling) already holds
// `nodes_needed` nodes that offer what it asks (`offers(index into nodes)`: Slurm shows the types
// free there). Such a job waits on Slurm (its scheduler has not come to it, its other resources
// are short), not on a layout, and widening would only make more nodes reshape for a job they will
// not run: on 22.05 each reshape is two registrations, and a loaded slurmctld that starts jobs
// late made every job's set widen at once. After kOfferHoldPeriods it widens whatever is offered,
// so a node that shows the type but that Slurm will not use (memory, features) delays the job,
// never strands it.
std::vector<std::size_t> preparers_for(std::string_view job_id, const std::vector<std::string>& nodes,
                                       std::int64_t nodes_needed, std::int64_t waited_s, std::int64_t period_s,
                                       const std::function<bool(std::size_t)>& offers);

}  // namespace vgpu
