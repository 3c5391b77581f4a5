// How a node's split reaches slurmctld, per Slurm release (node_agent.h, SplitPublisher).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "vgpu/node_agent.h"

namespace vgpu {

SplitHandover split_handover_for(const SlurmVersion& controller) {
  return controller.release() >= 2311 ? SplitHandover::scontrol_update : SplitHandover::sighup;
}

namespace {

std::string_view describe(SplitHandover h) {
  return h == SplitHandover::sighup ? "SIGHUP to slurmd" : "scontrol update, slurmd's report refreshed by SIGHUP";
}

class SlurmSplitPublisher final : public SplitPublisher {
 public:
  SlurmSplitPublisher(NodeContext& ctx, std::function<bool()> signal_slurmd, SplitPublisherTiming timing)
      : ctx_(ctx), signal_slurmd_(std::move(signal_slurmd)), timing_(timing) {}

  Result<void> publish(const std::map<std::string, int>& counts) override {
    auto done = publish_once(counts);
    if (!done) {
      asked_at_.reset();  // ask the release again next time: slurmctld may have changed
      return std::unexpected(done.error().within(fmt::format("node {}: publishing the split", ctx_.node)));
    }
    return {};
  }

  void tick() override {
    if (refresh_pending_ && ctx_.now() - last_sighup_ >= timing_.refresh_s) (void)refresh_slurmd();
  }

 private:
  Result<SplitHandover> handover() {
    const std::int64_t now = ctx_.now();
    if (handover_ && asked_at_ && now - *asked_at_ < timing_.recheck_s) return *handover_;
    auto version = ctx_.slurm->controller_version();
    if (!version) {
      if (handover_) return *handover_;  // keep what worked until slurmctld answers again
      return std::unexpected(version.error().within("slurmctld's release"));
    }
    auto h = split_handover_for(*version);
    if (handover_ != h)
      ctx_.log(fmt::format("vgpu: node {}: slurmctld is {}.{:02}.{}: splits are handed over by {}", ctx_.node,
                           version->major, version->minor, version->micro, describe(h)));
    handover_ = h;
    asked_at_ = now;
    return h;
  }

  Result<void> refresh_slurmd() {
    last_sighup_ = ctx_.now();
    refresh_pending_ = false;
    if (signal_slurmd_()) return {};
    return fail(ErrorCode::unavailable, "could not SIGHUP slurmd");
  }

  Result<void> publish_once(const std::map<std::string, int>& counts) {
    auto h = handover();
    if (!h) return std::unexpected(h.error());
    if (*h == SplitHandover::sighup) return refresh_slurmd();

    // 23.11 on: set the split in slurmctld at the node's constant total...
    auto node = ctx_.slurm->node_gres(ctx_.node);
    if (!node) return std::unexpected(node.error());
    const int total = std::accumulate(node->configured.begin(), node->configured.end(), 0,
                                      [](int sum, const auto& kv) { return sum + kv.second; });
    auto value = gres_split_value("vgpu", counts, total);
    if (!value) return std::unexpected(value.error());
    if (auto ok = ctx_.slurm->set_node_gres(ctx_.node, *value); !ok) return ok;
    // ...then slurmd's own report must follow: slurmctld applies it at its own restart and at
    // any registration while the node has a zero-count type, and a stale report that lacks a type
    // jobs hold makes slurmctld forget their allocations. A type this update lowered to zero
    // needs the refresh now (the next registration applies it); otherwise it may wait up to
    // refresh_s, so bursts of handovers re-exec slurmd once.
    bool zeroes_a_type = std::ranges::any_of(node->configured, [&](const auto& kv) {
      if (kv.first == "free" || kv.first == "never") return false;
      auto it = counts.find(kv.first);
      return it == counts.end() || it->second == 0;
    });
    refresh_pending_ = true;
    if (zeroes_a_type || ctx_.now() - last_sighup_ >= timing_.refresh_s) return refresh_slurmd();
    return {};
  }

  NodeContext& ctx_;
  std::function<bool()> signal_slurmd_;
  SplitPublisherTiming timing_;
  std::optional<SplitHandover> handover_;
  std::optional<std::int64_t> asked_at_;
  std::int64_t last_sighup_ = 0;
  bool refresh_pending_ = false;
};

}  // namespace

std::unique_ptr<SplitPublisher> make_split_publisher(NodeContext& ctx, std::function<bool()> signal_slurmd,
                                                     SplitPublisherTiming timing) {
  return std::make_unique<SlurmSplitPublisher>(ctx, std::move(signal_slurmd), timing);
}

}  // namespace vgpu
