#include "static_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace vgpu::bench {
namespace {

std::size_t index_of(const GpuModel& model, const Profile* p) {
  return static_cast<std::size_t>(p - model.profiles.data());
}

bool usable(const Profile& p) { return p.name.find('+') == std::string::npos; }

void enumerate(const GpuModel& model, const GpuLayout& layout, std::map<std::vector<std::string>, GpuRecipe>& out) {
  for (const auto& p : model.profiles) {
    if (!usable(p)) continue;
    for (const auto& where : layout.free_placements(p)) {
      // Only place at or after the last start: each multiset is reached once per ordering of
      // placements, which keeps the search tiny without losing any layout.
      if (!layout.instances().empty() && where.start < layout.instances().back().placement.start) continue;
      GpuLayout next = layout;
      (void)next.place(p, where);
      enumerate(model, next, out);
    }
  }
  bool maximal = std::ranges::none_of(model.profiles, [&](const Profile& p) { return usable(p) && layout.fits(p); });
  if (!maximal || layout.empty()) return;
  std::vector<std::string> key;
  for (const auto& i : layout.instances()) key.push_back(i.profile->name);
  std::ranges::sort(key);
  out.try_emplace(key, GpuRecipe{layout.instances()});
}

std::vector<double> supply_of(const GpuModel& model, const std::vector<GpuRecipe>& recipes,
                              const std::vector<int>& gpus) {
  std::vector<double> supply(model.profiles.size(), 0.0);
  for (std::size_t r = 0; r < recipes.size(); ++r)
    for (const auto& inst : recipes[r].instances) supply[index_of(model, inst.profile)] += gpus[r];
  return supply;
}

}  // namespace

std::string GpuRecipe::describe() const {
  std::vector<PlacedInstance> sorted = instances;
  std::ranges::sort(sorted, [](const PlacedInstance& a, const PlacedInstance& b) {
    return a.profile->compute_slices > b.profile->compute_slices;
  });
  std::string out;
  for (const auto& i : sorted) out += (out.empty() ? "" : "+") + i.profile->name;
  return out;
}

int GpuRecipe::count_of(const Profile& p) const {
  return static_cast<int>(
      std::ranges::count_if(instances, [&](const PlacedInstance& i) { return i.profile->name == p.name; }));
}

std::string StaticPlan::describe() const {
  std::string out;
  for (std::size_t r = 0; r < recipes.size(); ++r)
    if (gpus[r] > 0) out += fmt::format("{}{}x {}", out.empty() ? "" : ", ", gpus[r], recipes[r].describe());
  return out;
}

std::vector<GpuRecipe> maximal_recipes(const GpuModel& model) {
  std::map<std::vector<std::string>, GpuRecipe> found;
  enumerate(model, GpuLayout(model), found);
  std::vector<GpuRecipe> out;
  for (auto& [k, r] : found) out.push_back(std::move(r));
  return out;
}

double served_milli(const GpuModel& model, const std::vector<double>& supply,
                    const std::vector<ProfileDemand>& demand) {
  std::size_t n = model.profiles.size();
  std::vector<double> left_supply = supply, left_demand(n);
  double served = 0;
  for (std::size_t p = 0; p < n; ++p) {
    double exact = std::min(supply[p], demand[p].instances);
    served += exact * demand[p].milli_per_instance;
    left_supply[p] -= exact;
    left_demand[p] = demand[p].instances - exact;
  }
  // Largest leftover tasks first, each into the smallest larger instance still free.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto size_less = [&](std::size_t a, std::size_t b) {
    const auto &pa = model.profiles[a], &pb = model.profiles[b];
    return std::tie(pa.compute_slices, pa.memory_slices) < std::tie(pb.compute_slices, pb.memory_slices);
  };
  std::ranges::sort(order, size_less);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    std::size_t p = *it;
    for (std::size_t q : order) {
      if (left_demand[p] <= 0) break;
      if (q == p || model.profiles[q].compute_slices < model.profiles[p].compute_slices || !size_less(p, q)) continue;
      double take = std::min(left_supply[q], left_demand[p]);
      served += take * demand[p].milli_per_instance;
      left_supply[q] -= take;
      left_demand[p] -= take;
    }
  }
  return served;
}

StaticPlan choose_static_plan(const GpuModel& model, int gpus, const std::vector<ProfileDemand>& demand) {
  StaticPlan plan;
  plan.recipes = maximal_recipes(model);
  // Full-GPU recipes first: the static packer lays GPUs out in recipe order, so whole nodes of
  // full GPUs stay together for multi-GPU tasks.
  std::ranges::stable_sort(
      plan.recipes, [](const GpuRecipe& a, const GpuRecipe& b) { return a.instances.size() < b.instances.size(); });
  std::size_t n = plan.recipes.size();
  plan.gpus.assign(n, 0);
  plan.gpus[0] = gpus;
  auto value = [&](const std::vector<int>& g) {
    return served_milli(model, supply_of(model, plan.recipes, g), demand);
  };
  double current = value(plan.gpus);
  // Hill climbing with shrinking steps: move `step` GPUs from one recipe to another while that
  // serves more. The objective is concave-ish in each coordinate, so this settles quickly.
  for (int step = std::max(1, gpus / 4); step >= 1; step /= 2) {
    bool improved = true;
    while (improved) {
      improved = false;
      for (std::size_t from = 0; from < n; ++from) {
        for (std::size_t to = 0; to < n; ++to) {
          if (from == to || plan.gpus[from] < step) continue;
          plan.gpus[from] -= step;
          plan.gpus[to] += step;
          double v = value(plan.gpus);
          if (v > current + 1e-9) {
            current = v;
            improved = true;
          } else {
            plan.gpus[from] += step;
            plan.gpus[to] -= step;
          }
        }
      }
    }
  }
  plan.expected_served_milli = current;
  return plan;
}

}  // namespace vgpu::bench
