// Parsers of the three Slurm listings the demand publisher reads to book wide reservations.
#include <fmt/format.h>

#include "vgpu/base/text_split.h"
#include "vgpu/node/wide_booking.h"

namespace vgpu {

namespace {

// The value of `key=` in a `scontrol -o` line, up to the next space; nullopt when absent. Keys
// are matched at the start of a word, so "Partitions=" never matches inside another value.
std::optional<std::string_view> field(std::string_view line, std::string_view key) {
  for (std::size_t at = 0; (at = line.find(key, at)) != std::string_view::npos; at += key.size()) {
    if (at > 0 && line[at - 1] != ' ') continue;
    if (at + key.size() >= line.size() || line[at + key.size()] != '=') continue;
    auto value = line.substr(at + key.size() + 1);
    return value.substr(0, value.find(' '));
  }
  return std::nullopt;
}

template <class F>
void for_each_line(std::string_view output, F&& f) {
  std::size_t line_no = 0;
  for (std::string_view line : split_view(output, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) f(line, line_no);
  }
}

}  // namespace

SlurmNodeStates parse_scontrol_nodes(std::string_view output) {
  SlurmNodeStates out;
  for_each_line(output, [&](std::string_view line, std::size_t line_no) {
    auto name = field(line, "NodeName");
    auto state = field(line, "State");
    if (!name || name->empty() || !state || state->empty()) {
      out.errors.push_back(fmt::format("scontrol show node line {}: no NodeName= or State=: '{}'", line_no, line));
      return;
    }
    SlurmNodeState n{std::string(*name), {}, std::string(*state)};
    if (auto parts = field(line, "Partitions"); parts && !parts->empty())
      for (auto p : split_view(*parts, ',')) n.partitions.emplace_back(p);
    out.nodes.push_back(std::move(n));
  });
  return out;
}

Result<std::vector<RunningJobEnd>> parse_running_job_ends(std::string_view output) {
  std::vector<RunningJobEnd> out;
  std::string error;
  for_each_line(output, [&](std::string_view line, std::size_t line_no) {
    if (!error.empty()) return;
    auto f = split_view(line, '|');
    if (f.size() != 4 || f[0].empty() || f[1].empty() || f[3].empty()) {
      error = fmt::format("squeue line {}: expected <job>|<nodes>|<end time>|<state>: '{}'", line_no, line);
      return;
    }
    RunningJobEnd r{std::string(f[0]), std::string(f[1]), std::nullopt, std::string(f[3])};
    if (f[2] != "Unknown" && f[2] != "NONE" && f[2] != "N/A") {
      auto t = parse_slurm_time(f[2]);
      if (!t) {
        error = fmt::format("squeue line {}: {}", line_no, t.error().message);
        return;
      }
      r.end = *t;
    }
    out.push_back(std::move(r));
  });
  if (!error.empty()) return fail(ErrorCode::invalid_argument, error);
  return out;
}

Result<std::vector<BookedReservation>> parse_booked_reservations(std::string_view output) {
  std::vector<BookedReservation> out;
  std::string error;
  for_each_line(output, [&](std::string_view line, std::size_t line_no) {
    if (!error.empty() || line.starts_with("No reservations")) return;
    auto name = field(line, "ReservationName");
    if (!name) {
      error = fmt::format("scontrol show reservation line {}: no ReservationName=: '{}'", line_no, line);
      return;
    }
    if (!name->starts_with(kWideReservationPrefix)) return;  // not ours
    std::string_view job = name->substr(kWideReservationPrefix.size());
    BookedReservation b{std::string(*name), std::string(job), std::string(field(line, "Nodes").value_or(""))};
    out.push_back(std::move(b));
  });
  if (!error.empty()) return fail(ErrorCode::invalid_argument, error);
  return out;
}

}  // namespace vgpu
