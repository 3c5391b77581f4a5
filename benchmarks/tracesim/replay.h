// Replay with departures: each task that ran in the real cluster arrives at its creation_time and
// holds its instances for as long as it ran there (deletion_time - scheduled_time). Waiting tasks
// are served first-come-first-served with backfill (a later task may start when an earlier one does
// not fit, as Slurm's backfill allows); the wait is start - creation_time.
#pragma once

#include <vector>

#include "packer.h"
#include "task_mapping.h"
#include "trace_csv.h"

namespace vgpu::bench {

struct ReplayOutcome {
  int tasks = 0;             // GPU tasks that ran in the trace
  int started = 0;
  int never_started = 0;     // still waiting when nothing else could change (e.g. no such instance)
  int not_run_in_trace = 0;  // never scheduled in the real cluster: no duration to replay
  double mean_wait_s = 0;
  double p95_wait_s = 0;
  double max_wait_s = 0;
  double span_h = 0;             // first arrival to last finish
  double completed_per_hour = 0;
  double mean_slice_util = 0;    // time-weighted allocated slices / capacity over the span
  long long peak_allocated_slices = 0;
  long long capacity_slices = 0;
  std::vector<double> util_time_h;  // bucket midpoints, hours from the first arrival
  std::vector<double> util;         // slice utilisation per bucket (0..1)
  std::vector<double> wait_quantiles_s;  // wait at quantile i/100, i = 0..100 (empty if none)
};

ReplayOutcome run_replay(Packer& packer, const Trace& trace, const std::vector<MappedTask>& tasks,
                         int util_buckets = 200);

}  // namespace vgpu::bench
