#include "vgpu/node/cluster_view_snapshot.h"

#include <fmt/format.h>

#include <algorithm>

#include "vgpu/base/text_split.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/node/demand_spread.h"
#include "vgpu/node/slurm_text.h"
#include "vgpu/node/wide_booking.h"

namespace vgpu {
namespace {

// Each line of `text` without its newline; a last line without one too.
template <class F>
Result<void> for_each_line(std::string_view text, F&& f) {
  std::size_t line_no = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    auto line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_no;
    if (line.empty()) continue;
    if (auto ok = f(line, line_no); !ok) return ok;
  }
  return {};
}

// Field `index` (from 0) of a '|'-separated line, or "" where it has fewer.
std::string_view field(std::string_view line, std::size_t index) {
  for (std::size_t i = 0; i < index; ++i) {
    const auto bar = line.find('|');
    if (bar == std::string_view::npos) return {};
    line = line.substr(bar + 1);
  }
  return line.substr(0, line.find('|'));
}

}  // namespace

Result<contract::ClusterView> cluster_view_from_slurm(std::string_view squeue, std::string_view nodes,
                                                      std::int64_t taken_at, std::int64_t period_s) {
  contract::ClusterView view;
  view.taken_at = taken_at;
  view.period_s = period_s;
  auto jobs = for_each_line(squeue, [&](std::string_view line, std::size_t no) -> Result<void> {
    // The last three fields are ours; what comes before is the pending format, whatever a
    // reason or a GRES string holds.
    const auto nodes_bar = line.rfind('|');
    const auto job_bar = nodes_bar == std::string_view::npos ? nodes_bar : line.rfind('|', nodes_bar - 1);
    const auto state_bar =
        job_bar == std::string_view::npos || job_bar == 0 ? std::string_view::npos : line.rfind('|', job_bar - 1);
    if (state_bar == std::string_view::npos)
      return fail(ErrorCode::corrupt,
                  fmt::format("squeue line {}: \"{}\": not {}", no, line.substr(0, 80), kSqueueViewFormat));
    const auto state = line.substr(state_bar + 1, job_bar - state_bar - 1);
    if (state == "PENDING") {
      // Only a vgpu job's demand moves a layout (%b, the sixth field, names its GRES).
      if (field(line, 5).find(kVgpuGresMark) != std::string_view::npos)
        view.pending.emplace_back(line.substr(0, state_bar));
      return {};
    }
    const auto where = line.substr(nodes_bar + 1);
    if (where.empty()) return {};  // configuring, not yet placed: nothing runs on any node
    auto job = contract::parse_job_id(line.substr(job_bar + 1, nodes_bar - job_bar - 1));
    if (!job)
      return fail(ErrorCode::corrupt, fmt::format("squeue line {}: \"{}\" is not a job number", no,
                                                  line.substr(job_bar + 1, nodes_bar - job_bar - 1)));
    view.running.push_back({*job, std::string(where)});
    return {};
  });
  if (!jobs) return std::unexpected(jobs.error());
  auto shown = for_each_line(nodes, [&](std::string_view line, std::size_t no) -> Result<void> {
    constexpr std::string_view key = "NodeName=";
    const auto name = line.starts_with(key) ? line.substr(key.size(), line.find(' ') - key.size()) : "";
    if (name.empty())
      return fail(
          ErrorCode::corrupt,
          fmt::format("scontrol show node line {}: \"{}\" does not start with NodeName=", no, line.substr(0, 80)));
    if (line.find(kVgpuGresMark) != std::string_view::npos)  // a node without vgpu has no planner
      view.nodes.insert_or_assign(std::string(name), std::string(line));
    return {};
  });
  if (!shown) return std::unexpected(shown.error());
  return view;
}

ClusterViewCuts::ClusterViewCuts(contract::ClusterView whole) : whole_(std::move(whole)) {
  spread_pending();
  for (std::size_t i = 0; i < whole_.running.size(); ++i) {
    const auto& nodes = whole_.running[i].nodes;
    if (nodes.find_first_of("[,") == std::string::npos) running_by_node_[nodes].push_back(i);
    else
      running_on_lists_.emplace_back(NodeList(nodes), i);
  }
}

