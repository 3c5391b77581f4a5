// VizLauncher over the vgpu-viz program: the node agent never links libvirt; the viz frontend
// stays one binary that admins can also run by hand (`vgpu-viz list`, `vgpu-viz stop --job N`).
#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

#include "adapters.h"
#include "process.h"
#include "vgpu/base/text_split.h"

namespace vgpu::agent {
namespace {

std::string viz_program() {
  const char* p = std::getenv("VGPU_VIZ");
  return p && *p ? p : "vgpu-viz";
}

std::optional<JobId> job_id(std::string_view text) {
  JobId id = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || p != text.data() + text.size() || id == 0) return std::nullopt;
  return id;
}

class CommandVizLauncher final : public VizLauncher {
 public:
  explicit CommandVizLauncher(std::string policy_path) : policy_path_(std::move(policy_path)) {}

  Result<VizStarted> start(const VizStartRequest& r) override {
    // Libvirt's first start probes QEMU's capabilities (seconds); a TCG boot is not waited for.
    auto out =
        run({"start", "--job", std::to_string(r.job), "--pool", r.pool, "--user", r.user, "--owner", r.user, "--guard"},
            std::chrono::seconds(90));
    if (!out) return std::unexpected(out.error());
    // "vgpu-viz: job N: session is up (domain D, device X); how to connect is in F"
    const auto at = out->find("(domain ");
    const auto comma = out->find(", device ", at);
    const auto close = out->find(')', comma);
    if (at == std::string::npos || comma == std::string::npos || close == std::string::npos)
      return fail(ErrorCode::io, fmt::format("vgpu-viz start: unexpected output: {}", out->substr(0, 200)));
    return VizStarted{out->substr(at + 8, comma - at - 8), out->substr(comma + 9, close - comma - 9)};
  }

  Result<void> stop(JobId job) override {
    auto out = run({"stop", "--job", std::to_string(job)}, std::chrono::seconds(60));
    if (!out) return std::unexpected(out.error());
    return {};
  }

  Result<std::set<JobId>> sessions() override {
    auto out = run({"list"}, std::chrono::seconds(30));
    if (!out) return std::unexpected(out.error());
    std::set<JobId> jobs;
    for (const auto line : split_view(*out, '\n')) {
      const auto first = line.substr(0, line.find(' '));
      if (auto id = job_id(first)) jobs.insert(*id);  // the header "JOB" is no job id
    }
    return jobs;
  }

  Result<std::set<JobId>> reap(const std::set<JobId>& live) override {
    std::string list;
    for (JobId j : live) list += (list.empty() ? "" : ",") + std::to_string(j);
    auto out = run({"reap", "--live", list}, std::chrono::seconds(120));
    if (!out) return std::unexpected(out.error());
    std::set<JobId> removed;
    for (const auto line : split_view(*out, '\n')) {
      constexpr std::string_view prefix = "vgpu-viz: reap: job ";
      if (!line.starts_with(prefix)) continue;
      auto rest = line.substr(prefix.size());
      if (auto id = job_id(rest.substr(0, rest.find(':')))) removed.insert(*id);
    }
    return removed;
  }

 private:
  Result<std::string> run(std::vector<std::string> args, std::chrono::seconds timeout) const {
    args.insert(args.begin(), {viz_program(), "--policy", policy_path_});
    CommandOptions opts;
    opts.timeout = timeout;
    auto r = run_command(args, opts);
    if (!r) return std::unexpected(r.error());
    if (r->timed_out) return fail(ErrorCode::unavailable, fmt::format("vgpu-viz {}: timed out", args[3]));
    if (r->exit_code != 0) {
      std::string err = r->err;
      while (!err.empty() && err.back() == '\n') err.pop_back();
      return fail(ErrorCode::unavailable, fmt::format("vgpu-viz {} exited {}: {}", args[3], r->exit_code, err));
    }
    return r->out;
  }
  std::string policy_path_;
};

}  // namespace

std::unique_ptr<VizLauncher> make_command_viz_launcher(std::string policy_path) {
  return std::make_unique<CommandVizLauncher>(std::move(policy_path));
}

}  // namespace vgpu::agent
