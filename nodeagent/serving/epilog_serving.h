// Whether the planner serves epilogs. It serves one hook at a time, so an epilog that scrubs inside
// it (0.7 s per instance on an H100) holds every other hook behind it and every other job's scrub
// behind its own. An epilog running on its own scrubs its job's instances while other epilogs scrub
// theirs (one cleanup lock per instance, libvgpu/node/node_lock.h); it pays NVML's start-up
// instead (23-59 ms measured on H100 nodes, docs/benchmarks.md), much less than a scrub. So after
// a served epilog slower than kSlow the planner leaves epilogs to themselves for kPause, then
// serves one again to see whether releases are still slow.
#pragma once

#include <chrono>

namespace vgpu::agent {

class EpilogServing {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kSlow = std::chrono::milliseconds(250);
  static constexpr auto kPause = std::chrono::minutes(10);

  [[nodiscard]] bool serving(Clock::time_point now) const { return now >= paused_until_; }
  // A served epilog took `took`; true when that starts a pause (worth one line in the log).
  bool served(Clock::duration took, Clock::time_point now) {
    if (took < kSlow) return false;
    paused_until_ = now + kPause;
    return true;
  }

 private:
  Clock::time_point paused_until_{};
};

}  // namespace vgpu::agent
