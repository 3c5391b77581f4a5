#include "reported_counts.h"

#include <limits>

namespace vgpu::gres {

ReportedCounts reported_counts(const Result<Advertisement>& advertisement, std::uint64_t configured_total) {
  ReportedCounts out;
  out.free = configured_total;
  if (!advertisement) {
    out.problem = advertisement.error().message;
    return out;
  }
  std::uint64_t sum = 0;
  for (const auto& [type, count] : advertisement->counts) {
    if (count > std::numeric_limits<std::uint64_t>::max() - sum) {
      out.problem = "advertised counts overflow";
      return out;
    }
    sum += count;
  }
  if (sum > configured_total) {
    out.problem = "advertised " + std::to_string(sum) + " instances but slurm.conf declares a total of " +
                  std::to_string(configured_total) + " (raise vgpu:free in slurm.conf)";
    return out;
  }
  for (const auto& [type, count] : advertisement->counts) out.advertised.push_back({type, count});
  out.free = configured_total - sum;
  return out;
}

}  // namespace vgpu::gres
