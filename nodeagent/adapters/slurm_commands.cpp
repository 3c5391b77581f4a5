// SlurmClient over Slurm's own commands. Arguments are passed as argv (no shell), and the job's
// rejection reason is sanitized because it ends up in scontrol's key=value syntax.
#include <fmt/format.h>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <charconv>
#include <cstdlib>
#include <ctime>

#include "install_paths.h"
#include "adapters.h"
#include "cluster_view_source.h"
#include "vgpu/policy/policy_hostlist.h"
#include "vgpu/contract/job_record.h"
#include "vgpu/contract/demand_file.h"
#include "vgpu/contract/node_files.h"
#include "process.h"
#include "vgpu/base/text_split.h"
#include "vgpu/node/cluster_view_snapshot.h"
#include "vgpu/node/wide_booking.h"

namespace vgpu::agent {
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

// The account name of `uid`, or the number itself where the node has no name for it.
std::string user_name(unsigned uid) {
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(uid, &pw, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) return pw.pw_name;
  return std::to_string(uid);
}

}  // namespace

Result<std::string> squeue_pending_text() {
  return run_ok({tool("squeue"), "-h", "-t", "PD", "-o", std::string(kSqueuePendingFormat)});
}

Result<std::string> squeue_view_text() {
  return run_ok({tool("squeue"), "-h", "-t", std::string(kSqueueViewStates), "-o", std::string(kSqueueViewFormat)});
}

Result<std::string> this_node_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return contract::resolve_node_name({std::getenv("VGPU_NODENAME"), std::getenv("SLURMD_NODENAME"), {}, host});
}

Result<std::string> scontrol_nodes_text() { return run_ok({tool("scontrol"), "-o", "-d", "show", "node"}); }

namespace {

// The cluster view the environment names (cluster_view_source.h; the controller's service unless
// it says otherwise), opened on first use: a hook that never asks about the cluster costs nothing,
// and `service` asks slurmctld where it runs once.
class ViewSetting {
 public:
  // False only for VGPU_CLUSTER_VIEW=slurmctld: every question goes to slurmctld, as on a cluster of
  // a few nodes.
  [[nodiscard]] bool configured() const { return environment().value != "slurmctld"; }
  [[nodiscard]] static ViewEnvironment environment() {
    return view_environment(std::getenv("VGPU_CLUSTER_VIEW"), std::getenv("VGPU_CLUSTER_VIEW_KEY"));
  }
  Result<ClusterViewSource*> source(std::chrono::steady_clock::time_point tick) {
    if (source_) return &*source_;
    if (!retry_.take(tick)) return fail(ErrorCode::unavailable, problem_);
    auto opened = open();
    if (!opened) {
      problem_ = opened.error().message + " (tried again in a minute" +
                 (environment().defaulted ? "; VGPU_CLUSTER_VIEW is unset, so the controller's service is asked: "
                                            "docs/admin.md, \"The cluster view service\")"
                                          : ")");
      return fail(ErrorCode::unavailable, problem_);
    }
    source_.emplace(std::move(*opened));
    return &*source_;
  }
  [[nodiscard]] const ClusterViewSource* opened() const { return source_ ? &*source_ : nullptr; }
  [[nodiscard]] const std::string& problem() const { return problem_; }

 private:
  static Result<ClusterViewSource> open() {
    auto env = environment();
    std::string value = env.value;
    if (value == "service") {
      auto config = run_ok({tool("scontrol"), "show", "config"});
      if (!config) return std::unexpected(config.error().within("VGPU_CLUSTER_VIEW=service"));
      auto host = parse_show_config_controller(*config);
      if (!host) return std::unexpected(host.error().within("VGPU_CLUSTER_VIEW=service"));
      value = "tcp:" + *host;
    }
    auto node = this_node_name();
    if (!node) return std::unexpected(node.error().within("VGPU_CLUSTER_VIEW"));
    auto spec = parse_view_source(value, env.public_key, *node);
    if (!spec) return std::unexpected(spec.error());
    return ClusterViewSource::open(std::move(*spec), fetch_view_text);
  }

  std::optional<ClusterViewSource> source_;
  DirectQueryBudget retry_;
  std::string problem_;
};

class CommandSlurmClient final : public SlurmClient {
 public:
  Result<PendingJobs> pending_jobs() override {
    // The older demand file (--publish-demand: squeue's text, owner-trusted), still read where set.
    if (const char* file = std::getenv("VGPU_DEMAND_FILE"); file && *file) {
      auto text = contract::read_demand_file(posix_file_system(), file, ::geteuid(),
                                             static_cast<std::int64_t>(std::time(nullptr)));
      if (!text) return std::unexpected(text.error());
      return parse_pending_jobs(*text);
    }
    auto view = published("demand", demand_budget_);
    if (!view) return std::unexpected(view.error());
    if (*view) {
      std::string text;
      for (const auto& line : (*view)->pending) text += line + "\n";
      return parse_pending_jobs(text);
    }
    auto out = squeue_pending_text();
    if (!out) return std::unexpected(out.error());
    return parse_pending_jobs(*out);
  }

