// Reservations for wide requests: a job that needs several whole GPUs on a node, or several nodes,
// never fits while small jobs keep taking whatever frees up. Once it has waited past the starvation
// limit, some nodes hold back GPUs for it until it fits, like a backfill reservation, and never
// through a Slurm DRAIN. This rule decides which nodes. One cluster-wide caller applies it (the
// demand publisher, `vgpu-planner --publish-demand`, and the trace simulator's replay), so that
// every node's planner follows one choice instead of each guessing its own.
//
// Pure: no I/O, deterministic for the same inputs.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace vgpu {

// A starving wide request, in Slurm's order (priority, then age).
struct WideRequest {
  std::string job;
  int nodes = 1;          // nodes the job needs
  int gpus_per_node = 1;  // GPUs it needs on each (0: unknown to the caller, any node will do)
};

// A node that may hold back GPUs, in Slurm's node order. `busy` is how much of the node jobs hold
// now, in any unit the caller uses for every node alike (GPUs in use, GRES slots in use): the
// least busy node drains soonest.
struct ReservationCandidate {
  std::string node;
  int gpus = 0;  // GPUs the node has for the request (0: unknown, taken as enough)
  int busy = 0;
};

struct WideReservation {
  std::string job;
  std::vector<std::string> nodes;
  bool operator==(const WideReservation&) const = default;
};

// One reservation per request that can have one, in the requests' order. A node holds for at most
// one request (an earlier request's nodes are gone for later ones). A request keeps its previous
// nodes while they all remain candidates and are not taken (nodes that have half drained must not
// be given up for a fresh choice); otherwise it gets the least busy candidates with enough GPUs,
// Slurm's node order breaking ties. A request that cannot get all its nodes gets none: holding
// part of what it needs would cost others without ever letting it start.
[[nodiscard]] std::vector<WideReservation> choose_wide_reservations(std::span<const WideRequest> requests,
                                                                    std::span<const ReservationCandidate> candidates,
                                                                    std::span<const WideReservation> previous);

}  // namespace vgpu
