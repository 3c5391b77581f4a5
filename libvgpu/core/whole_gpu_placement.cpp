#include "vgpu/core/whole_gpu_placement.h"

#include <algorithm>
#include <tuple>

namespace vgpu {

namespace {

std::pair<int, int> ordered(int a, int b) { return a < b ? std::pair{a, b} : std::pair{b, a}; }

constexpr int kSystemLevel = 50;  // NVML_TOPOLOGY_SYSTEM
constexpr std::size_t kExhaustiveUpTo = 12;

using Score = std::tuple<bool, int, int, std::vector<int>>;  // not one domain, PCIe, peers broken, GPUs

Score score_of(const GpuLinks& links, const std::vector<int>& chosen, const std::vector<int>& free) {
  bool all_nvlinked = true;
  int pcie = 0;
  for (std::size_t i = 0; i < chosen.size(); ++i)
    for (std::size_t j = i + 1; j < chosen.size(); ++j) {
      all_nvlinked = all_nvlinked && links.nvlinked(chosen[i], chosen[j]);
      pcie += links.pcie(chosen[i], chosen[j]);
    }
  int broken = 0;
  for (int c : chosen)
    for (int f : free)
      if (std::ranges::find(chosen, f) == chosen.end() && links.nvlinked(c, f)) ++broken;
  return {!all_nvlinked, pcie, broken, chosen};
}

// Every `count`-subset of `free`, best kept in `best`.
void score_subsets(const GpuLinks& links, const std::vector<int>& free, int count, std::size_t next,
                   std::vector<int>& chosen, std::optional<Score>& best) {
  if (static_cast<int>(chosen.size()) == count) {
    auto s = score_of(links, chosen, free);
    if (!best || s < *best) best = std::move(s);
    return;
  }
  for (std::size_t i = next; i < free.size(); ++i) {
    chosen.push_back(free[i]);
    score_subsets(links, free, count, i + 1, chosen, best);
    chosen.pop_back();
  }
}

// From each start, add the free GPU with the most NVLinks into the set so far (then the closest).
std::optional<Score> greedy_sets(const GpuLinks& links, const std::vector<int>& free, int count) {
  std::optional<Score> best;
  for (int start : free) {
    std::vector<int> chosen{start};
    while (static_cast<int>(chosen.size()) < count) {
      std::optional<std::tuple<int, int, int>> pick;  // -links into the set, PCIe, GPU
      for (int f : free) {
        if (std::ranges::find(chosen, f) != chosen.end()) continue;
        int linked = 0, pcie = 0;
        for (int c : chosen) {
          linked += links.nvlinked(c, f) ? 1 : 0;
          pcie += links.pcie(c, f);
        }
        std::tuple<int, int, int> t{-linked, pcie, f};
        if (!pick || t < *pick) pick = t;
      }
      chosen.push_back(std::get<2>(*pick));
    }
    std::ranges::sort(chosen);
    auto s = score_of(links, chosen, free);
    if (!best || s < *best) best = std::move(s);
  }
  return best;
}

}  // namespace

bool GpuLinks::nvlinked(int a, int b) const { return nvlink.contains(ordered(a, b)); }

int GpuLinks::pcie(int a, int b) const {
  auto key = ordered(a, b);
  for (const auto& [pair, level] : pcie_level)
    if (pair == key) return level;
  return kSystemLevel;
}

std::optional<WholeGpuChoice> choose_whole_gpus(const GpuLinks& links, const std::vector<int>& free, int count) {
  if (count <= 0 || static_cast<int>(free.size()) < count) return std::nullopt;
  std::vector<int> sorted = free;
  std::ranges::sort(sorted);
  std::optional<Score> best;
  if (sorted.size() <= kExhaustiveUpTo) {
    std::vector<int> chosen;
    score_subsets(links, sorted, count, 0, chosen, best);
  } else {
    best = greedy_sets(links, sorted, count);
  }
  return WholeGpuChoice{std::get<3>(*best), !std::get<0>(*best)};
}

}  // namespace vgpu
