// What a fake GPU scope (a MIG GPU instance, or a whole GPU without MIG) is busy with, and the
// counters GPM samples read from it. The real hardware counts SM-active cycles and DRAM traffic;
// the fake integrates the utilisation a test set (fake-nvml-load) over time, so a metric between
// two samples is the time-weighted mean of what was set in between, as on the device.
#pragma once

#include <cstdint>

namespace fakenvml {

struct Activity {
  double sm_pct = 0, dram_pct = 0;  // what the scope is doing since `since_ns`
  std::uint64_t memory_used_mib = 0;
  std::int64_t since_ns = 0;              // CLOCK_MONOTONIC, shared by every process on the node
  double sm_pct_ns = 0, dram_pct_ns = 0;  // integral of the percentages up to since_ns
};

struct Counters {
  std::int64_t at_ns = 0;
  double sm_pct_ns = 0, dram_pct_ns = 0;
};

std::int64_t monotonic_ns();
Counters counters_at(const Activity& a, std::int64_t now_ns);
// Folds what ran so far into the integral, then runs at the new percentages from `now_ns`.
void set_activity(Activity& a, double sm_pct, double dram_pct, std::uint64_t memory_used_mib, std::int64_t now_ns);
// The mean percentage between two counter readings of the same scope; false unless b is later.
bool mean_between(const Counters& a, const Counters& b, double& sm_pct, double& dram_pct);

}  // namespace fakenvml
