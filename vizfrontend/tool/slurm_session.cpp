#include "slurm_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <thread>
#include <vector>

#include "file_util.h"
#include "validate.h"

namespace vgpu::viz::tool {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop(int sig) { g_stop = sig; }
void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

struct FileStamp {
  ino_t ino = 0;
  timespec mtime{};
  bool exists = false;
  bool operator==(const FileStamp& o) const {
    return ino == o.ino && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && exists == o.exists;
  }
};
FileStamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_ino, st.st_mtim, true};
}

// Reads (and empties) the request file without following links: the file belongs to the user.
Result<std::string> take_request(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::string{};
  struct stat st {};
  std::string text;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size <= 4096) {
    text.resize(static_cast<std::size_t>(st.st_size));
    const ssize_t n = pread(fd, text.data(), text.size(), 0);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  if (st.st_size > 0) (void)ftruncate(fd, 0);
  ::close(fd);
  return text;
}

struct Request {
  std::string image;
  std::optional<Geometry> geometry;
};
// "image=NAME geometry=WxH", either may be left out; anything else is refused.
Result<Request> parse_request(std::string_view text) {
  Request r;
  while (!text.empty()) {
    const auto end = std::min(text.find_first_of(" \n"), text.size());
    const std::string_view word = text.substr(0, end);
    text = end < text.size() ? text.substr(end + 1) : std::string_view{};
    if (word.empty()) continue;
    if (word.starts_with("image=")) {
      auto name = check_name("image", word.substr(6));
      if (!name) return std::unexpected(name.error());
      r.image = *name;
    } else if (word.starts_with("geometry=")) {
      auto g = parse_geometry(word.substr(9));
      if (!g) return std::unexpected(g.error());
      r.geometry = *g;
    } else {
      return fail(ErrorCode::invalid_argument, fmt::format("request: unknown item '{}'", printable_label(word)));
    }
  }
  return r;
}

bool domain_running(Hypervisor& hv, const std::string& domain) {
  auto domains = hv.list(domain);
  if (!domains) return true;  // libvirt hiccup: do not take it for the end of the session
  for (const auto& d : *domains)
    if (d.name == domain && d.active) return true;
  return false;
}

}  // namespace

std::string request_path(const std::string& access_file) { return access_file + ".request"; }

