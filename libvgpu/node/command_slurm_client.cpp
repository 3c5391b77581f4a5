// SlurmClient over Slurm's own commands. Arguments are passed as argv (no shell), and the job's
// rejection reason is sanitized because it ends up in scontrol's key=value syntax.
#include <fmt/format.h>

#include <sys/stat.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "vgpu/node_agent.h"
#include "vgpu/process.h"

namespace vgpu {
namespace {

std::string tool(const char* name) {
  const char* dir = std::getenv("VGPU_SLURM_BIN");
  return dir && *dir ? fmt::format("{}/{}", dir, name) : std::string(name);
}

Result<std::string> run_ok(const std::vector<std::string>& argv) {
  CommandOptions opts;
  opts.timeout = std::chrono::seconds(20);
  opts.set_env["TZ"] = "UTC";  // squeue prints times in the caller's zone; parse_slurm_time expects UTC
  auto r = run_command(argv, opts);
  if (!r) return std::unexpected(r.error());
  if (r->timed_out) return fail(ErrorCode::unavailable, fmt::format("{}: timed out", argv[0]));
  if (r->exit_code != 0)
    return fail(ErrorCode::unavailable, fmt::format("{} exited {}: {}", argv[0], r->exit_code, r->err));
  return r->out;
}

}  // namespace

Result<std::string> squeue_pending_text() {
  return run_ok({tool("squeue"), "-h", "-t", "PD", "-o", std::string(kSqueuePendingFormat)});
}

namespace {

class CommandSlurmClient final : public SlurmClient {
 public:
  Result<PendingJobs> pending_jobs() override {
    // A large cluster publishes demand once (vgpu-planner --publish-demand) instead of every
    // node asking slurmctld; a stale file is an error, so the planner keeps its current plan.
    if (const char* file = std::getenv("VGPU_DEMAND_FILE"); file && *file) {
      struct stat st {};
      if (::stat(file, &st) != 0) return fail(ErrorCode::unavailable, fmt::format("demand file {}: missing", file));
      long age = static_cast<long>(std::time(nullptr) - st.st_mtime);
      if (age > 60) return fail(ErrorCode::unavailable, fmt::format("demand file {}: stale ({} s old)", file, age));
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      return parse_pending_jobs(text.str());
    }
    auto out = squeue_pending_text();
    if (!out) return std::unexpected(out.error());
    return parse_pending_jobs(*out);
  }

  Result<NodeGres> node_gres(const std::string& node) override {
    auto out = run_ok({tool("scontrol"), "-o", "-d", "show", "node", node});
    if (!out) return std::unexpected(out.error());
    return parse_scontrol_node(*out, "vgpu");
  }

  Result<void> reject_job(JobId job, const std::string& reason) override {
    std::string clean;
    for (char c : reason) clean += (c == '\n' || c == '\r' || c == '\'' || c == '"') ? ' ' : c;
    if (clean.size() > 900) clean.resize(900);
    std::string id = std::to_string(job);
    auto commented = run_ok({tool("scontrol"), "update", "JobId=" + id, "Comment=" + clean});
    auto cancelled = run_ok({tool("scancel"), id});
    if (!cancelled) return std::unexpected(cancelled.error());
    if (!commented) return std::unexpected(commented.error());
    return {};
  }
};

class CommandScrubber final : public Scrubber {
 public:
  ScrubOutcome scrub(const std::string& mig_uuid) override {
    const char* env = std::getenv("VGPU_SCRUB");
    std::string program = env && *env ? env : "/usr/local/libexec/slurm-vgpu/vgpu-scrub";
    CommandOptions opts;
    opts.timeout = std::chrono::minutes(5);
    opts.set_env["CUDA_VISIBLE_DEVICES"] = mig_uuid;
    auto r = run_command({program}, opts);
    if (!r) return {ScrubStatus::unavailable, r.error().message};
    std::string last = r->out.substr(0, 300);
    if (r->exit_code == 0) return {ScrubStatus::scrubbed, last};
    if (r->exit_code == 2) return {ScrubStatus::unavailable, "no CUDA device or driver: " + last};
    return {ScrubStatus::failed, fmt::format("vgpu-scrub exited {}{}: {}", r->exit_code,
                                             r->timed_out ? " (timed out)" : "", last + r->err.substr(0, 300))};
  }
};

}  // namespace

std::unique_ptr<SlurmClient> make_command_slurm_client() { return std::make_unique<CommandSlurmClient>(); }
std::unique_ptr<Scrubber> make_command_scrubber() { return std::make_unique<CommandScrubber>(); }

}  // namespace vgpu
