// The planner's side of the handover to slurmctld (planner_round/slurm_handover.h): the split it
// hands over, the confirmation that slurmctld took a shrink before the space is re-planned, and
// the repairs of a split slurmctld lost or of instances it stopped counting.
#include "slurm_handover.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "slot_key.h"
#include "vgpu/base/crash_point.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/published_view.h"

namespace vgpu::node {
namespace {

// Hands `counts` to slurmctld (docs/slurm.md), remembering when: a published view taken before
// then does not show it yet (published_view.h).
Result<void> hand_over(NodeContext& ctx, PlannerState& state, const std::map<std::string, int>& counts) {
  state.split_handed_over_at = ctx.now();
  ++state.handovers;
  return ctx.publisher->publish(counts);
}

// Does `node` (slurmctld's view, taken after the last handover) show the shrunk split taken, and
// every allocation slurmctld made with a claim or instance?
Result<bool> slurm_caught_up(NodeContext& ctx, PlannerState& state, const std::vector<PlanSlot>& dropped,
                             const NodeGres& node) {
  auto l = ctx.ledger->load();
  if (!l) return std::unexpected(l.error());
  Ledger shrunk = *l;
  auto still_dropped = dropped;
  std::erase_if(shrunk.plan.slots, [&](const PlanSlot& s) {
    if (slot_is_held(*l, s)) return false;
    auto it = std::ranges::find(still_dropped, slot_key(s), slot_key);
    if (it == still_dropped.end()) return false;
    still_dropped.erase(it);
    return true;
  });
  auto want = node_advertisement(ctx, shrunk, state.slurm_uncounted, state.slurm_total);
  if (!same_counts(split_of(node), want)) {
    // A prolog claimed a dropped slot meanwhile (they stay claimable; a share prolog's group holds
    // its slot the same way): the shrunk split keeps it now. Hand Slurm that split, or this wait
    // outlasts its timeout for a split Slurm was never given, and Slurm shows the type below what
    // its running jobs hold until a later round.
    if (auto published = read_advertised_counts(ctx); published && !same_counts(*published, want)) {
      if (auto ok = write_advertisement(ctx, l->plan.generation, want); !ok) return std::unexpected(ok.error());
      if (auto ok = hand_over(ctx, state, want); !ok) return std::unexpected(ok.error());
    }
    return false;
  }
  auto held = held_by_jobs(*l);
  for (const auto& [type, used] : node.used)
    if (type != "never" && type != "free" && used > held[type]) return false;
  return true;
}

// How often one handover's confirmation may ask slurmctld itself: every question is two RPCs
// (node and partition info) that slurmctld answers to every node shrinking at once, and a
// slurmctld slow to take splits is the one that most needs fewer of them. Past this, a round
// confirms from the view it read anyway (the published view once it postdates the handover, or
// the round's own question where there is none), so a shrink that waits for many rounds costs no
// more (256 nodes asking every round saturated slurmctld; docs/benchmarks.md).
constexpr int kConfirmQuestionsPerHandover = 3;

// Types of which `a` has more than `b`.
bool has_more(const std::map<std::string, int>& a, const std::map<std::string, int>& b) {
  for (const auto& [type, n] : a) {
    if (type == "never" || type == "free") continue;
    auto it = b.find(type);
    if (n > (it == b.end() ? 0 : it->second)) return true;
  }
  return false;
}

}  // namespace

bool same_counts(std::map<std::string, int> a, std::map<std::string, int> b) {
  std::erase_if(a, [](const auto& kv) { return kv.second == 0; });
  std::erase_if(b, [](const auto& kv) { return kv.second == 0; });
  return a == b;
}

// slurmctld's split of the node without the padding and the zero-count type: what an
// advertisement is compared with.
std::map<std::string, int> split_of(const NodeGres& node) {
  auto split = node.configured;
  split.erase("never");
  split.erase("free");
  return split;
}

Result<void> publish(NodeContext& ctx, PlannerState& state, const Ledger& l, PlannerRoundResult& result) {
  auto counts = node_advertisement(ctx, l, state.slurm_uncounted, state.slurm_total);
  auto current = read_advertised_counts(ctx);
  result.advertised = counts;
  if (current && same_counts(*current, counts)) return {};
  if (state.slurm_total) {
    const auto planned = node_advertisement(ctx, l, state.slurm_uncounted);
    if (!same_counts(planned, counts)) {
      std::string cut;
      for (const auto& [type, n] : planned)
        if (n != counts[type]) cut += fmt::format("{}{} {} -> {}", cut.empty() ? "" : ", ", type, n, counts[type]);
      ctx.log(
          fmt::format("vgpu: planner: node {}: the plan counts more vgpu units than the node's total of {} "
                      "(slurm.conf's Gres=vgpu:free:<total>, docs/slurm.md); advertising {}; raise the total",
                      ctx.node, *state.slurm_total, cut));
    }
  }
  if (auto ok = write_advertisement(ctx, l.plan.generation, counts); !ok) return ok;
  crash_point("planner.before_notify_slurmd");
  result.advertisement_changed = true;
  if (auto ok = hand_over(ctx, state, counts); !ok) result.notes.push_back(ok.error().message);
  return {};
}

// Whether the round's view of slurmctld can say if slurmctld took the last handover: a published
// view taken after it, or slurmctld's own answer read when this planner had made no handover since
// (`handovers_when_read`: PlannerState::handovers then; seconds cannot order a handover and a
// question of the same second).
bool view_shows_last_handover(const NodeGres& view, const PlannerState& state, std::uint64_t handovers_when_read) {
  if (view.published_at) return !view_predates(view.published_at, state.split_handed_over_at);
  return state.handovers == handovers_when_read;
}

// Until slurmctld has taken the shrunk split: first from the round's view where it is newer than
// the handover, then by asking slurmctld, within this handover's questions and
// ctx.confirm_timeout_ms. Each question comes after a wait that doubles from ctx.confirm_poll_ms
// (to at most 8 times that): a split handed over this instant is not taken yet (slurmd
// re-registers, or slurmctld applies the update, first), so asking at once is a question lost.
// At the defaults: 250 ms, 750 ms and 1.75 s after the handover, then the next rounds' views.
bool wait_until_slurm_caught_up(NodeContext& ctx, PlannerState& state, const std::vector<PlanSlot>& dropped,
                                const std::optional<NodeGres>& round_view, std::uint64_t handovers_when_read) {
  using std::chrono::milliseconds;
  if (round_view && view_shows_last_handover(*round_view, state, handovers_when_read))
    if (auto c = slurm_caught_up(ctx, state, dropped, *round_view); c && *c) return true;
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(ctx.confirm_timeout_ms);
  auto wait = milliseconds(ctx.confirm_poll_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (state.questions_for_handover != state.handovers) {
      state.questions_for_handover = state.handovers;
      state.questions_asked = 0;
    }
    if (state.questions_asked >= kConfirmQuestionsPerHandover) return false;  // a later round's view confirms
    if (ctx.serve_waiting_hooks) ctx.serve_waiting_hooks();                   // dropped slots stay claimable meanwhile
    if (ctx.stop_requested()) return false;  // unconfirmed: the dropped slots stay claimable
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, milliseconds(ctx.confirm_poll_ms) * 8);
    ++state.questions_asked;
    if (auto node = ctx.slurm->node_gres_now(ctx.node))
      if (auto c = slurm_caught_up(ctx, state, dropped, *node); c && *c) return true;
  }
  return false;
}