Result<void> spawn_guard(const Options& o, const VizConfig& config, std::uint32_t job) {
  std::vector<std::string> args = {"vgpu-viz", "--config", o.config_path};
  if (!o.policy_path.empty()) args.insert(args.end(), {"--policy", o.policy_path});
  args.insert(args.end(), {"guard", "--job", std::to_string(job)});
  if (!o.owner.empty()) args.insert(args.end(), {"--owner", o.owner});
  const std::string log = fmt::format("{}/guard.{}.log", config.state_dir, job);
  const pid_t child = fork();
  if (child < 0)
    return fail(ErrorCode::io, fmt::format("vgpu-viz: job {}: guard: fork: {}", job, std::strerror(errno)));
  if (child == 0) {
    // Detach twice: the guard must not be the prolog's child (slurmd waits for those) nor hold
    // the prolog's output pipes open.
    setsid();
    if (fork() != 0) _exit(0);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    dup2(null_fd, 0);
    dup2(log_fd >= 0 ? log_fd : null_fd, 1);
    dup2(log_fd >= 0 ? log_fd : null_fd, 2);
    close_range(3, ~0U, 0);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return {};
}

int cmd_guard(const Options& o) {
  auto job = parse_job_id(o.job);
  if (!job) return report(job.error().within("vgpu-viz: guard"));
  catch_stop_signals();
  auto c = open_context(o);
  if (!c) return report(c.error());
  std::optional<Owner> owner;
  if (!o.owner.empty()) {
    auto found = resolve_owner(o.owner);
    if (!found) return report(found.error());
    owner = *found;
  }
  Context& ctx = **c;
  const std::string domain = domain_name(*job);
  const std::string access = access_path(ctx.config, *job);
  const std::string where = fmt::format("vgpu-viz: guard: job {}", *job);
  auto watch = [&] {
    if (auto ok = ctx.hv->watch_logins(domain); !ok)
      std::fprintf(stderr, "%s: %s (the password will not be rotated)\n", where.c_str(), ok.error().message.c_str());
    else
      return false;
    return true;
  };
  bool rotated = watch();
  std::fprintf(stderr, "%s: watching %s\n", where.c_str(), domain.c_str());
  while (g_stop == 0) {
    auto logins = ctx.hv->wait_logins(1000);
    // The printed password is good for one login: after the first client authenticates, the
    // session gets a fresh one (only in the user's access file), so a leaked URL is dead.
    if (logins && *logins > 0 && !rotated) {
      rotated = true;
      auto fresh = ctx.sessions->rotate_password(*job);
      if (!fresh) std::fprintf(stderr, "%s: %s\n", where.c_str(), fresh.error().message.c_str());
      else if (auto ok = write_access_file(access, access_text(*fresh, true), owner); !ok)
        std::fprintf(stderr, "%s: %s\n", where.c_str(), ok.error().message.c_str());
      else
        std::fprintf(stderr, "%s: first login; display password rotated\n", where.c_str());
    }
    if (auto text = take_request(request_path(access)); text && !text->empty()) {
      auto req = parse_request(*text);
      auto record = ctx.sessions->list();
      std::optional<SessionRecord> current;
      if (record)
        for (const auto& r : *record)
          if (r.job_id == *job) current = r;
      if (!req || !current) {
        const std::string why = req ? "no session record" : req.error().message;
        std::fprintf(stderr, "%s: request refused: %s\n", where.c_str(), why.c_str());
        (void)write_access_file(access + ".error", fmt::format("vgpu-viz: job {}: {}\n", *job, why), owner);
      } else {
        StartRequest again{*job, current->pool, req->image, req->geometry, current->user, "", "", "", ""};
        std::fprintf(stderr, "%s: restarting the session as the user asked\n", where.c_str());
        (void)ctx.sessions->stop(*job);
        auto started = ctx.sessions->start(again);
        if (!started) {
          std::fprintf(stderr, "%s: %s; back to the pool's defaults\n", where.c_str(), started.error().message.c_str());
          (void)write_access_file(access + ".error", fmt::format("{}\n", started.error().message), owner);
          again.image.clear();
          again.geometry.reset();
          started = ctx.sessions->start(again);
        }
        if (started) {
          (void)write_access_file(access, access_text(*started, false), owner);
          rotated = watch();
        } else {
          std::fprintf(stderr, "%s: %s\n", where.c_str(), started.error().message.c_str());
        }
      }
    }
    if (!domain_running(*ctx.hv, domain)) {
      std::fprintf(stderr, "%s: the session has ended\n", where.c_str());
      break;
    }
  }
  return 0;
}

Result<int> attach_to_session(const Options& o, const VizConfig& config, std::uint32_t job) {
  const std::string access = access_path(config, job);
  if (!stamp(access).exists)
    return fail(ErrorCode::not_found, fmt::format("vgpu-viz: job {}: no viz session on this node", job));
  catch_stop_signals();
  FileStamp seen = stamp(access);
  if (!o.image.empty() || !o.geometry.empty()) {
    // Ask the node side for a session with this image/geometry and wait for the new one.
    std::string request;
    if (!o.image.empty()) request += "image=" + o.image + " ";
    if (!o.geometry.empty()) request += "geometry=" + o.geometry;
    (void)remove_file(access + ".error");
    const int fd = ::open(request_path(access).c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || ::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
      if (fd >= 0) ::close(fd);
      return fail(ErrorCode::io,
                  fmt::format("vgpu-viz: job {}: cannot ask for image/geometry: {}", job, std::strerror(errno)));
    }
    ::close(fd);
    std::printf("vgpu-viz: job %u: restarting your session with %s\n", job, request.c_str());
    std::fflush(stdout);
    for (int i = 0; i < 1200 && g_stop == 0 && stamp(access) == seen; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (auto err = read_file(access + ".error"); err) std::fprintf(stderr, "%s", err->c_str());
  }
  seen = FileStamp{};
  if (!o.ood_connection.empty()) {
    auto text = read_file(access);
    if (!text) return std::unexpected(text.error().within(fmt::format("vgpu-viz: job {}", job)));
    if (auto ok = write_ood_connection(o.ood_connection, *text); !ok) return std::unexpected(ok.error());
  }
  const bool interactive = isatty(STDIN_FILENO) == 1;
  bool told = false;
  while (g_stop == 0) {
    const FileStamp now = stamp(access);
    if (!now.exists) {
      std::printf("vgpu-viz: job %u: the session has ended\n", job);
      break;
    }
    if (!(now == seen)) {
      seen = now;
      auto text = read_file(access);
      if (text) std::fputs(text->c_str(), stdout);
      // OnDemand reads the password from its connection file each time the user connects; after
      // the first login the node rotates it, so the file follows the access file.
      if (text && !o.ood_connection.empty()) {
        if (auto ok = write_ood_connection(o.ood_connection, *text); !ok) {
          std::fprintf(stderr, "%s\n", ok.error().message.c_str());
        }
      }
      if (!told) {
        std::printf("vgpu-viz: job %u: press q and Enter to leave; the session ends with the job\n", job);
        told = true;
      }
      std::fflush(stdout);
    }
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (interactive && poll(&p, 1, 500) > 0 && (p.revents & POLLIN) != 0) {
      char buf[64];
      const ssize_t got = ::read(STDIN_FILENO, buf, sizeof buf);
      if (got <= 0 || buf[0] == 'q') break;
    } else if (!interactive) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace vgpu::viz::tool
