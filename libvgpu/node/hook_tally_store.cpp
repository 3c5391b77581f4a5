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
  auto ok = contract::atomic_replace(posix_file_system(), ctx.node_dir(), "hook-tally.json",
                                     contract::render_hook_tally(*tally),
                                     contract::ReplaceOptions::rebuildable_file(0644));
  if (!ok) return std::unexpected(ok.error());
  if (!restarted.empty()) return fail(ErrorCode::corrupt, "hook tally started afresh: " + restarted);
  return {};
}

}  // namespace

Result<void> tally_hook_run(const NodeContext& ctx, const HookRun& run) {
  return add_to_tally(ctx, [&](contract::HookTally& t) {
    t.hooks[std::string(run.hook)].observe(run.seconds);
    if (!run.cancel_class.empty()) ++t.cancelled[std::string(run.cancel_class)];
    if (run.requeued) ++t.requeued;
  });
}

Result<void> tally_scrubs(const NodeContext& ctx, const std::vector<ScrubRun>& scrubs) {
  if (scrubs.empty()) return {};
  return add_to_tally(ctx, [&](contract::HookTally& t) {
    for (const auto& s : scrubs) {
      t.hooks["scrub"].observe(s.seconds);
      ++t.scrubs[std::string(s.outcome)];
    }
  });
}

}  // namespace vgpu
