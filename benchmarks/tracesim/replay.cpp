#include "replay.h"

#include "replay_empty_waits.h"
#include "replay_reservations.h"

#include <algorithm>
#include <ranges>
#include <cmath>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <tuple>
#include <utility>

namespace vgpu::bench {
namespace {

struct Job {
  int task = 0;
  long long arrival = 0;
  long long duration = 0;
};

struct Running {
  long long finish = 0;
  std::size_t job = 0;
  bool operator>(const Running& o) const { return std::tie(finish, job) > std::tie(o.finish, o.job); }
};

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] * (1 - frac) + sorted[hi] * frac;
}

ClassWaits class_waits(std::vector<double> waits, int never_started) {
  ClassWaits c;
  c.started = static_cast<int>(waits.size());
  c.never_started = never_started;
  if (waits.empty()) return c;
  std::ranges::sort(waits);
  double sum = 0;
  for (double w : waits) sum += w;
  c.mean_s = sum / static_cast<double>(waits.size());
  c.p50_s = quantile(waits, 0.5);
  c.p95_s = quantile(waits, 0.95);
  c.max_s = waits.back();
  return c;
}

// Mean, p95, max and the CDF of every start's wait.
void summarize_waits(std::vector<double> sorted, ReplayOutcome& o) {
  std::ranges::sort(sorted);
  double sum = 0;
  for (double w : sorted) sum += w;
  if (!sorted.empty()) {
    o.mean_wait_s = sum / static_cast<double>(sorted.size());
    o.p95_wait_s = quantile(sorted, 0.95);
    o.max_wait_s = sorted.back();
    for (int i = 0; i <= 100; ++i) o.wait_quantiles_s.push_back(quantile(sorted, i / 100.0));
  }
}

// Span, throughput and time-weighted utilisation, overall and per bucket of the span, from the
// (time, allocated slices from then on) steps.
void summarize_utilisation(const std::vector<std::pair<long long, long long>>& steps, long long first,
                           long long last_finish, int util_buckets, ReplayOutcome& o) {
  double span = static_cast<double>(last_finish - first);
  o.span_h = span / 3600.0;
  if (span > 0) o.completed_per_hour = o.started / o.span_h;
  auto buckets = static_cast<std::size_t>(std::max(1, util_buckets));
  std::vector<double> area(buckets, 0.0);
  double total_area = 0, cap = static_cast<double>(o.capacity_slices);
  double width = span > 0 ? span / static_cast<double>(buckets) : 1;
  for (std::size_t i = 0; i + 1 < steps.size(); ++i) {
    double a = static_cast<double>(steps[i].first - first);
    double b = static_cast<double>(steps[i + 1].first - first);
    double level = static_cast<double>(steps[i].second);
    total_area += level * (b - a);
    if (b <= a) continue;
    // Overlap of [a, b) with each bucket it touches; indices, not float stepping, so rounding at a
    // bucket edge can never stall the walk. The last bucket also takes anything past the span.
    std::size_t ka = std::min(buckets - 1, static_cast<std::size_t>(a / width));
    std::size_t kb = std::min(buckets - 1, static_cast<std::size_t>(b / width));
    for (std::size_t k = ka; k <= kb; ++k) {
      double lo = std::max(a, static_cast<double>(k) * width);
      double hi = k == buckets - 1 ? b : std::min(b, static_cast<double>(k + 1) * width);
      if (hi > lo) area[k] += level * (hi - lo);
    }
  }
  if (span > 0) o.mean_slice_util = total_area / (span * cap);
  for (std::size_t k = 0; k < buckets && span > 0; ++k) {
    o.util_time_h.push_back((static_cast<double>(k) + 0.5) * width / 3600.0);
    o.util.push_back(area[k] / (width * cap));
  }
}

