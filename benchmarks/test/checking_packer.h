// A Packer decorator for tests: forwards every call and, after each one, rebuilds the cluster from
// the allocations it saw on fresh GpuLayouts. Any overlap, illegal placement, node-spanning task,
// undersized instance or miscounted capacity fails the test at the step that caused it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "packer.h"

namespace vgpu::bench {

class CheckingPacker final : public Packer {
 public:
  explicit CheckingPacker(std::unique_ptr<Packer> inner)
      : Packer(inner->model(), inner->shape()), inner_(std::move(inner)) {}

  [[nodiscard]] std::string_view name() const override { return inner_->name(); }

  std::optional<Allocation> allocate(const MappedTask& task) override {
    auto a = inner_->allocate(task);
    if (a) {
      EXPECT_EQ(std::ssize(a->parts), task.gpus);
      for (const auto& part : a->parts) {
        EXPECT_EQ(shape_.node_of(part.gpu), shape_.node_of(a->parts.front().gpu))
            << "a task spans nodes";
        EXPECT_GE(part.profile->compute_slices, task.profile->compute_slices);
        EXPECT_GE(part.profile->memory_slices, task.profile->memory_slices);
      }
      live_.push_back(*a);
      ++allocations_;
    }
    check();
    return a;
  }

  void release(const Allocation& allocation) override {
    auto it = std::ranges::find_if(live_, [&](const Allocation& l) {
      return l.parts.front().gpu == allocation.parts.front().gpu &&
             l.parts.front().where == allocation.parts.front().where;
    });
    ASSERT_NE(it, live_.end()) << "release of an allocation that is not live";
    live_.erase(it);
    inner_->release(allocation);
    check();
  }

  [[nodiscard]] std::vector<GpuLayout> running_layouts() const override {
    return inner_->running_layouts();
  }
  [[nodiscard]] int allocations() const { return allocations_; }

 private:
  void check() {
    std::vector<GpuLayout> rebuilt(static_cast<std::size_t>(shape_.gpus), GpuLayout(*model_));
    long long slices = 0;
    for (const auto& a : live_)
      for (const auto& part : a.parts) {
        ASSERT_GE(part.gpu, 0);
        ASSERT_LT(part.gpu, shape_.gpus);
        auto r = rebuilt[static_cast<std::size_t>(part.gpu)].place(*part.profile, part.where);
        ASSERT_TRUE(r) << "GPU " << part.gpu << ": " << r.error().message;
        slices += part.profile->compute_slices;
      }
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
};

}  // namespace vgpu::bench
