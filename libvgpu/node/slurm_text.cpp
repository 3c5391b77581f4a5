#include "vgpu/node/slurm_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <ctime>

#include "vgpu/base/text_split.h"
#include "vgpu/contract/node_features.h"
#include "vgpu/contract/node_files.h"

namespace vgpu {
namespace {

template <class T>
bool to_number(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// "42_[1-5,9]" -> 6 tasks; "42_[1-100%4]" -> 100. Unparseable brackets count as one; the count
// saturates at INT_MAX (ids are 32-bit, so 64-bit sums of ranges cannot overflow).
int count_array_tasks(std::string_view id) {
  auto open = id.find("_[");
  if (open == std::string_view::npos || id.back() != ']') return 1;
  std::string_view body = id.substr(open + 2, id.size() - open - 3);
  if (auto pct = body.find('%'); pct != std::string_view::npos) body = body.substr(0, pct);
  std::int64_t total = 0;
  for (std::string_view range : split_view(body, ',')) {
    auto dash = range.find('-');
    std::int64_t a = 0, b = 0;
    if (dash == std::string_view::npos) {
      if (!to_number(range, a)) return 1;
      ++total;
    } else {
      if (!to_number(range.substr(0, dash), a) || !to_number(range.substr(dash + 1), b) || b < a || a < 0 ||
          b > UINT_MAX)
        return 1;
      total += b - a + 1;
    }
  }
  return total > 0 ? static_cast<int>(std::min<std::int64_t>(total, INT_MAX)) : 1;
}

}  // namespace

Result<std::int64_t> parse_slurm_time(std::string_view text) {
  // Digits at fixed places, as Slurm prints them: read once per pending job, so no sscanf (a third
  // of a long queue's round went there).
  auto digits = [&](std::size_t at, std::size_t n, int& out) {
    out = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      out = out * 10 + (text[i] - '0');
    }
    return true;
  };
  std::tm tm{};
  int y, mo, d, h, mi, s;
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' || text[16] != ':' ||
      !digits(0, 4, y) || !digits(5, 2, mo) || !digits(8, 2, d) || !digits(11, 2, h) || !digits(14, 2, mi) ||
      !digits(17, 2, s))
    return fail(ErrorCode::invalid_argument, fmt::format("time '{}': expected YYYY-MM-DDTHH:MM:SS", text));
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<std::int64_t>(::timegm(&tm));
}

Result<std::optional<std::int64_t>> parse_slurm_duration(std::string_view text) {
  for (std::string_view none : {"UNLIMITED", "INFINITE", "NOT_SET", "N/A"})
    if (text == none) return std::optional<std::int64_t>{};
  auto bad = [&] {
    return fail(ErrorCode::invalid_argument,
                fmt::format("time limit '{}': expected [D-]HH:MM:SS, MM:SS, minutes or UNLIMITED", text));
  };
  std::int64_t days = 0;
  std::string_view rest = text;
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    if (!to_number(text.substr(0, dash), days) || days < 0) return bad();
    rest = text.substr(dash + 1);
  }
  auto parts = split_view(rest, ':');
  if (parts.empty() || parts.size() > 3) return bad();
  std::vector<std::int64_t> n;
  for (auto p : parts) {
    std::int64_t v = 0;
    if (!to_number(p, v) || v < 0) return bad();
    n.push_back(v);
  }
  std::int64_t seconds = 0;
  if (text.find('-') != std::string_view::npos) {  // D-HH[:MM[:SS]]
    seconds = n[0] * 3600 + (n.size() > 1 ? n[1] * 60 : 0) + (n.size() > 2 ? n[2] : 0);
  } else if (n.size() == 1) {  // minutes
    seconds = n[0] * 60;
  } else if (n.size() == 2) {  // MM:SS
    seconds = n[0] * 60 + n[1];
  } else {  // HH:MM:SS
    seconds = n[0] * 3600 + n[1] * 60 + n[2];
  }
  return std::optional<std::int64_t>{days * 86400 + seconds};
}