// Capacity that left the advertisement outside a handover (an instance quarantined or vanished,
// jobs a restarted slurmctld no longer counts) must be seen taken by Slurm before the space is
// offered as other profiles, or Slurm may still start a pending job on the old count where the
// prolog then finds no room. (A job's end changes nothing: its place stays as a backed slot.)
// Slurm's own view decides, not this process's memory: a planner restarted while the shrink was
// on its way finds slurmctld still configured above the advertisement and waits as well.
Result<bool> released_capacity_confirmed(NodeContext& ctx, PlannerState& state,
                                         const std::optional<NodeGres>& slurm_view, std::uint64_t handovers_when_read,
                                         PlannerRoundResult& result) {
  auto l = ctx.ledger->load();
  if (!l) return std::unexpected(l.error());
  auto published = read_advertised_counts(ctx);
  const auto now_counts = node_advertisement(ctx, *l, state.slurm_uncounted, state.slurm_total);
  // A published view older than the last handover shows the split before it.
  const bool slurm_above = slurm_view && !view_predates(slurm_view->published_at, state.split_handed_over_at) &&
                           has_more(slurm_view->configured, now_counts);
  if (!state.shrink_unconfirmed && !slurm_above && !(published && has_more(*published, now_counts))) return true;
  const bool file_current = published && same_counts(*published, now_counts);
  if (auto ok = publish(ctx, state, *l, result); !ok) return std::unexpected(ok.error());
  // The file already says it but slurmctld does not: the notice was lost (a planner killed between
  // the two), so give it again.
  if (slurm_above && file_current)
    if (auto ok = hand_over(ctx, state, now_counts); !ok) result.notes.push_back(ok.error().message);
  if (wait_until_slurm_caught_up(ctx, state, {}, slurm_view, handovers_when_read)) {
    state.shrink_unconfirmed = false;
    return true;
  }
  state.shrink_unconfirmed = true;
  result.shrink_confirmed = false;
  result.notes.push_back("released capacity not yet confirmed by slurmctld; the plan does not grow");
  return false;
}

