#include "vgpu/node/demand_spread.h"

#include <algorithm>
#include <numeric>

namespace vgpu {
namespace {

// FNV-1a, then splitmix64's finalizer: FNV alone leaves names that differ in their last
// character ("gpu17", "gpu18") with weights too alike to rank fairly.
std::uint64_t fnv1a(std::uint64_t hash, std::string_view bytes) {
  for (unsigned char c : bytes) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::size_t preparer_count(std::int64_t nodes_needed, std::int64_t waited_s, std::int64_t period_s,
                           std::size_t usable_nodes) {
  const auto needed = static_cast<std::size_t>(std::max<std::int64_t>(nodes_needed, 1));
  std::size_t count = std::max(kMinPreparers, needed > usable_nodes ? usable_nodes : 2 * needed);
  const auto widen_s = std::max<std::int64_t>(period_s, 1) * kWidenEveryPeriods;
  for (std::int64_t step = std::max<std::int64_t>(waited_s, 0) / widen_s; step > 0 && count < usable_nodes; --step)
    count *= 2;
  return std::min(count, usable_nodes);
}

bool may_prepare(std::string_view state) {
  for (std::string_view never :
       {"DOWN", "DRAIN", "FAIL", "NOT_RESPONDING", "FUTURE", "INVAL", "POWERED_DOWN", "POWERING_DOWN"})
    if (state.find(never) != std::string_view::npos) return false;
  return true;
}

std::uint64_t preparer_weight(std::string_view job_id, std::string_view node) {
  auto hash = fnv1a(0xcbf29ce484222325ULL, job_id);
  hash = fnv1a(hash, std::string_view("\0", 1));  // "1"+"23" and "12"+"3" are different pairs
  return mix(fnv1a(hash, node));
}

std::vector<std::size_t> preparers(std::string_view job_id, const std::vector<std::string>& nodes, std::size_t count) {
  std::vector<std::pair<std::uint64_t, std::size_t>> ranked;
  ranked.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) ranked.emplace_back(preparer_weight(job_id, nodes[i]), i);
  count = std::min(count, ranked.size());
  // Equal weights (a 2^-64 chance) fall back to the node's place, so every process agrees.
  std::partial_sort(
      ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(count), ranked.end(),
      [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<std::size_t> chosen;
  chosen.reserve(count);
  for (std::size_t i = 0; i < count; ++i) chosen.push_back(ranked[i].second);
  return chosen;
}

std::vector<std::size_t> preparers_for(std::string_view job_id, const std::vector<std::string>& nodes,
                                       std::int64_t nodes_needed, std::int64_t waited_s, std::int64_t period_s,
                                       const std::function<bool(std::size_t)>& offers) {
  const auto widest = preparer_count(nodes_needed, waited_s, period_s, nodes.size());
  if (waited_s < std::max<std::int64_t>(period_s, 1) * kOfferHoldPeriods) {
    const auto needed = std::max<std::int64_t>(nodes_needed, 1);
    for (auto count = preparer_count(nodes_needed, 0, period_s, nodes.size()); count < widest; count *= 2) {
      auto chosen = preparers(job_id, nodes, count);
      if (std::ranges::count_if(chosen, offers) >= needed) return chosen;
    }
  }
  return preparers(job_id, nodes, widest);
}

}  // namespace vgpu
