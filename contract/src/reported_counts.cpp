#include "vgpu/contract/reported_counts.h"

#include <limits>
#include <map>

namespace vgpu::contract {

namespace {

ReportedCounts nothing_placeable(std::string problem, std::uint64_t configured_total,
                                 const std::set<std::string, std::less<>>& previously_reported) {
  ReportedCounts out;
  out.free = configured_total;
  out.problem = std::move(problem);
  for (const auto& type : previously_reported) out.advertised.push_back({type, 0});
  return out;
}

}  // namespace

ReportedCounts reported_counts(const Result<Advertisement>& advertisement, std::uint64_t configured_total,
                               const std::set<std::string, std::less<>>& previously_reported) {
  if (!advertisement) return nothing_placeable(advertisement.error().message, configured_total, previously_reported);
  ReportedCounts out;
  std::uint64_t sum = 0;
  for (const auto& [type, count] : advertisement->counts) {
    if (count > std::numeric_limits<std::uint64_t>::max() - sum) {
      return nothing_placeable("advertised counts overflow", configured_total, previously_reported);
    }
    sum += count;
  }
  if (sum > configured_total) {
    return nothing_placeable("advertised " + std::to_string(sum) + " instances but slurm.conf declares a total of " +
                                 std::to_string(configured_total) + " (raise vgpu:free in slurm.conf)",
                             configured_total, previously_reported);
  }
  std::map<std::string, std::uint64_t, std::less<>> merged;
  for (const auto& type : previously_reported) merged.emplace(type, 0);
  for (const auto& [type, count] : advertisement->counts) merged[type] = count;
  for (const auto& [type, count] : merged) out.advertised.push_back({type, count});
  out.free = configured_total - sum;
  return out;
}

}  // namespace vgpu::contract
