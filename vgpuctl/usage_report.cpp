#include "usage_report.h"

#include <algorithm>

namespace vgpuctl {

UsageReport build_usage_report(const std::vector<Tenancy>& tenancies, const std::map<std::string, int>& capacity,
                               std::int64_t since, std::int64_t until, int buckets) {
  UsageReport r;
  buckets = std::max(1, buckets);
  if (until <= since) until = since + 1;
  r.since = since;
  r.until = until;
  r.bucket_seconds = std::max<std::int64_t>(1, (until - since + buckets - 1) / buckets);
  const auto n = static_cast<std::size_t>((until - since + r.bucket_seconds - 1) / r.bucket_seconds);
  for (std::size_t b = 0; b < n; ++b)
    r.bucket_starts.push_back(since + static_cast<std::int64_t>(b) * r.bucket_seconds);
  for (const auto& [node, slices] : capacity)
    if (slices > 0) r.node_utilisation[node].assign(n, 0.0);
  for (const auto& t : tenancies) {
    auto& profile = r.profile_instances[t.profile];
    if (profile.empty()) profile.assign(n, 0.0);
    auto node = r.node_utilisation.find(t.node);
    const std::int64_t from = std::max(t.start, since), to = std::min(t.end, until);
    if (to <= from) continue;
    r.profile_instance_hours[t.profile] += static_cast<double>(to - from) / 3600.0;
    for (std::size_t b = 0; b < n; ++b) {
      const std::int64_t lo = r.bucket_starts[b], hi = std::min(lo + r.bucket_seconds, until);
      const std::int64_t overlap = std::min(to, hi) - std::max(from, lo);
      if (overlap <= 0) continue;
      const double share = static_cast<double>(overlap) / static_cast<double>(hi - lo);
      profile[b] += share;
      if (node != r.node_utilisation.end()) node->second[b] += share * t.compute_slices / capacity.at(t.node);
    }
  }
  for (const auto& [node, series] : r.node_utilisation) {
    double weighted = 0;
    for (std::size_t b = 0; b < n; ++b)
      weighted +=
          series[b] * static_cast<double>(std::min(r.bucket_starts[b] + r.bucket_seconds, until) - r.bucket_starts[b]);
    r.node_mean[node] = weighted / static_cast<double>(until - since);
  }
  return r;
}

}  // namespace vgpuctl