// The places a node's sticky plan still offers after their instances' tasks ended
// (ReplayOptions::latency_only_for_new_slots). A shared instance is such a place once its last
// share ended; a share joining an open one is served at once; an empty GPU offers one whole-GPU
// instance (the idle layout of a training partition).
class StickySlots {
 public:
  void released(const Allocation& a) {
    for (const auto& p : a.parts) {
      if (p.share_milli != 0) {
        auto it = open_shared_.find(key(p));
        if (it != open_shared_.end() && --it->second > 0) continue;  // other shares still on it
        if (it != open_shared_.end()) open_shared_.erase(it);
      }
      slots_.push_back(p);
    }
  }
  // Whether every instance of `a` found an offered slot of its profile (or, for a share, an open
  // instance); those taken leave, and any other offered slot its instances overlap goes (the plan
  // changed there).
  // `whole_and_alone(part)`: the part is a whole-GPU instance, alone on its GPU now, so the GPU
  // was empty and offered it (an idle layout of one whole-GPU instance).
  template <class WholeAndAlone>
  bool take(const Allocation& a, WholeAndAlone whole_and_alone) {
    bool warm = !a.parts.empty();
    for (const auto& p : a.parts) {
      if (p.share_milli != 0 && open_shared_[key(p)]++ > 0) continue;
      if (p.share_milli == 0 && whole_and_alone(p)) {
        std::erase_if(slots_, [&](const AllocationPart& s) { return s.gpu == p.gpu; });
        continue;
      }
      auto same = [&](const AllocationPart& s) {
        return s.gpu == p.gpu && s.profile == p.profile && s.where == p.where;
      };
      auto it = std::ranges::find_if(slots_, same);
      if (it == slots_.end())
        it = std::ranges::find_if(slots_, [&](const AllocationPart& s) { return s.profile == p.profile; });
      if (it == slots_.end()) warm = false;
      else
        slots_.erase(it);
      std::erase_if(slots_, [&](const AllocationPart& s) {
        return s.gpu == p.gpu && s.where.start < p.where.end() && p.where.start < s.where.end();
      });
    }
    return warm;
  }

 private:
  static std::tuple<int, int, int> key(const AllocationPart& p) { return {p.gpu, p.where.start, p.where.size}; }
  std::vector<AllocationPart> slots_;
  std::map<std::tuple<int, int, int>, int> open_shared_;  // (gpu, placement): its shares now
};

}  // namespace

const char* task_class_name(TaskClass c) {
  switch (c) {
    case TaskClass::sub_gpu: return "sub_gpu";
    case TaskClass::single_gpu: return "single_gpu";
    case TaskClass::multi_gpu: return "multi_gpu";
  }
  return "?";
}

TaskClass task_class(const MappedTask& t) {
  if (t.kind == TaskKind::sharing) return TaskClass::sub_gpu;
  return t.gpus > 1 ? TaskClass::multi_gpu : TaskClass::single_gpu;
}

