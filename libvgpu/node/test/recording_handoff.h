// A CleanupHandoff double for the epilog's hand-off to a cleanup process (ports.h): it checks
// that every cleanup lock comes held and keeps a copy of each descriptor, as the cleanup process
// would. Shared by the epilog's and the device confinement's tests.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "vgpu/node/context.h"

namespace vgpu::testing {

// The hand-off as the cleanup process gets it: a copy of each lock's descriptor (the same open
// file, as a child inherits it) that outlives the epilog's own.
class RecordingHandoff final : public CleanupHandoff {
 public:
  explicit RecordingHandoff(const NodeContext& ctx) : ctx_(ctx) {}
  ~RecordingHandoff() override {
    for (const auto& h : taken) ::close(h.lock_fd);
  }
  Result<void> hand_off(const std::vector<HeldCleanup>& held) override {
    if (!refusal.empty()) return fail(ErrorCode::unavailable, refusal);
    for (const auto& h : held) {
      const auto path = fmt::format("{}/cleanup-{}-{}.lock", ctx_.node_dir(), h.gpu, h.gpu_instance_id);
      const int other = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      EXPECT_NE(::flock(other, LOCK_EX | LOCK_NB), 0) << path << " is handed over held";
      ::close(other);
      taken.push_back({h.gpu, h.gpu_instance_id, ::dup(h.lock_fd)});
    }
    return {};
  }
  std::vector<HeldCleanup> taken;
  std::string refusal;

 private:
  const NodeContext& ctx_;
};

}  // namespace vgpu::testing
