#include <charconv>
#include <filesystem>
#include <fmt/format.h>

#include "file_util.h"
#include "proxy.h"
#include "validate.h"
#include "web_root.h"
#include "websockify_process.h"

namespace vgpu::viz {
namespace {

struct Recorded {
  pid_t pid = 0;
  std::uint16_t port = 0;
};

// "<pid> <port>\n", nothing else.
std::optional<Recorded> parse_state(const std::string& text) {
  Recorded r;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto a = std::from_chars(p, end, r.pid);
  if (a.ec != std::errc() || a.ptr == end || *a.ptr != ' ') return std::nullopt;
  auto b = std::from_chars(a.ptr + 1, end, r.port);
  if (b.ec != std::errc() || b.ptr + 1 != end || *b.ptr != '\n' || r.pid <= 1 || r.port == 0) return std::nullopt;
  return r;
}

}  // namespace

WebsockifySessionProxy::WebsockifySessionProxy(const VizConfig& config) : config_(config) {}

std::string WebsockifySessionProxy::dir() const { return config_.state_dir + "/ood"; }

std::string WebsockifySessionProxy::state_path(std::uint32_t job) const { return fmt::format("{}/{}", dir(), job); }

Result<std::uint16_t> WebsockifySessionProxy::start(std::uint32_t job, const std::string& vnc_socket) {
  const std::string ctx = fmt::format("OnDemand proxy of job {}", job);
  if (auto ok = make_dirs(dir(), 0700); !ok) return std::unexpected(ok.error().within(ctx));
  const std::string web_root = config_.state_dir + "/web";
  if (auto ok = prepare_web_root(web_root, config_.novnc_dir); !ok) return std::unexpected(ok.error().within(ctx));
  const unsigned span = config_.ood_port_max - config_.ood_port_min + 1U;
  // Start where this job's ports would fall, so concurrent starts rarely race for one port; a
  // port taken meanwhile makes websockify exit at bind, and the next one is tried.
  std::string last_problem = "no free port";
  for (unsigned tries = 0, offset = job % span; tries < std::min(span, 64U); ++tries, offset = (offset + 1) % span) {
    const auto port = static_cast<std::uint16_t>(config_.ood_port_min + offset);
    if (port_accepts(config_.ood_listen_address, port)) continue;
    const std::string listen = fmt::format("{}:{}", config_.ood_listen_address, port);
    auto pid = spawn_detached({config_.websockify, "--web", web_root, "--unix-target=" + vnc_socket, listen},
                              state_path(job) + ".log");
    if (!pid) return std::unexpected(pid.error().within(ctx));
    if (auto ok = write_file_atomic(state_path(job), dir(), fmt::format("{} {}\n", *pid, port), 0600); !ok) {
      stop_process_group(*pid);
      return std::unexpected(ok.error().within(ctx));
    }
    int status = 0;
    if (wait_until_listening(*pid, config_.ood_listen_address, port, status) == Startup::listening) return port;
    stop_process_group(*pid);
    (void)remove_file(state_path(job));
    last_problem = fmt::format("websockify did not listen on {}; see {}.log", listen, state_path(job));
  }
  return fail(ErrorCode::unavailable, fmt::format("{}: {} in {}..{} on {}", ctx, last_problem, config_.ood_port_min,
                                                  config_.ood_port_max, config_.ood_listen_address));
}

Result<void> WebsockifySessionProxy::stop(std::uint32_t job) {
  auto text = read_file(state_path(job));
  if (!text) return {};
  if (auto r = parse_state(*text); r && is_websockify(r->pid)) stop_process_group(r->pid);
  (void)remove_file(state_path(job) + ".log");
  return remove_file(state_path(job));
}

std::optional<std::uint16_t> WebsockifySessionProxy::port(std::uint32_t job) const {
  auto text = read_file(state_path(job));
  if (!text) return std::nullopt;
  auto r = parse_state(*text);
  if (!r) return std::nullopt;
  return r->port;
}

std::vector<std::uint32_t> WebsockifySessionProxy::jobs() const {
  std::vector<std::uint32_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir(), ec)) {
    if (e.path().has_extension()) continue;  // <job>.log, temporaries
    if (auto job = parse_job_id(e.path().filename().string())) out.push_back(*job);
  }
  return out;
}

}  // namespace vgpu::viz
