#include "activity.h"

#include <ctime>

namespace fakenvml {

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Counters counters_at(const Activity& a, std::int64_t now_ns) {
  // A scope nobody set yet has been idle since it was created.
  auto ran = static_cast<double>(a.since_ns == 0 || now_ns < a.since_ns ? 0 : now_ns - a.since_ns);
  return {now_ns, a.sm_pct_ns + a.sm_pct * ran, a.dram_pct_ns + a.dram_pct * ran};
}

void set_activity(Activity& a, double sm_pct, double dram_pct, std::uint64_t memory_used_mib, std::int64_t now_ns) {
  Counters c = counters_at(a, now_ns);
  a.sm_pct_ns = c.sm_pct_ns;
  a.dram_pct_ns = c.dram_pct_ns;
  a.since_ns = now_ns;
  a.sm_pct = sm_pct;
  a.dram_pct = dram_pct;
  a.memory_used_mib = memory_used_mib;
}

bool mean_between(const Counters& a, const Counters& b, double& sm_pct, double& dram_pct) {
  if (b.at_ns <= a.at_ns) return false;
  auto span = static_cast<double>(b.at_ns - a.at_ns);
  sm_pct = (b.sm_pct_ns - a.sm_pct_ns) / span;
  dram_pct = (b.dram_pct_ns - a.dram_pct_ns) / span;
  return true;
}

}  // namespace fakenvml
