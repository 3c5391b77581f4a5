// vgpu-viz: start, stop, list and reap visualization sessions on this node; run as a Slurm step
// with no subcommand it starts the job's session, prints how to reach it, and tears it down when
// the step ends (SIGTERM from Slurm, Ctrl-C, 'q' on stdin) or the guest powers off.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <set>
#include <string>

#include "file_util.h"
#include "hypervisor.h"
#include "proxy.h"
#include "session_manager.h"
#include "sysfs.h"
#include "viz_config.h"

namespace {

using namespace vgpu;
using namespace vgpu::viz;

struct Options {
  std::string config_path;
  std::string job;
  std::string pool;
  std::string image;
  std::string geometry;
  std::string user;
  std::string job_name;
  std::string cpuset;
  std::string device;
  std::string gpu_instance;
  std::string access_file;
  std::string live;
  std::string out;
};

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

int report(const Error& e) {
  std::fprintf(stderr, "%s\n", e.message.c_str());
  return e.code == ErrorCode::invalid_argument ? 2 : 1;
}

// Everything a command needs, opened once.
struct Context {
  VizConfig config;
  std::unique_ptr<Hypervisor> hv;
  std::unique_ptr<RootedSysfs> sysfs;
  std::unique_ptr<WebsockifyProxy> proxy;
  std::unique_ptr<SessionManager> sessions;
};

Result<Context> open_context(const Options& o) {
  Context c;
  auto config = load_viz_config(o.config_path);
  if (!config) return std::unexpected(config.error().within("vgpu-viz"));
  c.config = std::move(*config);
  auto hv = open_libvirt(c.config.libvirt_uri);
  if (!hv) return std::unexpected(hv.error().within("vgpu-viz"));
  c.hv = std::move(*hv);
  c.sysfs = std::make_unique<RootedSysfs>(c.config.sysfs_root);
  return c;
}

// The manager keeps references into the context, so it is built after the context has its
// final address.
void attach_manager(Context& c) {
  c.proxy = std::make_unique<WebsockifyProxy>(c.config, c.config.state_dir + "/tokens");
  c.sessions = std::make_unique<SessionManager>(c.config, *c.hv, *c.sysfs, *c.proxy, system_random());
}

// The secret goes to stdout (the user's terminal or job output) or to a 0600 file; never stderr,
// which slurmd and test harnesses tend to collect into shared logs.
Result<void> announce(const StartedSession& s, const Options& o, bool rotated) {
  const std::string text = fmt::format(
      "vgpu-viz: job {}: {} (domain {}, pool {})\n"
      "  1. on your machine:  {}\n"
      "  2. open:             {}\n"
      "  password:            {}\n",
      s.record.job_id, rotated ? "display password changed" : "session is up", s.record.domain, s.record.pool,
      s.access.ssh_line, s.access.url, s.password);
  if (!o.access_file.empty()) {
    const auto slash = o.access_file.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : o.access_file.substr(0, std::max<std::size_t>(slash, 1));
    if (auto ok = write_file_atomic(o.access_file, dir, text, 0600); !ok) return ok;
    std::printf("vgpu-viz: job %u: session is up; how to connect is in %s\n", s.record.job_id, o.access_file.c_str());
  } else {
    std::fputs(text.c_str(), stdout);
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
  attach_manager(*c);
  auto s = c->sessions->start(*req);
  if (!s) return report(s.error());
  if (auto ok = announce(*s, o, false); !ok) {
    (void)c->sessions->stop(req->job_id);
    return report(ok.error());
  }
  return 0;
}

int cmd_stop(const Options& o) {
  auto job = parse_job_id(o.job);
  if (!job) return report(job.error().within("vgpu-viz"));
  auto c = open_context(o);
  if (!c) return report(c.error());
  attach_manager(*c);
  if (auto ok = c->sessions->stop(*job); !ok) return report(ok.error());
  std::printf("vgpu-viz: job %u: session stopped\n", *job);
  return 0;
}

int cmd_list(const Options& o) {
  auto c = open_context(o);
  if (!c) return report(c.error());
  attach_manager(*c);
  auto sessions = c->sessions->list();
  if (!sessions) return report(sessions.error());
  auto domains = c->hv->list(kDomainPrefix);
  std::set<std::string> active;
  if (domains) {
    for (const auto& d : *domains) {
      if (d.active) active.insert(d.name);
    }
  }
  std::printf("%-10s %-18s %-12s %-10s %-12s %-8s %s\n", "JOB", "DOMAIN", "POOL", "USER", "ATTACH", "DISPLAY", "STATE");
  for (const auto& s : *sessions) {
    std::printf("%-10u %-18s %-12s %-10s %-12s %-8d %s%s\n", s.job_id, s.domain.c_str(), s.pool.c_str(),
                s.user.c_str(), std::string(to_string(s.attachment.kind)).c_str(), s.display_port, s.phase.c_str(),
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
  attach_manager(*c);
  auto r = c->sessions->reap(live);
  if (!r) return report(r.error());
  for (const auto job : r->removed) std::printf("vgpu-viz: reap: job %u: removed\n", job);
  for (const auto& p : r->problems) std::fprintf(stderr, "%s\n", p.c_str());
  return r->problems.empty() ? 0 : 1;
}

int cmd_rotate(const Options& o) {
  auto job = parse_job_id(o.job);
  if (!job) return report(job.error().within("vgpu-viz"));
  auto c = open_context(o);
  if (!c) return report(c.error());
  attach_manager(*c);
  auto s = c->sessions->rotate_password(*job);
  if (!s) return report(s.error());
  auto ok = announce(*s, o, true);
  return ok ? 0 : report(ok.error());
}

int cmd_screenshot(const Options& o) {
  auto job = parse_job_id(o.job);
  if (!job) return report(job.error().within("vgpu-viz"));
  auto c = open_context(o);
  if (!c) return report(c.error());
  if (auto ok = c->hv->screenshot(domain_name(*job), o.out); !ok) return report(ok.error());
  std::printf("vgpu-viz: job %u: screenshot written to %s\n", *job, o.out.c_str());
  return 0;
}

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

// The Slurm-step mode: start, announce, wait, tear down. Teardown runs on every exit path
// after a successful start, so the session never outlives the step.
int cmd_run(Options o) {
  if (o.job.empty()) o.job = env_or("SLURM_JOB_ID", "");
  if (o.pool.empty()) o.pool = env_or("VGPU_VIZ_POOL", "");
  if (o.job.empty()) return report(Error{ErrorCode::invalid_argument, "vgpu-viz: no --job and no SLURM_JOB_ID"});
  if (o.pool.empty()) return report(Error{ErrorCode::invalid_argument, "vgpu-viz: no --pool and no VGPU_VIZ_POOL"});
  auto req = start_request(o);
  if (!req) return report(req.error());
  struct sigaction sa{};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  auto c = open_context(o);
  if (!c) return report(c.error());
  attach_manager(*c);
  auto s = c->sessions->start(*req);
  if (!s) return report(s.error());
  int rc = 0;
  if (auto ok = announce(*s, o, false); !ok) {
    rc = report(ok.error());
  } else {
    std::printf("vgpu-viz: job %u: press q and Enter (or end the job) to stop the session\n", req->job_id);
    std::fflush(stdout);
    const bool interactive = isatty(STDIN_FILENO) == 1;
    // The printed password is good for one login: after the first client authenticates, the
    // session gets a fresh one (shown only here), so a URL copied into a log or history is dead.
    bool rotated = false;
    if (auto watching = c->hv->watch_logins(s->record.domain); !watching) {
      std::fprintf(stderr, "%s (the password will not be rotated)\n", watching.error().message.c_str());
      rotated = true;
    }
    while (g_stop_signal == 0) {
      auto logins = c->hv->wait_logins(1000);
      if (!logins) {
        rc = report(logins.error());
        break;
      }
      if (*logins > 0 && !rotated) {
        rotated = true;
        auto fresh = c->sessions->rotate_password(req->job_id);
        if (!fresh) {
          std::fprintf(stderr, "%s\n", fresh.error().message.c_str());
        } else if (auto told = announce(*fresh, o, true); !told) {
          std::fprintf(stderr, "%s\n", told.error().message.c_str());
        }
      }
      pollfd p{STDIN_FILENO, POLLIN, 0};
      if (interactive && poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0) {
        char buf[64];
        const ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
        if (got <= 0 || buf[0] == 'q') break;
      }
      auto domains = c->hv->list(s->record.domain);
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
  if (auto ok = c->sessions->stop(req->job_id); !ok) rc = report(ok.error());
  std::printf("vgpu-viz: job %u: session stopped\n", req->job_id);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vgpu-viz - visualization sessions (VM with a (v)GPU, shown through noVNC)"};
  Options o;
  o.config_path = env_or("VGPU_VIZ_CONFIG", "/etc/slurm-vgpu/viz.json");
  o.user = env_or("SLURM_JOB_USER", env_or("USER", ""));
  o.job_name = env_or("SLURM_JOB_NAME", "");
  app.add_option("--config", o.config_path, "viz config file (env VGPU_VIZ_CONFIG)");
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
  session_options(&app);

  auto* start = app.add_subcommand("start", "start a session for a job and print how to reach it");
  start->add_option("--job", o.job, "job id")->required();
  session_options(start);
  start->callback([&] {});
  auto* stop = app.add_subcommand("stop", "destroy a job's session: domain, device, token");
  stop->add_option("--job", o.job, "job id")->required();
  auto* list = app.add_subcommand("list", "list sessions on this node");
  auto* reap = app.add_subcommand("reap", "remove sessions whose job is no longer running");
  reap->add_option("--live", o.live, "comma-separated ids of jobs still running on this node");
  auto* rotate = app.add_subcommand("rotate", "give a running session a new display password");
  rotate->add_option("--job", o.job, "job id")->required();
  rotate->add_option("--access-file", o.access_file, "write URL and password to this 0600 file, not stdout");
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
  return cmd_run(o);
}
