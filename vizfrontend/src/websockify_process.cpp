#include "websockify_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <thread>

#include "file_util.h"

namespace vgpu::viz {

bool port_accepts(const std::string& address, std::uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) return false;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0;
  ::close(fd);
  return ok;
}

Result<pid_t> spawn_detached(const std::vector<std::string>& args, const std::string& log_file) {
  const int log_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) return fail(ErrorCode::io, fmt::format("websockify: log {}: {}", log_file, std::strerror(errno)));
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    ::close(log_fd);
    return fail(ErrorCode::io, fmt::format("websockify: fork: {}", std::strerror(errno)));
  }
  if (child == 0) {
    // Detach: new session, so the proxy outlives `vgpu-viz start` and ignores its terminal.
    setsid();
    const int null_fd = ::open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ::close(log_fd);
  return child;
}

Startup wait_until_listening(pid_t pid, const std::string& address, std::uint16_t port, int& status) {
  for (int i = 0; i < 100; ++i) {
    if (port_accepts(address, port)) return Startup::listening;
    if (waitpid(pid, &status, WNOHANG) == pid) return Startup::exited;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Startup::timed_out;
}

void stop_process_group(pid_t pid) {
  if (pid <= 1) return;
  ::kill(-pid, SIGTERM);
  for (int i = 0; i < 100 && ::kill(-pid, 0) == 0; ++i) {
    waitpid(pid, nullptr, WNOHANG);  // reaps it when we are its parent (same process started it)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (::kill(-pid, 0) == 0) ::kill(-pid, SIGKILL);
  waitpid(pid, nullptr, WNOHANG);
}

bool is_websockify(pid_t pid) {
  if (pid <= 1) return false;
  auto cmdline = read_file(fmt::format("/proc/{}/cmdline", pid));
  return cmdline && cmdline->find("websockify") != std::string::npos;
}

}  // namespace vgpu::viz