// See PlannerState::slurm_uncounted.
void refresh_slurm_uncounted(NodeContext& ctx, PlannerState& state, const NodeGres& node, const std::string& where,
                             PlannerRoundResult& result) {
  auto ledger = ctx.ledger->load();
  if (!ledger) return;
  auto seen = uncounted_by_slurm(without_holders_newer_than(*ledger, state, node.published_at), node);
  std::map<std::string, int> both;
  for (const auto& [profile, n] : seen)
    if (auto before = state.slurm_uncounted_last_seen.find(profile); before != state.slurm_uncounted_last_seen.end())
      both[profile] = std::min(n, before->second);
  state.slurm_uncounted_last_seen = std::move(seen);
  if (both == state.slurm_uncounted) return;
  std::string shown;
  for (const auto& [profile, n] : both) shown += fmt::format("{}{}:{}", shown.empty() ? "" : " ", profile, n);
  if (shown.empty()) ctx.log(fmt::format("{}: slurmctld counts every instance jobs here hold again", where));
  else
    ctx.log(
        fmt::format("{}: slurmctld does not count instances jobs here hold ({}; a restarted slurmctld "
                    "forgets running jobs' typed allocations): they leave the advertisement until the "
                    "jobs end",
                    where, shown));
  result.notes.push_back("uncounted by slurmctld: " + (shown.empty() ? std::string("none") : shown));
  state.slurm_uncounted = std::move(both);
}

// Slurm's split and the advertisement disagree outside a handover: a lost SIGHUP, a failed
// `scontrol update`, a restarted slurmctld that took an older report from slurmd. Seen in two
// rounds in a row (a handover in flight is seen in one at most), the file is handed over again;
// seen again after that, in twice as many rounds each time (up to 32): a slurmctld that takes
// longer than two rounds to take a split is a loaded one, and resending it adds to its load.
void resync_slurm_split(NodeContext& ctx, PlannerState& state, const NodeGres& node, PlannerRoundResult& result) {
  auto published = read_advertised_counts(ctx);
  if (!published || state.shrink_unconfirmed) return;
  if (view_predates(node.published_at, state.split_handed_over_at)) return;  // says nothing of the last one
  if (same_counts(split_of(node), *published)) {
    state.split_mismatch_rounds = 0;
    state.resyncs_in_a_row = 0;
    return;
  }
  if (++state.split_mismatch_rounds < (2 << std::min(state.resyncs_in_a_row, 4))) return;
  state.split_mismatch_rounds = 0;
  ++state.resyncs_in_a_row;
  result.notes.push_back("slurmctld's split differs from the advertisement: handed over again");
  if (auto ok = hand_over(ctx, state, *published); !ok) result.notes.push_back(ok.error().message);
}

}  // namespace vgpu::node