  Result<NodeGres> node_gres(const std::string& node) override {
    auto view = published("node " + node, node_budget_);
    if (!view) return std::unexpected(view.error());
    if (*view) {
      auto line = (*view)->nodes.find(node);
      if (line != (*view)->nodes.end()) {
        auto gres = parse_scontrol_node(line->second, "vgpu");
        if (gres) gres->published_at = (*view)->taken_at;
        return gres;
      }
      if (!node_budget_.take(std::chrono::steady_clock::now()))
        return fail(ErrorCode::unavailable, fmt::format("node {}: not in the cluster view yet", node));
    }
    return node_gres_now(node);
  }

  Result<NodeGres> node_gres_now(const std::string& node) override {
    auto out = run_ok({tool("scontrol"), "-o", "-d", "show", "node", node});
    if (!out) return std::unexpected(out.error());
    return parse_scontrol_node(*out, "vgpu");
  }

  Result<NodeJobs> jobs_on_node(const std::string& node) override {
    auto view = published("jobs on " + node, jobs_budget_);
    if (!view) return std::unexpected(view.error());
    if (*view) {
      NodeJobs on{.jobs = {}, .published_at = (*view)->taken_at};
      for (const auto& r : (*view)->running)
        if (NodeList(r.nodes).contains(node)) on.jobs.insert(r.job);
      return on;
    }
    auto out = run_ok({tool("squeue"), "-h", "-w", node, "-t", "R,CF,CG,S", "-o", "%A"});
    if (!out) return std::unexpected(out.error());
    auto jobs = parse_job_id_lines(*out, fmt::format("squeue -w {}", node));
    if (!jobs) return std::unexpected(jobs.error());
    return NodeJobs{.jobs = std::move(*jobs), .published_at = std::nullopt};
  }

  [[nodiscard]] std::optional<ClusterViewStatus> cluster_view_status() const override {
    if (!view_.configured()) return std::nullopt;
    const auto now = static_cast<std::int64_t>(std::time(nullptr));
    ClusterViewStatus s;
    if (const auto* source = view_.opened()) s = source->status(now);
    else
      s = {.source = ViewSetting::environment().value,
           .age_s = {},
           .usable = false,
           .problem = view_.problem(),
           .direct_queries = 0};
    s.direct_queries = demand_budget_.taken() + node_budget_.taken() + jobs_budget_.taken();
    return s;
  }

  // SLURMD_NODENAME picks this node's slurmd where one host runs several (slurm_pid2jobid).
  Result<std::optional<ProcessJob>> job_of_process(int pid) override {
    auto node = this_node_name();
    if (!node) return std::unexpected(node.error());
    CommandOptions opts;
    opts.timeout = std::chrono::seconds(20);
    opts.set_env["SLURMD_NODENAME"] = *node;
    auto r = run_command({tool("scontrol"), "pidinfo", std::to_string(pid)}, opts);
    if (!r) return std::unexpected(r.error());
    if (r->timed_out) return fail(ErrorCode::unavailable, "scontrol pidinfo: timed out");
    if (r->exit_code != 0) {
      if (r->err.find("Failed to locate job") != std::string::npos) return std::nullopt;
      return fail(ErrorCode::unavailable, fmt::format("scontrol pidinfo {} exited {}: {}", pid, r->exit_code, r->err));
    }
    auto job = parse_pidinfo_job(r->out);
    if (!job) return std::unexpected(job.error());
    struct stat st {};
    if (::stat(fmt::format("/proc/{}", pid).c_str(), &st) != 0) return std::nullopt;  // it ended meanwhile
    return ProcessJob{*job, st.st_uid, user_name(st.st_uid)};
  }

  Result<std::string> job_tres_per_node(JobId job) override {
    return run_ok({tool("squeue"), "-h", "-j", std::to_string(job), "-o", "%b"});
  }

  Result<std::string> reservation_nodes(const std::string& name) override {
    auto out = run_ok({tool("scontrol"), "-o", "show", "reservation", name});
    if (!out) return std::unexpected(out.error());
    auto booked = parse_booked_reservations(*out);
    if (!booked) return std::unexpected(booked.error());
    for (const auto& b : *booked)
      if (b.name == name) return b.nodes;
    return fail(ErrorCode::not_found, fmt::format("reservation {}: not in scontrol's answer", name));
  }

  Result<SlurmVersion> controller_version() override {
    auto out = run_ok({tool("scontrol"), "show", "config"});
    if (!out) return std::unexpected(out.error());
    return parse_show_config_version(*out);
  }

