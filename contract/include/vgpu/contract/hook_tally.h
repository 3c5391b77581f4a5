// hook-tally.json: what the node's prolog and epilog runs add up to, for the metrics the planner
// exports (docs/metrics.md): how long each hook and each instance scrub took (histograms), scrubs
// by outcome, and the jobs the prolog cancelled or requeued, by class. Version 2 added the scrubs;
// a version 1 file reads as a tally without them. Every hook adds itself under hook-tally.lock; the planner only
// reads. Counters since the file was created: a lost or corrupt file starts again from zero,
// which Prometheus reads as a counter reset.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"

namespace vgpu::contract {

inline constexpr std::string_view kHookTallyFormat = "slurm-vgpu-hook-tally";
inline constexpr std::uint64_t kHookTallyVersion = 2;

// Upper bounds (seconds) of the duration buckets; a last bucket takes everything above.
inline constexpr std::array<double, 11> kHookSecondsBounds = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

// Why the prolog cancelled a job: a small fixed set, so it can be a metric label.
//   policy       the request breaks the partition's policy, or names no served partition/pool
//   node         the node cannot serve vgpu (no MIG GPU), or the prolog crashed twice
//   hardware     creating an instance failed
//   confinement  the instances could not be given to the job's user (no uid, a file refused)
//   no_room      no room after all, and Slurm would not requeue the job
inline constexpr std::array<std::string_view, 5> kCancelClasses = {"policy", "node", "hardware", "confinement",
                                                                   "no_room"};
bool is_cancel_class(std::string_view c);

// What one instance's scrub came to (whoever ran it: an epilog, a prolog or a planner round
// finishing released instances):
//   clean        scrubbed; the instance may serve the next job
//   failed       the scrub ran and failed: the instance is quarantined
//   unavailable  no scrub could run (no vgpu-scrub, no CUDA): quarantined or destroyed, per policy
inline constexpr std::array<std::string_view, 3> kScrubOutcomes = {"clean", "failed", "unavailable"};
bool is_scrub_outcome(std::string_view o);

// The histograms a tally keeps: the two hooks, and every scrub of one instance.
inline constexpr std::array<std::string_view, 3> kTimedSteps = {"prolog", "epilog", "scrub"};

struct HookDurations {
  std::array<std::uint64_t, kHookSecondsBounds.size() + 1> buckets{};  // per bucket, not cumulative
  std::uint64_t count = 0;
  double sum_seconds = 0;
  void observe(double seconds);
  bool operator==(const HookDurations&) const = default;
};

struct HookTally {
  std::string node;
  std::map<std::string, HookDurations, std::less<>> hooks;      // by kTimedSteps
  std::map<std::string, std::uint64_t, std::less<>> cancelled;  // by kCancelClasses
  std::uint64_t requeued = 0;
  std::map<std::string, std::uint64_t, std::less<>> scrubs;  // by kScrubOutcomes
  bool operator==(const HookTally&) const = default;
};

std::string render_hook_tally(const HookTally& tally);
Result<HookTally> parse_hook_tally(std::string_view text, std::string_view expected_node);
std::string hook_tally_path(std::string_view state_dir, std::string_view node);

}  // namespace vgpu::contract
