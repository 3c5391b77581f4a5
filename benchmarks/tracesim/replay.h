// Replay with departures: each task that ran in the real cluster arrives at its creation_time and
// holds its instances for as long as it ran there (deletion_time - scheduled_time). Waiting tasks
// are served first-come-first-served with backfill (a later task may start when an earlier one does
// not fit, as Slurm's backfill allows); the wait is start - creation_time. A multi-GPU task that
// has waited past a limit may reserve a node (ReplayOptions::reserve_after_s).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "packer.h"
#include "task_mapping.h"
#include "trace_csv.h"

namespace vgpu::bench {

// Waits of one class of task: shared sub-GPU (a fraction of one GPU), single GPU, multi-GPU.
enum class TaskClass { sub_gpu, single_gpu, multi_gpu };
inline constexpr int kTaskClasses = 3;
const char* task_class_name(TaskClass c);
TaskClass task_class(const MappedTask& t);

struct ClassWaits {
  int started = 0;
  int never_started = 0;
  double mean_s = 0, p50_s = 0, p95_s = 0, max_s = 0;
};

struct ReplayOutcome {
  int tasks = 0;  // GPU tasks that ran in the trace
  int started = 0;
  int never_started = 0;     // still waiting when nothing else could change (e.g. no such instance)
  int not_run_in_trace = 0;  // never scheduled in the real cluster: no duration to replay
  double mean_wait_s = 0;
  double p95_wait_s = 0;
  double max_wait_s = 0;
  double span_h = 0;  // first arrival to last finish
  double completed_per_hour = 0;
  double mean_slice_util = 0;  // time-weighted allocated slices / capacity over the span
  long long peak_allocated_slices = 0;
  long long capacity_slices = 0;
  std::vector<double> util_time_h;       // bucket midpoints, hours from the first arrival
  std::vector<double> util;              // slice utilisation per bucket (0..1)
  std::vector<double> wait_quantiles_s;  // wait at quantile i/100, i = 0..100 (empty if none)
  std::array<ClassWaits, kTaskClasses> by_class;
  long long longest_run_s = 0;   // the longest task duration replayed
  int reservations = 0;          // wide tasks that got a reservation (0 without reserve_after_s)
  long long mode_switches = 0;   // GPUs' MIG mode switches (MIG on demand; gpu_modes.h)
  int waited_for_empty_gpu = 0;  // tasks refused at least once for want of empty GPUs (replay_empty_waits.h)
};

struct ReplayOptions {
  int util_buckets = 200;
  // > 0: every arrival moves by a uniform offset in [-jitter_s, +jitter_s] (never before 0), the
  // same offsets for every policy with the same seed; 0 replays the trace's times.
  std::uint64_t jitter_seed = 0;
  long long jitter_s = 0;
  // >= 0: a multi-GPU task waiting longer than this gets a reservation (production's rule,
  // vgpu/core/wide_reservation.h): the chosen node holds back the GPUs it needs, those with the
  // least work on them, until it starts. < 0: no reservations (plain FCFS with backfill).
  long long reserve_after_s = -1;
  // What a start costs a policy whose nodes change their layout for it (the planners): the task
  // holds its instances from its placement on and starts this much later -- a planner round, the
  // split reaching Slurm, the instance's creation. Static layouts and whole GPUs pay nothing
  // (their instances exist before the job).
  long long start_latency_s = 0;
  // Which starts pay it. false: every one (an upper bound). true: only those production could not
  // serve from a slot its sticky plan still offers: a released instance's place stays offered
  // until a later placement on its GPU overlaps it, and a start whose every instance finds such a
  // slot of its profile (on its GPU, else anywhere: Slurm would have sent it there) takes it and
  // pays nothing, as does a whole-GPU instance on an empty GPU (an idle layout of one) unless the
  // GPU had to change MIG mode for it. Other idle layouts and prepared slots are not modelled, so
  // this still charges more than production.
  bool latency_only_for_new_slots = false;
};

ReplayOutcome run_replay(Packer& packer, const Trace& trace, const std::vector<MappedTask>& tasks,
                         const ReplayOptions& options = {});

}  // namespace vgpu::bench
