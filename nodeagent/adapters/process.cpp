#include "process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace vgpu::agent {
namespace {

struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The child's environment: this process's, with `set_env` replacing or adding entries.
std::vector<std::string> child_environment(const CommandOptions& options) {
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos && options.set_env.contains(entry.substr(0, eq))) continue;
    env_strings.push_back(std::move(entry));
  }
  for (const auto& [k, v] : options.set_env) env_strings.push_back(k + "=" + v);
  return env_strings;
}

// In the child after fork: only async-signal-safe calls. An exec that fails writes its errno to
// `status_fd` for the parent.
[[noreturn]] void exec_child(char* const* args, char* const* envp, const Pipe& out, const Pipe& err, const Pipe& in,
                             int status_fd, bool discard_output) {
  int devnull = ::open("/dev/null", O_RDWR);
  if (discard_output) {
    if (devnull >= 0) {
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
    }
  } else {
    ::dup2(out.fds[1], 1);
    ::dup2(err.fds[1], 2);
  }
  if (in.fds[0] >= 0) ::dup2(in.fds[0], 0);
  else if (devnull >= 0)
    ::dup2(devnull, 0);
  ::execvpe(args[0], args, envp);
  int e = errno;
  (void)!::write(status_fd, &e, sizeof e);
  ::_exit(127);
}

// Waits for a child whose output goes to /dev/null, killing it at `deadline`.
Result<CommandResult> wait_discarding(pid_t pid, std::chrono::steady_clock::time_point deadline,
                                      const std::string& name) {
  CommandResult result;
  int status_code = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status_code, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR)
      return fail(ErrorCode::io, fmt::format("{}: waitpid: {}", name, std::strerror(errno)));
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status_code, 0);
      break;
    }
    ::usleep(2000);
  }
  result.exit_code = !result.timed_out && WIFEXITED(status_code) ? WEXITSTATUS(status_code) : -1;
  return result;
}

// Reads the child's stdout and stderr (each up to `max_output`) until both close or `deadline`,
// when it is killed; then reaps it.
CommandResult collect_output(pid_t pid, int out_fd, int err_fd, std::chrono::steady_clock::time_point deadline,
                             std::size_t max_output) {
  CommandResult result;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_streams = 2;
  while (open_streams > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        if (sinks[i]->size() < max_output) sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_streams;
      }
    }
  }
  int status_code = 0;
  while (::waitpid(pid, &status_code, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status_code) ? WEXITSTATUS(status_code) : -1;
  return result;
}

}  // namespace

Result<CommandResult> run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  if (argv.empty()) return fail(ErrorCode::invalid_argument, "run_command: empty argv");
  Pipe out, err, status, in;
  if (::pipe2(out.fds, O_CLOEXEC) != 0 || ::pipe2(err.fds, O_CLOEXEC) != 0 || ::pipe2(status.fds, O_CLOEXEC) != 0 ||
      (!options.input.empty() && ::pipe2(in.fds, O_CLOEXEC) != 0))
    return fail(ErrorCode::io, fmt::format("{}: pipe: {}", argv[0], std::strerror(errno)));

  // Build everything the child needs before fork: only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings = child_environment(options);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return fail(ErrorCode::io, fmt::format("{}: fork: {}", argv[0], std::strerror(errno)));
  if (pid == 0) exec_child(args.data(), envp.data(), out, err, in, status.fds[1], options.discard_output);
  close_fd(out.fds[1]);
  close_fd(err.fds[1]);
  close_fd(status.fds[1]);
  close_fd(in.fds[0]);
  if (in.fds[1] >= 0) {
    // Small command text: it fits the pipe's buffer, so this cannot block on a child that reads late.
    (void)!::write(in.fds[1], options.input.data(), options.input.size());
    close_fd(in.fds[1]);
  }

  int exec_errno = 0;
  if (::read(status.fds[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    ::waitpid(pid, nullptr, 0);
    return fail(ErrorCode::unavailable, fmt::format("{}: cannot run: {}", argv[0], std::strerror(exec_errno)));
  }
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  if (options.discard_output) {
    close_fd(out.fds[0]);
    close_fd(err.fds[0]);
    return wait_discarding(pid, deadline, argv[0]);
  }
  return collect_output(pid, out.fds[0], err.fds[0], deadline, options.max_output);
}

}  // namespace vgpu::agent
