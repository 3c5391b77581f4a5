// A Packer decorator for tests: forwards every call and, after each one, rebuilds the cluster from
// the allocations it saw on fresh GpuLayouts. Any overlap, illegal placement, node-spanning task,
// undersized instance, miscounted capacity, MIG mode switched on a GPU that held work, or work in
// a GPU's other mode (an instance on a whole GPU) fails the test at the step that caused it.
#pragma once

#include <gtest/gtest.h>

#include <map>

#include "vgpu/core/shared_instance.h"

#include <algorithm>
#include <memory>

#include "packer.h"

namespace vgpu::bench {

class CheckingPacker final : public Packer {
 public:
  explicit CheckingPacker(std::unique_ptr<Packer> inner)
      : Packer(inner->model(), inner->shape()),
        inner_(std::move(inner)),
        modes_(static_cast<std::size_t>(shape_.gpus()), GpuMode::partitioned) {}

  [[nodiscard]] std::string_view name() const override { return inner_->name(); }

  std::optional<Allocation> allocate(const MappedTask& task) override {
    const std::vector<char> busy = busy_gpus();
    auto a = inner_->allocate(task);
    check_switches(busy);
    if (a) {
      EXPECT_EQ(std::ssize(a->parts), task.gpus);
      for (const auto& part : a->parts) {
        EXPECT_EQ(shape_.node_of(part.gpu), a->node) << "a task spans nodes";
        EXPECT_FALSE(held(part.gpu)) << "new work on GPU " << part.gpu << ", held for a reservation";
        const GpuMode needed = part.mig_off ? GpuMode::whole : GpuMode::partitioned;
        EXPECT_EQ(inner_->gpu_mode(part.gpu), needed) << "GPU " << part.gpu << ": work in the other MIG mode";
        if (part.mig_off) {
          EXPECT_EQ(part.profile->compute_slices, model_->compute_slices) << "a whole GPU is all of it";
        }
        if (part.share_milli > 0) {
          EXPECT_EQ(part.share_milli, task.requested_milli) << "a share is what the task asked";
        } else {
          EXPECT_GE(part.profile->compute_slices, task.profile->compute_slices);
          EXPECT_GE(part.profile->memory_slices, task.profile->memory_slices);
        }
      }
      EXPECT_GE(a->node, 0);
      live_.push_back(*a);
      ++allocations_;
    }
    check();
    return a;
  }

  void release(const Allocation& allocation) override {
    auto same = [](const Allocation& x, const Allocation& y) {
      if (x.node != y.node || x.cpu_milli != y.cpu_milli || x.memory_mib != y.memory_mib ||
          x.parts.size() != y.parts.size())
        return false;
      for (std::size_t i = 0; i < x.parts.size(); ++i)
        if (x.parts[i].gpu != y.parts[i].gpu || x.parts[i].where != y.parts[i].where ||
            x.parts[i].share_milli != y.parts[i].share_milli)
          return false;
      return true;
    };
    auto it = std::ranges::find_if(live_, [&](const Allocation& l) { return same(l, allocation); });
    ASSERT_NE(it, live_.end()) << "release of an allocation that is not live";
    const std::vector<char> busy = busy_gpus();
    live_.erase(it);
    inner_->release(allocation);
    check_switches(busy);
    check();
  }

  [[nodiscard]] std::vector<GpuLayout> running_layouts() const override { return inner_->running_layouts(); }
  [[nodiscard]] int gpu_used_slices(int gpu) const override { return inner_->gpu_used_slices(gpu); }
  [[nodiscard]] GpuMode gpu_mode(int gpu) const override { return inner_->gpu_mode(gpu); }
  [[nodiscard]] long long mode_switches() const override { return inner_->mode_switches(); }
  void hold(const std::vector<int>& gpus) override {
    Packer::hold(gpus);
    inner_->hold(gpus);
  }
  [[nodiscard]] int allocations() const { return allocations_; }

 private:
  [[nodiscard]] std::vector<char> busy_gpus() const {
    std::vector<char> busy(static_cast<std::size_t>(shape_.gpus()), 0);
    for (const auto& l : live_)
      for (const auto& part : l.parts) busy[static_cast<std::size_t>(part.gpu)] = 1;
    return busy;
  }
  // A GPU changed mode only if it held nothing before the call, and every switch was counted.
  void check_switches(const std::vector<char>& busy_before) {
    for (int g = 0; g < shape_.gpus(); ++g) {
      auto i = static_cast<std::size_t>(g);
      if (inner_->gpu_mode(g) == modes_[i]) continue;
      EXPECT_FALSE(busy_before[i]) << "GPU " << g << " switched MIG mode while it held work";
      modes_[i] = inner_->gpu_mode(g);
      ++switches_;
    }
    EXPECT_EQ(switches_, inner_->mode_switches());
  }

  void check() {
    std::vector<GpuLayout> rebuilt(static_cast<std::size_t>(shape_.gpus()), GpuLayout(*model_));
    long long slices = 0;
    // Shares of one shared instance: the instance exists once and its shares fit its capacity.
    std::map<std::pair<int, int>, std::pair<const Profile*, int>> shared;  // (gpu, start) -> sum
    for (const auto& a : live_)
      for (const auto& part : a.parts) {
        ASSERT_GE(part.gpu, 0);
        ASSERT_LT(part.gpu, shape_.gpus());
        if (part.share_milli > 0) {
          auto& [profile, used] = shared[{part.gpu, part.where.start}];
          if (profile) {
            ASSERT_EQ(profile, part.profile) << "GPU " << part.gpu << ": two profiles, one start";
            used += part.share_milli;
            continue;
          }
          profile = part.profile;
          used = part.share_milli;
        }
        auto r = rebuilt[static_cast<std::size_t>(part.gpu)].place(*part.profile, part.where);
        ASSERT_TRUE(r) << "GPU " << part.gpu << ": " << r.error().message;
        slices += part.profile->compute_slices;
      }
    for (const auto& [at, instance] : shared)
      ASSERT_LE(instance.second, share_capacity_milli(*model_, *instance.first))
          << "GPU " << at.first << ": shares beyond the instance's capacity";
    allocated_slices_ = inner_->allocated_slices();
    ASSERT_EQ(slices, allocated_slices_);
    ASSERT_LE(allocated_slices_, capacity_slices());
    // Only every so often: comparing thousands of layouts per step would dominate the test.
    if (allocations_ % 64 == 0) {
      auto running = inner_->running_layouts();
      for (std::size_t g = 0; g < running.size(); ++g)
        ASSERT_EQ(running[g].describe(), rebuilt[g].describe()) << "GPU " << g;
    }
  }

  std::unique_ptr<Packer> inner_;
  std::vector<Allocation> live_;
  int allocations_ = 0;
  std::vector<GpuMode> modes_;  // as last seen
  long long switches_ = 0;
};

}  // namespace vgpu::bench
