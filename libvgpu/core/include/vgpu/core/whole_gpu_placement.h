// Which whole GPUs of a node a multi-GPU request gets. Training all-reduces across its GPUs, and
// NCCL is fastest over NVLink (a bridge or NVSwitch), slower over PCIe peer to peer, slowest
// through host memory: the GPUs must be of one NVLink domain where the node has several (four
// H200 NVL in two bridged pairs: a request for two gets a bridged pair, never one GPU of each).
// Pure: the backend reads the links (NVML's P2P status and topology), this only chooses.
#pragma once

#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace vgpu {

// How a node's GPUs reach each other, by index.
struct GpuLinks {
  int gpu_count = 0;
  std::set<std::pair<int, int>> nvlink;  // pairs (lower index first) with P2P over NVLink
  // NVML's PCIe common-ancestor level per pair, lower first (NVML_TOPOLOGY_SINGLE 10 ... SYSTEM
  // 50); a pair not listed counts as SYSTEM, the farthest.
  std::vector<std::pair<std::pair<int, int>, int>> pcie_level;

  [[nodiscard]] bool nvlinked(int a, int b) const;
  [[nodiscard]] int pcie(int a, int b) const;
};

struct WholeGpuChoice {
  std::vector<int> gpus;   // ascending
  bool one_nvlink_domain;  // every pair of them has P2P over NVLink
};

// The `count` GPUs among `free` to give a request, or nullopt when fewer are free. In order of
// preference: every pair NVLink-connected; the closest on PCIe; the fewest free NVLink peers left
// behind outside the choice (a single GPU goes where it breaks no free pair, so the pairs stay
// whole for the next multi-GPU job); the lowest indexes. Nodes have at most a few dozen GPUs, and
// every subset is scored while that is cheap (up to 12 free GPUs); above, GPUs are added greedily
// around each start and the best such set wins.
std::optional<WholeGpuChoice> choose_whole_gpus(const GpuLinks& links, const std::vector<int>& free, int count);

}  // namespace vgpu
