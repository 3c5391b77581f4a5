// How a node's split reaches slurmctld, per Slurm release (vgpu/node/split_publisher.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <optional>
#include <thread>

#include "vgpu/contract/node_files.h"
#include "vgpu/contract/slurmd_report.h"
#include "vgpu/node/launch_watch.h"
#include "vgpu/node/split_publisher.h"

namespace vgpu {

SplitHandover split_handover_for(const SlurmVersion& controller) {
  return controller.release() >= 2311 ? SplitHandover::scontrol_update : SplitHandover::sighup;
}

namespace {

std::string_view describe(SplitHandover h) {
  return h == SplitHandover::sighup ? "SIGHUP to slurmd" : "scontrol update once slurmd reports them";
}

std::map<std::string, int> counts_of(const contract::SlurmdReport& report) {
  std::map<std::string, int> counts;
  for (const auto& [type, n] : report.counts) counts[type] = static_cast<int>(n);
  return counts;
}

std::map<std::string, int> positive(const std::map<std::string, int>& counts) {
  std::map<std::string, int> out;
  for (const auto& [type, n] : counts)
    if (n > 0) out[type] = n;
  return out;
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

  // From 23.11 slurmctld applies slurmd's own report at its restart and while the node has a
  // zero-count type, deleting what the report lacks (allocations of running jobs included); the
  // plugin keeps that report equal to advertisement.json. A split goes to slurmctld only once
  // slurmd reports it, so any registration slurmctld applies afterwards carries the same split.
  // Returns slurmd's latest report, which carries the node's constant total.
  std::optional<contract::SlurmdReport> wait_for_slurmd(const std::map<std::string, int>& counts) {
    const auto want = positive(counts);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timing_.slurmd_report_ms);
    std::optional<contract::SlurmdReport> report;
    while (true) {
      report = slurmd_report(ctx_);
      if (report && positive(counts_of(*report)) == want) return report;
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ctx_.log(
        fmt::format("vgpu: node {}: slurmd does not report the new split after {} ms (is gres_vgpu.so of this "
                    "release loaded in slurmd?); handing it to slurmctld anyway",
                    ctx_.node, timing_.slurmd_report_ms));
    return report;
  }

  // Lets the prologs of jobs slurmctld already started here reach the planner before slurmd stops
  // accepting connections to reconfigure (launch_watch.h says what a SIGHUP between a job's two
  // launch RPCs costs). Asks nothing of slurmctld: without a cluster view it does not wait.
  void wait_for_launches() {
    if (!ctx_.launches || !ctx_.ledger || !ctx_.slurm->cluster_view_status()) return;
    auto on_node = ctx_.slurm->jobs_on_node(ctx_.node);
    if (!on_node || !on_node->published_at) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timing_.launch_wait_ms);
    std::set<JobId> waited_for;
    while (true) {
      auto ledger = ctx_.ledger->load();
      if (!ledger) return;
      auto coming = ctx_.launches->in_flight(on_node->jobs, *ledger, ctx_.now());
      if (coming.empty()) break;
      waited_for.insert(coming.begin(), coming.end());
      if (std::chrono::steady_clock::now() >= deadline || ctx_.stop_requested()) {
        ctx_.log(
            fmt::format("vgpu: node {}: no prolog yet for job(s) {} that slurmctld shows here; signalling "
                        "slurmd after waiting {} ms",
                        ctx_.node, fmt::join(coming, ","), timing_.launch_wait_ms));
        return;
      }
      if (ctx_.serve_waiting_hooks) ctx_.serve_waiting_hooks();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!waited_for.empty())
      ctx_.log(fmt::format("vgpu: node {}: signalled slurmd once the prolog of job(s) {} had arrived", ctx_.node,
                           fmt::join(waited_for, ",")));
  }

  // The total slurmd reports at every registration. slurmctld's `Gres=` may sum to more for a
  // while (contract/slurmd_report.h says why), so it is only the fallback when slurmd has
  // written no report at all.
  int node_total(const std::optional<contract::SlurmdReport>& report, const NodeGres& node) {
    const int shown = split_sum(node);
    if (!report) return shown;
    const int total = static_cast<int>(report->total);
    if (shown != total)
      ctx_.log(
          fmt::format("vgpu: node {}: slurmctld shows a vgpu total of {} but slurmd reports {}; handing over "
                      "a split of {}",
                      ctx_.node, shown, total, total));
    return total;
  }

  Result<void> publish_once(const std::map<std::string, int>& counts) {
    auto h = handover();
    if (!h) return std::unexpected(h.error());
    if (*h == SplitHandover::sighup) {
      wait_for_launches();
      if (signal_slurmd_()) return {};
      return fail(ErrorCode::unavailable, "could not SIGHUP slurmd");
    }
    auto report = wait_for_slurmd(counts);
    auto node = ctx_.slurm->node_gres(ctx_.node);
    if (!node) return std::unexpected(node.error());
    auto value = gres_split_value("vgpu", counts, node_total(report, *node));
    if (!value) return std::unexpected(value.error());
    return ctx_.slurm->set_node_gres(ctx_.node, *value);
  }

  NodeContext& ctx_;
  std::function<bool()> signal_slurmd_;
  SplitPublisherTiming timing_;
  std::optional<SplitHandover> handover_;
  std::optional<std::int64_t> asked_at_;
};

}  // namespace

std::optional<contract::SlurmdReport> slurmd_report(const NodeContext& ctx) {
  auto text = contract::read_small_file(contract::slurmd_report_path(ctx.state_dir, ctx.node));
  if (!text) return std::nullopt;
  auto report = contract::parse_slurmd_report(*text, ctx.node);
  if (!report) return std::nullopt;
  return *report;
}

std::optional<int> node_total_of(const NodeContext& ctx, const NodeGres& slurm) {
  if (auto report = slurmd_report(ctx)) return static_cast<int>(report->total);
  return node_total_of(slurm);
}

std::unique_ptr<SplitPublisher> make_split_publisher(NodeContext& ctx, std::function<bool()> signal_slurmd,
                                                     SplitPublisherTiming timing) {
  return std::make_unique<SlurmSplitPublisher>(ctx, std::move(signal_slurmd), timing);
}

}  // namespace vgpu
