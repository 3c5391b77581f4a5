#include "published_scores.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace vgpu::bench {

int profile_milli(const Profile& profile, const GpuModel& model) {
  return 1000 * profile.compute_slices / model.compute_slices;
}

namespace {

std::vector<TaskShape> most_common_shapes(std::span<const MappedTask> tasks, double coverage,
                                          const GpuModel* mig_model) {
  std::map<std::tuple<long long, int, int>, int> count;  // (cpu, gpus, milli) -> tasks
  int gpu_tasks = 0;
  for (const auto& t : tasks) {
    if (t.kind != TaskKind::sharing && t.kind != TaskKind::whole_gpu) continue;
    int milli = t.kind == TaskKind::sharing ? static_cast<int>(t.requested_milli) : 1000;
    if (mig_model && t.kind == TaskKind::sharing && t.profile) milli = profile_milli(*t.profile, *mig_model);
    ++count[{t.cpu_milli, t.gpus, milli}];
    ++gpu_tasks;
  }
  std::vector<std::pair<int, std::tuple<long long, int, int>>> by_count;
  for (const auto& [shape, n] : count) by_count.emplace_back(n, shape);
  // Most common first; the map's order breaks ties, so the choice is deterministic.
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<TaskShape> out;
  int covered = 0;
  for (const auto& [n, shape] : by_count) {
    if (gpu_tasks > 0 && covered >= coverage * gpu_tasks) break;
    auto [cpu, gpus, milli] = shape;
    out.push_back({gpus, milli, cpu, static_cast<double>(n)});
    covered += n;
  }
  for (auto& s : out) s.frequency /= covered;
  return out;
}

}  // namespace

std::vector<TaskShape> typical_shapes(std::span<const MappedTask> tasks, double coverage) {
  return most_common_shapes(tasks, coverage, nullptr);
}

std::vector<TaskShape> typical_mig_shapes(std::span<const MappedTask> tasks, const GpuModel& model, double coverage) {
  return most_common_shapes(tasks, coverage, &model);
}

long long NodeFree::gpu_total() const {
  long long total = 0;
  for (int g = 0; g < gpus; ++g) total += gpu_milli[static_cast<std::size_t>(g)];
  return total;
}

std::size_t Fragmentation::KeyHash::operator()(const Key& k) const {
  std::size_t h = std::hash<long long>{}(k.cpu);
  for (auto g : k.gpus) h = h * 1000003u ^ static_cast<std::size_t>(g + 1);
  return h;
}

double Fragmentation::of(const NodeFree& node) {
  Key key{node.cpu_milli, {}};
  key.gpus.fill(-1);
  std::copy_n(node.gpu_milli.begin(), node.gpus, key.gpus.begin());
  std::sort(key.gpus.begin(), key.gpus.end(), std::greater<>());
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;

  const long long free_total = node.gpu_total();
  double frag = 0;
  for (const auto& s : typical_) {
    bool cpu_fits = node.cpu_milli >= s.cpu_milli;
    long long unusable = 0;  // free thousandths on GPUs with less room than the shape needs
    int roomy = 0;           // GPUs with enough room for one of its GPUs
    for (int g = 0; g < node.gpus; ++g) {
      int free = node.gpu_milli[static_cast<std::size_t>(g)];
      if (free >= s.milli) ++roomy;
      else
        unusable += free;
    }
    bool fits = cpu_fits && roomy >= s.gpus;
    frag += s.frequency * static_cast<double>(fits ? unusable : free_total);
  }
  memo_.emplace(key, frag);
  return frag;
}

double best_fit_score(const NodeFree& after) {
  constexpr double kMaxCpuMilli = 128'000, kMaxGpuMilli = 8'000;
  return 0.5 * static_cast<double>(after.cpu_milli) / kMaxCpuMilli +
         0.5 * static_cast<double>(after.gpu_total()) / kMaxGpuMilli;
}

}  // namespace vgpu::bench
