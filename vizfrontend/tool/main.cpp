// vgpu-viz: start, stop, list and reap visualization sessions on this node. With no subcommand it
// is the user's Slurm step: it shows the session the job's prolog started (slurm_session.h), or,
// given --pool, starts one itself and tears it down when the step ends.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <set>
#include <string>

#include "context.h"
#include "file_util.h"
#include "slurm_session.h"
#include "validate.h"
#include "hypervisor.h"
#include "proxy.h"
#include "session_manager.h"
#include "sysfs.h"
#include "viz_config.h"
#include "vgpu/contract/node_files.h"

namespace {

using namespace vgpu;
using namespace vgpu::viz;
using namespace vgpu::viz::tool;

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// The secret goes to stdout (the user's terminal or job output) or to a 0600 file; never stderr,
// which slurmd and test harnesses tend to collect into shared logs. A Slurm session (--owner)
// writes it to the job's access file, owned by the job's user, and prints only where it is.
std::string describe(const Attachment& a) {
  std::string out(to_string(a.kind));
  if (!a.parent.empty()) out += ":" + a.parent;
  return out;
}

Result<void> announce(const StartedSession& s, const Options& o, const VizConfig& config, bool rotated) {
  // What runs the guest goes to the log (stderr), not to the user's access text.
  if (s.accelerator)
    std::fprintf(stderr, "vgpu-viz: job %u: guest under %s\n", s.record.job_id, s.accelerator->reason.c_str());
  const std::string text = access_text(s, rotated);
  std::string file = o.access_file;
  std::optional<Owner> owner;
  if (!o.owner.empty()) {
    auto found = resolve_owner(o.owner);
    if (!found) return std::unexpected(found.error());
    owner = *found;
    if (file.empty()) file = access_path(config, s.record.job_id);
  }
  if (!o.ood_connection.empty()) {
    if (auto ok = write_ood_connection(o.ood_connection, text); !ok) return ok;
  }
  if (file.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    if (auto ok = write_access_file(file, text, owner); !ok) return ok;
    std::printf("vgpu-viz: job %u: session is up (domain %s, device %s); how to connect is in %s\n", s.record.job_id,
                s.record.domain.c_str(), describe(s.record.attachment).c_str(), file.c_str());
  }
  std::fflush(stdout);
  return {};
}

Result<StartRequest> start_request(const Options& o) {
  StartRequest r;
  auto job = parse_job_id(o.job);
  if (!job) return std::unexpected(job.error().within("vgpu-viz"));
  r.job_id = *job;
  r.pool = o.pool;
  r.image = o.image;
  if (!o.geometry.empty()) {
    auto g = parse_geometry(o.geometry);
    if (!g) return std::unexpected(g.error().within(fmt::format("vgpu-viz: job {}", *job)));
    r.geometry = *g;
  }
  r.user = o.user;
  r.job_name = o.job_name;
  r.cpuset = o.cpuset;
  r.device = o.device;
  r.gpu_instance = o.gpu_instance;
  return r;
}

int cmd_start(const Options& o) {
  auto req = start_request(o);
  if (!req) return report(req.error());
  auto c = open_context(o);
  if (!c) return report(c.error());
  Context& ctx = **c;
  if (!o.owner.empty()) {
    // Slurm session: the access directory is root's and only traversable, so a user can open
    // their own file by name but neither list nor plant anything there.
    if (auto ok = make_dirs(ctx.config.access_dir, 0711); !ok) return report(ok.error());
    ::chmod(ctx.config.access_dir.c_str(), 0711);
  }
  auto s = ctx.sessions->start(*req);
  if (!s) return report(s.error());
  auto undo = [&](const Error& e) {
    (void)ctx.sessions->stop(req->job_id);
    return report(e);
  };
  if (auto ok = announce(*s, o, ctx.config, false); !ok) return undo(ok.error());
  if (!o.owner.empty()) {
    // The user's step asks for another image/geometry through this file; the guard reads it.
    auto owner = resolve_owner(o.owner);
    const std::string request = request_path(access_path(ctx.config, req->job_id));
    const int fd = ::open(request.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || !owner || fchown(fd, owner->uid, owner->gid) != 0) {
      if (fd >= 0) ::close(fd);
      return undo(Error{ErrorCode::io, fmt::format("vgpu-viz: job {}: {}: cannot prepare", req->job_id, request)});
    }
    ::close(fd);
  }
  if (o.guard) {
    if (auto ok = spawn_guard(o, ctx.config, req->job_id); !ok) return undo(ok.error());
  }
  return 0;
}

int cmd_stop(const Options& o) {
  auto job = parse_job_id(o.job);
  if (!job) return report(job.error().within("vgpu-viz"));
  auto c = open_context(o);
  if (!c) return report(c.error());
  if (auto ok = (*c)->sessions->stop(*job); !ok) return report(ok.error());
  const std::string access = access_path((*c)->config, *job);
  for (const auto& f : {access, request_path(access), access + ".error"})
    if (auto ok = remove_file(f); !ok) return report(ok.error());
  std::printf("vgpu-viz: job %u: session stopped\n", *job);
  return 0;
}

int cmd_list(const Options& o) {
  auto c = open_context(o);
  if (!c) return report(c.error());
  auto sessions = (*c)->sessions->list();
  if (!sessions) return report(sessions.error());
  auto domains = (*c)->hv->list(kDomainPrefix);
  std::set<std::string> active;
  if (domains) {
    for (const auto& d : *domains) {
      if (d.active) active.insert(d.name);
    }
  }
  std::printf("%-10s %-18s %-12s %-10s %-12s %-8s %s\n", "JOB", "DOMAIN", "POOL", "USER", "ATTACH", "DISPLAY", "STATE");
  for (const auto& s : *sessions) {
    std::printf("%-10u %-18s %-12s %-10s %-12s %-8d %s%s\n", s.job_id, s.domain.c_str(), s.pool.c_str(), s.user.c_str(),
                std::string(to_string(s.attachment.kind)).c_str(), s.display_port, s.phase.c_str(),
                active.contains(s.domain) ? "" : " (domain not running)");
  }
  return 0;
}

int cmd_reap(const Options& o) {
  std::set<std::uint32_t> live;
  std::string_view rest = o.live;
  while (!rest.empty()) {
    const auto comma = std::min(rest.find(','), rest.size());
    auto job = parse_job_id(rest.substr(0, comma));
    if (!job) return report(job.error().within("vgpu-viz: reap: --live"));
    live.insert(*job);
    rest = comma < rest.size() ? rest.substr(comma + 1) : std::string_view{};
  }
  auto c = open_context(o);
  if (!c) return report(c.error());
  auto r = (*c)->sessions->reap(live);
  if (!r) return report(r.error());
  for (const auto job : r->removed) {
    const std::string access = access_path((*c)->config, job);
    for (const auto& f : {access, request_path(access), access + ".error"}) (void)remove_file(f);
    std::printf("vgpu-viz: reap: job %u: removed\n", job);
  }
  for (const auto& p : r->problems) std::fprintf(stderr, "%s\n", p.c_str());
  return r->problems.empty() ? 0 : 1;
}

int cmd_rotate(const Options& o) {
  auto job = parse_job_id(o.job);
  if (!job) return report(job.error().within("vgpu-viz"));
  auto c = open_context(o);
  if (!c) return report(c.error());
  auto s = (*c)->sessions->rotate_password(*job);
  if (!s) return report(s.error());
  auto ok = announce(*s, o, (*c)->config, true);
  return ok ? 0 : report(ok.error());
}

int cmd_screenshot(const Options& o) {
  auto job = parse_job_id(o.job);
  if (!job) return report(job.error().within("vgpu-viz"));
  auto c = open_context(o);
  if (!c) return report(c.error());
  if (auto ok = (*c)->hv->screenshot(domain_name(*job), o.out); !ok) return report(ok.error());
  std::printf("vgpu-viz: job %u: screenshot written to %s\n", *job, o.out.c_str());
  return 0;
}

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

// The step mode. A job that asked for --gres=vgpu:<pool>:1 already has its session (the prolog
// started it): show it and follow it, no privileges needed. Otherwise, with --pool, the step
// starts a session itself (needs libvirt access) and tears it down on every exit path.
int cmd_run(Options o) {
  if (o.job.empty()) o.job = env_or("SLURM_JOB_ID", "");
  if (o.pool.empty()) o.pool = env_or("VGPU_VIZ_POOL", "");
  if (o.job.empty()) return report(Error{ErrorCode::invalid_argument, "vgpu-viz: no --job and no SLURM_JOB_ID"});
  auto job = parse_job_id(o.job);
  if (!job) return report(job.error().within("vgpu-viz"));
  if (o.pool.empty()) {
    auto config = load_viz_config(o.config_path);
    if (!config) return report(config.error().within("vgpu-viz"));
    auto attached = attach_to_session(o, *config, *job);
    if (attached) return *attached;
    return report(Error{ErrorCode::invalid_argument,
                        attached.error().message + "; ask for one with srun --gres=vgpu:<viz pool>:1 vgpu-viz"});
  }
  auto req = start_request(o);
  if (!req) return report(req.error());
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  auto c = open_context(o);
  if (!c) return report(c.error());
  auto s = (*c)->sessions->start(*req);
  if (!s) return report(s.error());
  int rc = 0;
  if (auto ok = announce(*s, o, (*c)->config, false); !ok) {
    rc = report(ok.error());
  } else {
    std::printf("vgpu-viz: job %u: press q and Enter (or end the job) to stop the session\n", req->job_id);
    std::fflush(stdout);
    const bool interactive = isatty(STDIN_FILENO) == 1;
    // The printed password is good for one login: after the first client authenticates, the
    // session gets a fresh one (shown only here), so a URL copied into a log or history is dead.
    bool rotated = false;
    if (auto watching = (*c)->hv->watch_logins(s->record.domain); !watching) {
      std::fprintf(stderr, "%s (the password will not be rotated)\n", watching.error().message.c_str());
      rotated = true;
    }
    while (g_stop_signal == 0) {
      auto logins = (*c)->hv->wait_logins(1000);
      if (!logins) {
        rc = report(logins.error());
        break;
      }
      if (*logins > 0 && !rotated) {
        rotated = true;
        auto fresh = (*c)->sessions->rotate_password(req->job_id);
        if (!fresh) {
          std::fprintf(stderr, "%s\n", fresh.error().message.c_str());
        } else if (auto told = announce(*fresh, o, (*c)->config, true); !told) {
          std::fprintf(stderr, "%s\n", told.error().message.c_str());
        }
      }
      pollfd p{STDIN_FILENO, POLLIN, 0};
      if (interactive && poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0) {
        char buf[64];
        const ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
        if (got <= 0 || buf[0] == 'q') break;
      }
      auto domains = (*c)->hv->list(s->record.domain);
      bool running = false;
      if (domains) {
        for (const auto& d : *domains) running = running || (d.name == s->record.domain && d.active);
      }
      if (!running) {
        std::printf("vgpu-viz: job %u: the guest has stopped\n", req->job_id);
        break;
      }
    }
  }
  if (auto ok = (*c)->sessions->stop(req->job_id); !ok) rc = report(ok.error());
  std::printf("vgpu-viz: job %u: session stopped\n", req->job_id);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vgpu-viz - visualization sessions (VM with a (v)GPU, shown through noVNC)"};
  Options o;
  o.config_path = contract::resolve_viz_config_path(std::getenv("VGPU_VIZ_CONFIG"));
  o.user = env_or("SLURM_JOB_USER", env_or("USER", ""));
  o.job_name = env_or("SLURM_JOB_NAME", "");
  o.policy_path = env_or("VGPU_POLICY", "");
  app.add_option("--config", o.config_path, "viz config file (env VGPU_VIZ_CONFIG)");
  app.add_option("--policy", o.policy_path, "slurm-vgpu policy file whose viz pools to offer (env VGPU_POLICY)");
  auto session_options = [&](CLI::App* sub) {
    sub->add_option("--pool", o.pool, "viz pool name");
    sub->add_option("--image", o.image, "named image offered by the node (default: the pool's)");
    sub->add_option("--geometry", o.geometry, "display size WxH (at most the pool's max_geometry)");
    sub->add_option("--user", o.user, "user shown in the session metadata");
    sub->add_option("--job-name", o.job_name, "job name shown in the session metadata");
    sub->add_option("--cpuset", o.cpuset, "host CPUs for the vCPUs, e.g. 0-3 (from GPU locality)");
    sub->add_option("--device", o.device, "PCI address of the GPU/parent given to the job");
    sub->add_option("--gpu-instance", o.gpu_instance, "MIG GPU instance id (attach mig-vgpu)");
    sub->add_option("--access-file", o.access_file, "write URL and password to this 0600 file, not stdout");
  };
  // No subcommand: the Slurm step mode, which takes the same options.
  app.add_option("--job", o.job, "job id (default SLURM_JOB_ID)");
  app.add_option("--ood-connection", o.ood_connection,
                 "keep Open OnDemand's connection file (connection.yml) here up to date with the session");
  session_options(&app);

  auto* start = app.add_subcommand("start", "start a session for a job and print how to reach it");
  start->add_option("--job", o.job, "job id")->required();
  session_options(start);
  start->add_option("--owner", o.owner, "Slurm session: the job's user; the access file goes to access_dir/<job>");
  start->add_flag("--guard", o.guard, "leave a guard that rotates the password after the first login");
  start->callback([&] {});
  auto* stop = app.add_subcommand("stop", "destroy a job's session: domain, device, token");
  stop->add_option("--job", o.job, "job id")->required();
  auto* list = app.add_subcommand("list", "list sessions on this node");
  auto* reap = app.add_subcommand("reap", "remove sessions whose job is no longer running");
  reap->add_option("--live", o.live, "comma-separated ids of jobs still running on this node");
  auto* rotate = app.add_subcommand("rotate", "give a running session a new display password");
  rotate->add_option("--job", o.job, "job id")->required();
  rotate->add_option("--access-file", o.access_file, "write URL and password to this 0600 file, not stdout");
  auto* guard = app.add_subcommand("guard", "watch a Slurm session (started by `start --guard`)");
  guard->add_option("--job", o.job, "job id")->required();
  guard->add_option("--owner", o.owner, "the job's user (owner of the access file)");
  auto* shot = app.add_subcommand("screenshot", "save the guest's screen as PNG");
  shot->add_option("--job", o.job, "job id")->required();
  shot->add_option("--out", o.out, "PNG file")->required();
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (start->parsed()) {
    if (o.pool.empty()) return report(Error{ErrorCode::invalid_argument, "vgpu-viz: start: --pool is required"});
    return cmd_start(o);
  }
  if (stop->parsed()) return cmd_stop(o);
  if (list->parsed()) return cmd_list(o);
  if (reap->parsed()) return cmd_reap(o);
  if (rotate->parsed()) return cmd_rotate(o);
  if (shot->parsed()) return cmd_screenshot(o);
  if (guard->parsed()) return cmd_guard(o);
  return cmd_run(o);
}