ReplayOutcome run_replay(Packer& packer, const Trace& trace, const std::vector<MappedTask>& tasks,
                         const ReplayOptions& options) {
  const auto [util_buckets, jitter_seed, jitter_s, reserve_after_s, start_latency_s, only_new_slots] = options;
  ReplayOutcome o;
  o.capacity_slices = packer.capacity_slices();
  std::vector<Job> jobs;
  for (const auto& t : tasks) {
    if (t.kind != TaskKind::sharing && t.kind != TaskKind::whole_gpu) continue;
    const TraceTask& tt = trace.tasks[static_cast<std::size_t>(t.trace_index)];
    if (!tt.scheduled_s) {
      ++o.not_run_in_trace;
      continue;
    }
    jobs.push_back({static_cast<int>(&t - tasks.data()), tt.creation_s, tt.deletion_s - *tt.scheduled_s});
    o.longest_run_s = std::max(o.longest_run_s, jobs.back().duration);
  }
  if (jitter_seed > 0 && jitter_s > 0) {
    std::mt19937_64 rng(jitter_seed);
    std::uniform_int_distribution<long long> offset(-jitter_s, jitter_s);
    for (auto& j : jobs) j.arrival = std::max(0LL, j.arrival + offset(rng));
  }
  o.tasks = static_cast<int>(jobs.size());
  if (jobs.empty()) return o;
  std::ranges::stable_sort(jobs, {}, &Job::arrival);

  std::vector<std::optional<Allocation>> held(jobs.size());
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running;
  std::vector<long long> running_finish(jobs.size(), 0);
  ReplayReservations reservations(packer.shape());
  std::vector<double> waits;
  std::array<std::vector<double>, kTaskClasses> class_waits_s;
  StickySlots sticky;
  EmptyGpuWaits empty_gpus(packer.shape().gpus());
  std::vector<char> waited_for_empty(jobs.size(), 0);
  auto task_of = [&](std::size_t j) -> const MappedTask& { return tasks[static_cast<std::size_t>(jobs[j].task)]; };
  // Placed at `now`: it runs from now + its start latency, holding its instances from now.
  auto started_at = [&](std::size_t j, long long now, TaskClass c) {
    empty_gpus.started(*held[j], task_of(j));
    const bool warm = only_new_slots && sticky.take(*held[j], [&](const AllocationPart& p) {
      return p.profile->compute_slices == packer.model().compute_slices && !p.switched_mode &&
             packer.gpu_used_slices(p.gpu) == p.profile->compute_slices;
    });
    const long long latency = warm ? 0 : start_latency_s;
    running_finish[j] = now + latency + jobs[j].duration;
    running.push({running_finish[j], j});
    reservations.started(*held[j], running_finish[j]);
    waits.push_back(static_cast<double>(now + latency - jobs[j].arrival));
    class_waits_s[static_cast<std::size_t>(c)].push_back(waits.back());
  };
  std::vector<std::size_t> waiting;
  std::vector<std::pair<long long, long long>> steps;  // (time, allocated slices from then on)
  long long first = jobs.front().arrival, last_finish = first;
  std::size_t next = 0;

  while (next < jobs.size() || !running.empty()) {
    long long now = next < jobs.size() ? jobs[next].arrival : running.top().finish;
    if (!running.empty()) now = std::min(now, running.top().finish);
    while (!running.empty() && running.top().finish <= now) {
      std::size_t j = running.top().job;
      running.pop();
      reservations.ended(*held[j], running_finish[j]);
      empty_gpus.ended(*held[j], task_of(j));
      if (only_new_slots) sticky.released(*held[j]);
      packer.release(*held[j]);
      held[j].reset();
      last_finish = std::max(last_finish, now);
    }
    while (next < jobs.size() && jobs[next].arrival <= now) waiting.push_back(next++);

    // Reservations for wide tasks waiting past the limit, in arrival order; each holder tries its
    // node first.
    if (reserve_after_s >= 0) {
      std::vector<std::pair<std::size_t, int>> starving;
      for (std::size_t j : waiting) {
        const MappedTask& t = tasks[static_cast<std::size_t>(jobs[j].task)];
        if (t.gpus > 1 && now - jobs[j].arrival > reserve_after_s) starving.emplace_back(j, t.gpus);
      }
      o.reservations += reservations.update(packer, now, starving);
      for (const auto& [j, gpus] : starving) {
        if (!reservations.has(j)) continue;
        reservations.hold_for(packer, now + jobs[j].duration, j);
        if (auto a = packer.allocate(tasks[static_cast<std::size_t>(jobs[j].task)])) {
          held[j] = std::move(*a);
          started_at(j, now, TaskClass::multi_gpu);
          std::erase(waiting, j);
          reservations.forget(j);
        }
      }
    }

    // One pass in arrival order. A shape that failed cannot fit later in the same pass (space
    // only shrinks), so it is skipped: this keeps long queues cheap. A share's shape is its size.
    // Each failed shape keeps whether it waits for GPUs to empty, which the same shape shares.
    std::map<std::tuple<const Profile*, int, long long, std::vector<char>>, bool> failed;
    std::vector<std::size_t> still;
    for (std::size_t j : waiting) {
      const MappedTask& t = tasks[static_cast<std::size_t>(jobs[j].task)];
      if (reservations.has(j)) {  // a holder just tried its node
        still.push_back(j);
        continue;
      }
      auto shape =
          std::make_tuple(t.profile, t.gpus, t.requested_milli, reservations.hold_for(packer, now + jobs[j].duration));
      if (auto it = failed.find(shape); it != failed.end()) {
        waited_for_empty[j] |= static_cast<char>(it->second);
        still.push_back(j);
        continue;
      }
      if (auto a = packer.allocate(t)) {
        held[j] = std::move(*a);
        started_at(j, now, task_class(t));
      } else {
        const bool for_empty = empty_gpus.waits_for_empty_gpus(packer, t);
        failed.emplace(shape, for_empty);
        waited_for_empty[j] |= static_cast<char>(for_empty);
        still.push_back(j);
      }
    }
    waiting = std::move(still);
    reservations.lift_holds(packer);
    steps.emplace_back(now, packer.allocated_slices());
    o.peak_allocated_slices = std::max(o.peak_allocated_slices, packer.allocated_slices());
  }
  o.started = static_cast<int>(waits.size());
  o.never_started = static_cast<int>(waiting.size());
  std::array<int, kTaskClasses> stuck{};
  for (std::size_t j : waiting)
    ++stuck[static_cast<std::size_t>(task_class(tasks[static_cast<std::size_t>(jobs[j].task)]))];
  for (std::size_t c = 0; c < kTaskClasses; ++c) o.by_class[c] = class_waits(std::move(class_waits_s[c]), stuck[c]);
  o.mode_switches = packer.mode_switches();
  o.waited_for_empty_gpu = static_cast<int>(std::ranges::count(waited_for_empty, 1));
  summarize_waits(waits, o);
  summarize_utilisation(steps, first, last_finish, util_buckets, o);
  return o;
}

}  // namespace vgpu::bench