void ClusterViewCuts::spread_pending() {
  // Each partition's nodes, in name order (the view's), and those of them to prepare on.
  std::map<std::string, std::vector<std::string>, std::less<>> members, usable;
  for (const auto& [name, line] : whole_.nodes) {
    const auto parsed = parse_scontrol_nodes(line);
    if (parsed.nodes.empty()) continue;
    for (const auto& partition : parsed.nodes[0].partitions) {
      members[partition].push_back(name);
      if (may_prepare(parsed.nodes[0].state)) usable[partition].push_back(name);
    }
  }
  // What each node offers now: its vgpu types less what Slurm has allocated of them.
  std::map<std::string, std::map<std::string, int>, std::less<>> free_by_node;
  for (const auto& [name, line] : whole_.nodes)
    if (auto gres = parse_scontrol_node(line, contract::kGresName); gres) {
      auto& free = free_by_node[name];
      for (const auto& [type, n] : gres->configured) free[type] = n - gres->used[type];
    }
  for (std::size_t i = 0; i < whole_.pending.size(); ++i) {
    const auto jobs = parse_pending_jobs(whole_.pending[i]);
    const auto* job = jobs.jobs.size() == 1 ? &jobs.jobs[0] : nullptr;
    for (auto partition : split_view(field(whole_.pending[i], 1), ',')) {
      const auto all = members.find(partition);
      if (all == members.end()) continue;
      const auto ready = usable.find(partition);
      const auto& nodes = ready == usable.end() ? all->second : ready->second;
      // A line no planner could read goes to all, whose planners say why; a reservation's job can
      // start only on its nodes, which the view does not name.
      std::vector<std::size_t> chosen;
      if (job && job->reservation.empty()) {
        const auto offers = [&](std::size_t n) {
          const auto free = free_by_node.find(nodes[n]);
          return free != free_by_node.end() && std::ranges::all_of(job->vgpu, [&](const GresRequest& r) {
                   const auto t = free->second.find(r.type);
                   return t != free->second.end() && t->second >= r.count;
                 });
        };
        chosen = preparers_for(job->id, nodes, std::int64_t{job->nodes} * job->array_tasks,
                               whole_.taken_at - job->submit_time, whole_.period_s, offers);
      } else {
        chosen = preparers(job ? std::string_view(job->id) : std::string_view(whole_.pending[i]), nodes, nodes.size());
      }
      for (auto n : chosen) pending_by_node_[nodes[n]].push_back(i);
    }
  }
}

contract::ClusterView ClusterViewCuts::cut(const std::string& node) const {
  contract::ClusterView view;
  view.taken_at = whole_.taken_at;
  view.period_s = whole_.period_s;
  view.for_node = node;
  // Its jobs whether or not its line is there: a planner must never read "no jobs" from a view
  // that merely lacks its line.
  std::vector<std::size_t> running;
  if (auto jobs = running_by_node_.find(node); jobs != running_by_node_.end()) running = jobs->second;
  for (const auto& [list, i] : running_on_lists_)
    if (list.contains(node)) running.push_back(i);
  std::ranges::sort(running);
  for (auto i : running) view.running.push_back(whole_.running[i]);
  const auto line = whole_.nodes.find(node);
  if (line == whole_.nodes.end()) return view;
  view.nodes.insert(*line);
  std::vector<std::size_t> pending;
  if (auto jobs = pending_by_node_.find(node); jobs != pending_by_node_.end()) pending = jobs->second;
  std::ranges::sort(pending);  // squeue's order, each job once
  const auto [last, end] = std::ranges::unique(pending);
  pending.erase(last, end);
  for (auto i : pending) view.pending.push_back(whole_.pending[i]);
  return view;
}

std::string pending_text(const contract::ClusterView& view) {
  std::string text;
  for (const auto& line : view.pending) text += line + "\n";
  return text;
}

}  // namespace vgpu