PendingJobs parse_pending_jobs(std::string_view output) {
  PendingJobs result;
  std::size_t line_no = 0;
  for (std::string_view line : split_view(output, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto f = split_view(line, '|');
    auto bad = [&](std::string_view why) {
      result.errors.push_back(fmt::format("squeue line {}: {}: '{}'", line_no, why, line));
    };
    if (f.size() != 6 && f.size() != 10) {
      bad("expected 10 '|'-separated fields");
      continue;
    }
    PendingJob job;
    job.id = std::string(f[0]);
    for (auto p : split_view(f[1], ',')) job.partitions.emplace_back(p);
    if (!to_number(f[2], job.priority)) {
      bad("priority is not a number");
      continue;
    }
    // Slurm prints the submit time in the local zone; the agent runs with TZ=UTC (see docs).
    auto t = parse_slurm_time(f[3]);
    if (!t) {
      bad(t.error().message);
      continue;
    }
    job.submit_time = *t;
    job.reason = std::string(f[4]);
    if (f[5] != "N/A" && !f[5].empty()) {
      auto req = parse_vgpu_gres(f[5]);
      if (!req) {
        bad(req.error().message);
        continue;
      }
      job.vgpu = std::move(*req);
    }
    job.array_tasks = count_array_tasks(job.id);
    if (f.size() == 10) {
      // A pending job's node count may print as a range ("2-4"): its minimum is what it needs.
      std::string_view nodes = f[6].substr(0, f[6].find('-'));
      if (!to_number(nodes, job.nodes) || job.nodes < 1) {
        bad(fmt::format("node count '{}' is not a positive number", f[6]));
        continue;
      }
      job.user = std::string(f[7]);
      auto limit = parse_slurm_duration(f[8]);
      if (!limit) {
        bad(limit.error().message);
        continue;
      }
      job.time_limit_s = *limit;
      if (f[9] != "(null)") job.reservation = std::string(f[9]);
    }
    result.jobs.push_back(std::move(job));
  }
  return result;
}

bool waits_for_resources(const PendingJob& job) {
  // A job bound to the reservation we booked for it waits for that reservation's start, and its
  // node must still plan its instances.
  if (job.reservation.starts_with(kWideReservationPrefix)) return true;
  for (std::string_view r : {"Resources", "Priority", "ReqNodeNotAvail", "None", "Nodes_required"})
    if (job.reason.starts_with(r)) return true;
  return false;
}

Result<std::map<std::string, int>> parse_gres_counts(std::string_view value, std::string_view gres_name) {
  std::map<std::string, int> counts;
  if (value == "(null)" || value.empty()) return counts;
  for (std::string_view entry : split_view(value, ',')) {
    if (auto paren = entry.find('('); paren != std::string_view::npos) entry = entry.substr(0, paren);
    auto f = split_view(entry, ':');
    if (f.empty() || f[0] != gres_name) continue;
    if (f.size() != 3)
      return fail(ErrorCode::invalid_argument,
                  fmt::format("gres entry '{}': expected {}:<type>:<count>", entry, gres_name));
    int n = 0;
    if (!to_number(f[2], n))
      return fail(ErrorCode::invalid_argument, fmt::format("gres entry '{}': count is not a number", entry));
    counts[std::string(f[1])] = n;
  }
  return counts;
}

Result<NodeGres> parse_scontrol_node(std::string_view line, std::string_view gres_name) {
  NodeGres node;
  bool saw_gres = false;
  for (std::string_view token : split_view(line, ' ')) {
    auto eq = token.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = token.substr(0, eq), value = token.substr(eq + 1);
    if (key == "Gres" || key == "GresUsed") {
      auto counts = parse_gres_counts(value, gres_name);
      if (!counts) return std::unexpected(counts.error().within(fmt::format("scontrol {}", key)));
      (key == "Gres" ? node.configured : node.used) = std::move(*counts);
      saw_gres |= key == "Gres";
    } else if (key == "State") {
      node.state = std::string(value);
    } else if (key == "Weight") {
      std::uint32_t w = 0;
      if (!to_number(value, w))
        return fail(ErrorCode::invalid_argument, fmt::format("scontrol show node: Weight '{}' is not a number", value));
      node.weight = w;
    } else if (key == "AvailableFeatures") {
      node.features = contract::parse_feature_list(value);
    }
  }
  if (!saw_gres) return fail(ErrorCode::invalid_argument, "scontrol show node: no Gres= field");
  return node;
}

Result<std::string> gres_split_value(std::string_view gres_name, const std::map<std::string, int>& counts, int total) {
  long sum = 0;
  std::string types;
  for (const auto& [type, n] : counts) {
    if (n < 0) return fail(ErrorCode::invalid_argument, fmt::format("split: {}:{} is negative", type, n));
    if (type == "free") return fail(ErrorCode::invalid_argument, "split: 'free' is the padding type, not a profile");
    if (n == 0) continue;
    sum += n;
    types += fmt::format(",{}:{}:{}", gres_name, type, n);
  }
  if (sum > total)
    return fail(ErrorCode::invalid_argument,
                fmt::format("split: {} {} instance(s) exceed the node's constant total of {}", sum, gres_name, total));
  return fmt::format("{}:free:{}{}", gres_name, total - sum, types);
}

Result<SlurmVersion> parse_slurm_version(std::string_view dotted) {
  auto parts = split_view(dotted, '.');
  SlurmVersion v;
  if (parts.size() != 3 || !to_number(parts[0], v.major) || !to_number(parts[1], v.minor) ||
      !to_number(parts[2], v.micro))
    return fail(ErrorCode::invalid_argument, fmt::format("'{}' is not a Slurm version (X.Y.Z)", dotted));
  return v;
}

Result<SlurmVersion> parse_show_config_version(std::string_view text) {
  for (std::string_view line : split_view(text, '\n')) {
    auto f = split_view(line, '=');
    if (f.size() != 2) continue;
    auto key = f[0], value = f[1];
    while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
    if (key == "SLURM_VERSION") return parse_slurm_version(value);
  }
  return fail(ErrorCode::invalid_argument, "scontrol show config: no SLURM_VERSION line");
}

Result<std::string> parse_show_config_controller(std::string_view text) {
  for (std::string_view line : split_view(text, '\n')) {
    auto f = split_view(line, '=');
    if (f.size() != 2) continue;
    auto key = trim_view(f[0]), value = trim_view(f[1]);
    // "SlurmctldHost[0] = ctl1(10.0.0.1)" (ControlMachine before 18.08 is long gone): the
    // address where slurm.conf gives one, the host name otherwise.
    if (key != "SlurmctldHost[0]") continue;
    const auto open = value.find('(');
    if (open != std::string_view::npos && value.ends_with(')'))
      return std::string(value.substr(open + 1, value.size() - open - 2));
    if (!value.empty()) return std::string(value);
  }
  return fail(ErrorCode::invalid_argument, "scontrol show config: no SlurmctldHost[0] line");
}

std::string job_name_for_signals(std::uint32_t job, std::string_view line) {
  // scontrol prints "JobId=56 ArrayJobId=53 ArrayTaskId=2 ... JobName=<anything, spaces too>":
  // only the fields before the user's job name are trusted, and only for the job asked about.
  std::string_view array, task;
  bool first = true;
  for (std::string_view token : split_view(line, ' ')) {
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.remove_suffix(1);
    if (first && token != fmt::format("JobId={}", job)) return std::to_string(job);
    first = false;
    if (token.starts_with("JobName=")) break;
    if (token.starts_with("ArrayJobId=")) array = token.substr(11);
    if (token.starts_with("ArrayTaskId=")) task = token.substr(12);
  }
  std::uint32_t a = 0, t = 0;
  if (!array.empty() && !task.empty() && to_number(array, a) && to_number(task, t)) return fmt::format("{}_{}", a, t);
  return std::to_string(job);
}

Result<std::set<std::uint32_t>> parse_job_id_lines(std::string_view output, std::string_view what) {
  std::set<std::uint32_t> jobs;
  for (auto line : split_view(output, '\n')) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty()) continue;
    const auto id = contract::parse_job_id(line);
    if (!id) return fail(ErrorCode::corrupt, fmt::format("{}: not a job id: '{}'", what, line));
    jobs.insert(*id);
  }
  return jobs;
}

Result<std::uint32_t> parse_pidinfo_job(std::string_view output) {
  constexpr std::string_view kLead = "Slurm JobId=";
  const auto at = output.find(kLead);
  if (at == std::string_view::npos)
    return fail(ErrorCode::corrupt, fmt::format("scontrol pidinfo: no \"{}\" in '{}'", kLead, output.substr(0, 80)));
  auto id_text = output.substr(at + kLead.size());
  id_text = id_text.substr(0, id_text.find_first_of(" \n"));
  const auto id = contract::parse_job_id(id_text);
  if (!id) return fail(ErrorCode::corrupt, fmt::format("scontrol pidinfo: not a job id: '{}'", id_text));
  return *id;
}

}  // namespace vgpu
