// `vgpuctl report`: utilisation over time per node and per profile from the node ledgers' history
// and running instances (usage_report.h); --png draws it through report_png.py (matplotlib).
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "usage_report.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/core/catalog.h"
#include "vgpu/ledger/ledger_store.h"

namespace vgpuctl {
namespace {

struct ReportArgs {
  std::string state_dir = vgpu::contract::resolve_state_dir(std::getenv("VGPU_STATE_DIR"));
  std::string since, until;
  int buckets = 60;
  bool json = false;
  std::string png;
};

// Unix seconds, or an ISO date-time in UTC (2026-11-26T05:00:00, with or without a trailing Z).
std::optional<std::int64_t> parse_time(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) return std::stoll(text);
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || (*end != '\0' && std::string_view(end) != "Z")) return std::nullopt;
  return static_cast<std::int64_t>(::timegm(&tm));
}

std::string plotter() {
  if (const char* env = std::getenv("VGPU_REPORT_PLOTTER"); env && *env) return env;
  if (::access(VGPU_REPORT_PLOTTER_INSTALLED, R_OK) == 0) return VGPU_REPORT_PLOTTER_INSTALLED;
  return VGPU_REPORT_PLOTTER_SOURCE;
}

nlohmann::json to_json(const UsageReport& r) {
  return {{"since", r.since},
          {"until", r.until},
          {"bucket_seconds", r.bucket_seconds},
          {"bucket_starts", r.bucket_starts},
          {"node_utilisation", r.node_utilisation},
          {"profile_instances", r.profile_instances},
          {"node_mean", r.node_mean},
          {"profile_instance_hours", r.profile_instance_hours}};
}

// Feeds the report to the plotter on stdin; its exit status, or -1 when it could not run.
int draw(const nlohmann::json& report, const std::string& png) {
  const std::string script = plotter();
  // Debian's interpreter, which python3-matplotlib installs for, not whichever python3 is first
  // on PATH (a pyenv or a virtualenv without matplotlib).
  const char* py = std::getenv("VGPU_REPORT_PYTHON");
  const std::string python = py && *py ? py : "/usr/bin/python3";
  for (const auto* s : {&script, &png, &python})
    if (s->find('\'') != std::string::npos) return -1;
  std::string cmd = "'" + python + "' '" + script + "' '" + png + "'";
  FILE* p = ::popen(cmd.c_str(), "w");
  if (!p) return -1;
  const std::string text = report.dump();
  std::fwrite(text.data(), 1, text.size(), p);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_report(const ReportArgs& a) {
  const auto nodes = node_ledgers_in(a.state_dir);
  if (nodes.empty()) {
    fmt::print(stderr, "vgpuctl: report: no node ledgers under {}\n", a.state_dir);
    return 2;
  }
  const std::int64_t now = std::time(nullptr);
  std::optional<std::int64_t> since = a.since.empty() ? std::nullopt : parse_time(a.since);
  std::optional<std::int64_t> until = a.until.empty() ? std::optional<std::int64_t>(now) : parse_time(a.until);
  if ((!a.since.empty() && !since) || !until) {
    fmt::print(stderr, "vgpuctl: report: --since/--until '{}': not Unix seconds or YYYY-MM-DDTHH:MM:SS (UTC)\n",
               !a.since.empty() && !since ? a.since : a.until);
    return 2;
  }
  std::vector<Tenancy> tenancies;
  std::map<std::string, int> capacity;
  for (const auto& node : nodes) {
    vgpu::LedgerStore store(a.state_dir + "/" + node, ledger_reader_options());
    auto ledger = store.load();
    auto history =
        ledger ? store.history() : vgpu::Result<std::vector<vgpu::HistoryRecord>>(std::unexpected(ledger.error()));
    if (!history) {
      fmt::print(stderr, "vgpuctl: report: node {}: {}\n", node, history.error().message);
      return 2;
    }
    // Tenancies may carry the node's classes' names: resolve them as the ledger records.
    const vgpu::Catalog catalog = vgpu::Catalog::with_classes(vgpu::Catalog::builtin(), ledger->classes);
    std::map<int, const vgpu::GpuModel*> models;
    for (const auto& g : ledger->gpus)
      if (const auto* m = catalog.find_model_for_product(g.model)) {
        models[g.index] = m;
        capacity[node] += m->compute_slices;
      }
    auto slices_of = [&](int gpu, const std::string& profile) {
      auto it = models.find(gpu);
      const vgpu::Profile* p = it == models.end() ? nullptr : it->second->find_profile(profile);
      return p ? p->compute_slices : 0;
    };
    for (const auto& h : *history)
      tenancies.push_back({node, h.profile, slices_of(h.gpu, h.profile), h.start_time, h.end_time});
    for (const auto& i : ledger->instances)
      if (i.job) tenancies.push_back({node, i.profile, slices_of(i.gpu, i.profile), i.created_at, *until});
  }
  if (!since) {
    since = *until - 3600;
    for (const auto& t : tenancies) since = std::min(*since, t.start);
  }
  const auto report = build_usage_report(tenancies, capacity, *since, *until, a.buckets);
  const auto json = to_json(report);
  if (a.json) {
    std::cout << json.dump(2) << "\n";
  } else {
    fmt::print("utilisation {:%Y-%m-%dT%H:%M:%S} to {:%Y-%m-%dT%H:%M:%S} UTC ({} s per bucket)\n",
               fmt::gmtime(static_cast<std::time_t>(report.since)), fmt::gmtime(static_cast<std::time_t>(report.until)),
               report.bucket_seconds);
    for (const auto& [node, mean] : report.node_mean)
      fmt::print("  node {:12} {:5.1f}% of its compute slices held by jobs\n", node, 100 * mean);
    for (const auto& [profile, hours] : report.profile_instance_hours)
      fmt::print("  {:12} {:8.3f} instance-hours\n", profile, hours);
  }
  if (!a.png.empty()) {
    const int rc = draw(json, a.png);
    if (rc != 0) {
      fmt::print(stderr, "vgpuctl: report: drawing {} with {} failed ({}): python3 with matplotlib is needed\n", a.png,
                 plotter(), rc < 0 ? "could not run" : fmt::format("exit {}", rc));
      return 2;
    }
    if (!a.json) fmt::print("picture: {}\n", a.png);
  }
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "Utilisation over time per node and per profile, from the nodes' history");
  cmd->add_option("--state-dir", a->state_dir, "Directory holding <node>/ledger.json")->capture_default_str();
  cmd->add_option("--since", a->since, "Start: Unix seconds or YYYY-MM-DDTHH:MM:SS UTC (default: the first tenancy)");
  cmd->add_option("--until", a->until, "End (default: now)");
  cmd->add_option("--buckets", a->buckets, "Time buckets")->check(CLI::Range(1, 10000))->capture_default_str();
  cmd->add_flag("--json", a->json, "Machine-readable output");
  cmd->add_option("--png", a->png,
                  "Also draw it to this PNG file (/usr/bin/python3 with matplotlib, or VGPU_REPORT_PYTHON)");
  cmd->callback([a, &exit_code] { exit_code = run_report(*a); });
}

}  // namespace vgpuctl