  Result<void> set_node_gres(const std::string& node, const std::string& value) override {
    auto out = run_ok({tool("scontrol"), "update", "NodeName=" + node, "Gres=" + value});
    if (!out) return std::unexpected(out.error());
    return {};
  }

  Result<void> set_node_weight(const std::string& node, std::uint32_t weight) override {
    auto out = run_ok({tool("scontrol"), "update", "NodeName=" + node, "Weight=" + std::to_string(weight)});
    if (!out) return std::unexpected(out.error());
    return {};
  }

  Result<void> set_node_features(const std::string& node, const std::string& features) override {
    auto out = run_ok({tool("scontrol"), "update", "NodeName=" + node, "AvailableFeatures=" + features,
                       "ActiveFeatures=" + features});
    if (!out) return std::unexpected(out.error());
    return {};
  }

  Result<void> reject_job(JobId job, const std::string& reason) override {
    const std::string id = name_for_slurm(job);
    auto commented = comment(id, reason);
    auto cancelled = run_ok({tool("scancel"), id});
    if (!cancelled) return std::unexpected(cancelled.error());
    if (!commented) return std::unexpected(commented.error());
    return {};
  }

  Result<void> requeue_job(JobId job, const std::string& reason) override {
    const std::string id = name_for_slurm(job);
    auto requeued = run_ok({tool("scontrol"), "requeue", id});
    if (!requeued) return std::unexpected(requeued.error());
    if (auto commented = comment(id, reason); !commented) return std::unexpected(commented.error());
    return {};
  }

 private:
  // The fresh cluster view; null where there is none to ask (slurmctld is asked, as without a
  // publisher) or where the view is stale and `budget` allows one direct question; `unavailable`
  // where it is stale and the budget is spent: the planner keeps its plan.
  Result<const contract::ClusterView*> published(const std::string& what, DirectQueryBudget& budget) {
    if (!view_.configured()) return nullptr;
    const auto tick = std::chrono::steady_clock::now();
    auto source = view_.source(tick);
    auto view = source ? (*source)->fresh_view(static_cast<std::int64_t>(std::time(nullptr)), tick)
                       : Result<const contract::ClusterView*>(std::unexpected(source.error()));
    if (view) return *view;
    if (budget.take(tick)) return nullptr;
    return fail(ErrorCode::unavailable, fmt::format("{}: {}; slurmctld was asked directly less than {} s ago", what,
                                                    view.error().message, DirectQueryBudget::kRefill.count()));
  }

  ViewSetting view_;
  DirectQueryBudget demand_budget_, node_budget_, jobs_budget_;

  // The name slurmctld takes for this job in scancel/scontrol. An array task: slurmctld refuses
  // its own number, and the array's number names every task. The prolog's environment says which
  // task this is when Slurm puts it there (not for every launch path), else slurmctld does.
  std::string name_for_slurm(JobId job) {
    std::string id = std::to_string(job);
    const char* env_job = std::getenv("SLURM_JOB_ID");
    const char* array = std::getenv("SLURM_ARRAY_JOB_ID");
    const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
    auto numeric = [](const char* s) {
      return s && *s && std::string_view(s).find_first_not_of("0123456789") == std::string_view::npos;
    };
    if (env_job && id == env_job && numeric(array) && numeric(task)) return fmt::format("{}_{}", array, task);
    if (auto shown = run_ok({tool("scontrol"), "-o", "show", "job", id}); shown)
      return job_name_for_signals(job, *shown);
    return id;
  }

  Result<std::string> comment(const std::string& id, const std::string& reason) {
    std::string clean;
    for (char c : reason) clean += (c == '\n' || c == '\r' || c == '\'' || c == '"') ? ' ' : c;
    if (clean.size() > 900) clean.resize(900);
    return run_ok({tool("scontrol"), "update", "JobId=" + id, "Comment=" + clean});
  }
};

class CommandScrubber final : public Scrubber {
 public:
  [[nodiscard]] std::string unavailable_reason() const override {
    const std::string program = this->program();
    if (::access(program.c_str(), X_OK) == 0) return "";
    return fmt::format("vgpu-scrub: {}: {} (a package built without CUDA has none)", program, std::strerror(errno));
  }

