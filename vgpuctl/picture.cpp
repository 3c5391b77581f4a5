#include "picture.h"

#include <fmt/format.h>

#include <algorithm>

namespace vgpuctl {
namespace {

constexpr int kCell = 10;  // columns per memory slice

std::string box(std::string label, int slices) {
  int inner = slices * kCell - 2;
  if (static_cast<int>(label.size()) > inner) label.resize(static_cast<std::size_t>(inner));
  int pad = inner - static_cast<int>(label.size());
  return "[" + label + std::string(static_cast<std::size_t>(pad), ' ') + "]";
}

}  // namespace

std::string draw_gpu(int index, const vgpu::GpuModel& model, const std::vector<DrawnInstance>& instances) {
  std::vector<DrawnInstance> sorted = instances;
  std::ranges::sort(sorted, {}, [](const DrawnInstance& d) { return d.placement.start; });
  int used = 0, planned = 0;
  for (const auto& d : sorted) (d.planned ? planned : used) += d.compute_slices;

  std::string out = fmt::format("GPU {}  {}  compute {}/{} used, {} planned\n", index, model.name, used,
                                model.compute_slices, planned);
  out += "  slice  ";
  for (int s = 0; s < model.memory_slices; ++s) out += fmt::format("{:<{}}", s, kCell);
  out += "\n         ";
  int pos = 0;
  for (const auto& d : sorted) {
    for (; pos < d.placement.start; ++pos) out += box("   free", 1);
    std::string label = (d.planned ? "~" : "") + d.profile;
    if (!d.owner.empty()) label += " " + d.owner;
    out += box(label, d.placement.size);
    pos = d.placement.end();
  }
  for (; pos < model.memory_slices; ++pos) out += box("   free", 1);
  return out + "\n";
}

}  // namespace vgpuctl
