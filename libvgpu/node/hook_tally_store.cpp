#include "vgpu/node/hook_tally_store.h"

#include "node_lock.h"
#include "vgpu/contract/atomic_file.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/contract/file_system.h"

namespace vgpu {

Result<contract::HookTally> read_hook_tally(const NodeContext& ctx) {
  const std::string path = contract::hook_tally_path(ctx.state_dir, ctx.node);
  auto text = contract::read_small_file(path);
  if (!text) {
    if (text.error().code == ErrorCode::not_found) return contract::HookTally{ctx.node, {}, {}, 0, {}};
    return std::unexpected(text.error().within(path));
  }
  auto tally = contract::parse_hook_tally(*text, ctx.node);
  if (!tally) return std::unexpected(tally.error().within(path));
  return tally;
}

namespace {

// Reads the tally under its lock, lets `add` change it, writes it back.
template <class Add>
Result<void> add_to_tally(const NodeContext& ctx, Add&& add) {
  NodeLock lock(ctx.node_dir() + "/hook-tally.lock");
  if (!lock.held()) return fail(ErrorCode::io, "cannot take " + ctx.node_dir() + "/hook-tally.lock");
  std::string restarted;
  auto tally = read_hook_tally(ctx);
  if (!tally) {
    restarted = tally.error().message;
    tally = contract::HookTally{ctx.node, {}, {}, 0, {}};
  }
  add(*tally);
  // 0644: node_exporter's user reads the metrics, not this file, but an admin may.
  auto ok =
      contract::atomic_replace(posix_file_system(), ctx.node_dir(), "hook-tally.json",
                               contract::render_hook_tally(*tally), contract::ReplaceOptions::rebuildable_file(0644));
  if (!ok) return std::unexpected(ok.error());
  if (!restarted.empty()) return fail(ErrorCode::corrupt, "hook tally started afresh: " + restarted);
  return {};
}

}  // namespace

void PendingTally::add(const HookRun& run) {
  hooks_.push_back({std::string(run.hook), run.seconds, std::string(run.cancel_class), run.requeued});
}

void PendingTally::add(const std::vector<ScrubRun>& scrubs) {
  for (const auto& s : scrubs) scrubs_.push_back({s.seconds, std::string(s.outcome)});
}

void PendingTally::move_into(contract::HookTally& t) {
  for (const auto& run : hooks_) {
    t.hooks[run.hook].observe(run.seconds);
    if (!run.cancel_class.empty()) ++t.cancelled[run.cancel_class];
    if (run.requeued) ++t.requeued;
  }
  for (const auto& s : scrubs_) {
    t.hooks["scrub"].observe(s.seconds);
    ++t.scrubs[s.outcome];
  }
  hooks_.clear();
  scrubs_.clear();
}

namespace {

// The planner's pending tally takes the runs; without one they are written now.
template <class Runs>
Result<void> add_or_write(const NodeContext& ctx, const Runs& runs) {
  PendingTally now;
  PendingTally& into = ctx.pending_tally != nullptr ? *ctx.pending_tally : now;
  into.add(runs);
  return &into == &now ? flush_hook_tally(ctx, now) : Result<void>{};
}

}  // namespace

Result<void> tally_hook_run(const NodeContext& ctx, const HookRun& run) { return add_or_write(ctx, run); }

Result<void> tally_scrubs(const NodeContext& ctx, const std::vector<ScrubRun>& scrubs) {
  if (scrubs.empty()) return {};
  return add_or_write(ctx, scrubs);
}

Result<void> flush_hook_tally(const NodeContext& ctx, PendingTally& pending) {
  if (pending.empty()) return {};
  auto added = add_to_tally(ctx, [&](contract::HookTally& t) { pending.move_into(t); });
  pending = PendingTally{};  // a failed write before move_into must not keep them either
  return added;
}

}  // namespace vgpu