  ScrubOutcome scrub(const std::string& mig_uuid) override {
    // vgpu-scrub is a CUDA program; an AMD partition needs a HIP one, which does not exist yet.
    if (contract::is_amd_partition_uuid(mig_uuid))
      return {ScrubStatus::unavailable, "no scrubber for AMD partitions (vgpu-scrub is CUDA only)"};
    const std::string program = this->program();
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

 private:
  [[nodiscard]] static std::string program() {
    const char* env = std::getenv("VGPU_SCRUB");
    return env && *env ? env : std::string(kInstalledScrub);
  }
};

}  // namespace

std::vector<std::string> book_wide_reservations(std::string_view pending_text, std::int64_t reserve_after_s,
                                                bool& ours_may_exist, BookingRetries& retries) {
  std::vector<std::string> log;
  const auto pending = parse_pending_jobs(pending_text);
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  retries.keep_only(pending);
  if (!ours_may_exist && !has_starving_wide_job(pending, Catalog::builtin(), now, reserve_after_s)) return log;
  auto nodes = run_ok({tool("scontrol"), "-o", "show", "node"});
  auto running = run_ok({tool("squeue"), "-h", "-t", "R,CG,S", "-o", std::string(kSqueueRunningFormat)});
  auto reservations = run_ok({tool("scontrol"), "-o", "show", "reservation"});
  for (const auto* r : {&nodes, &running, &reservations})
    if (!*r) {
      log.push_back("wide jobs: " + r->error().message);
      return log;
    }
  auto node_states = parse_scontrol_nodes(*nodes);
  for (const auto& e : node_states.errors) log.push_back("wide jobs: " + e);
  auto ends = parse_running_job_ends(*running);
  auto booked = parse_booked_reservations(*reservations);
  if (!ends || !booked) {
    log.push_back("wide jobs: " + (!ends ? ends.error().message : booked.error().message));
    return log;
  }
  auto plan = plan_wide_bookings(pending, node_states, *ends, *booked, Catalog::builtin(), now, reserve_after_s);
  ours_may_exist = booked->size() > plan.remove.size() || !plan.create.empty();
  retries.keep_booked(*booked);
  for (const auto& name : plan.remove) {
    auto ok = run_ok({tool("scontrol"), "delete", "ReservationName=" + name});
    log.push_back(ok ? fmt::format("wide jobs: {}: its job neither waits nor runs; deleted", name)
                     : fmt::format("wide jobs: {}: delete: {}", name, ok.error().message));
  }
  for (const auto& b : plan.release) {
    if (!retries.may_release(b.name)) continue;
    std::vector<std::string> unbind = {tool("scontrol")};
    for (auto& a : unbind_job_args(b)) unbind.push_back(std::move(a));
    auto ok = run_ok(unbind);
    if (!ok) {
      retries.release_refused(b.name);
      log.push_back(
          fmt::format("wide jobs: {}: job {} runs, but taking it out of the reservation was refused ({}); "
                      "the reservation goes after the job",
                      b.name, b.job, ok.error().message));
      continue;
    }
    auto deleted = run_ok({tool("scontrol"), "delete", "ReservationName=" + b.name});
    log.push_back(deleted
                      ? fmt::format("wide jobs: {}: job {} runs; taken out of it and deleted ({} serve others again)",
                                    b.name, b.job, b.nodes)
                      : fmt::format("wide jobs: {}: job {} runs and was taken out of it; delete: {}", b.name, b.job,
                                    deleted.error().message));
  }
  for (const auto& b : plan.create) {
    if (!retries.may_try(b.job, now)) continue;  // refused before; its next try is not due
    std::vector<std::string> create = {tool("scontrol")}, bind = {tool("scontrol")};
    for (auto& a : create_reservation_args(b)) create.push_back(std::move(a));
    for (auto& a : bind_job_args(b)) bind.push_back(std::move(a));
    if (auto ok = run_ok(create); !ok) {
      log.push_back(fmt::format("wide jobs: job {}: create {}: {}; tried again in {} s", b.job, b.name,
                                ok.error().message, retries.refused(b.job, now)));
      continue;
    }
    if (auto ok = run_ok(bind); !ok) {
      // An unbound reservation would hold its nodes for nobody: take it back.
      (void)run_ok({tool("scontrol"), "delete", "ReservationName=" + b.name});
      log.push_back(fmt::format("wide jobs: job {}: bind to {}: {}; tried again in {} s", b.job, b.name,
                                ok.error().message, retries.refused(b.job, now)));
      continue;
    }
    retries.booked(b.job);
    std::string list;
    for (const auto& n : b.nodes) list += (list.empty() ? "" : ",") + n;
    log.push_back(fmt::format("wide jobs: job {} waited past {} s: reserved {} as {} ({})", b.job, reserve_after_s,
                              list, b.name, create_reservation_args(b)[3]));
  }
  for (const auto& n : plan.notes) log.push_back("wide jobs: " + n);
  return log;
}

std::unique_ptr<SlurmClient> make_command_slurm_client() { return std::make_unique<CommandSlurmClient>(); }
std::unique_ptr<Scrubber> make_command_scrubber() { return std::make_unique<CommandScrubber>(); }

}  // namespace vgpu::agent
