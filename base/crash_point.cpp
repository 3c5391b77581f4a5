// The crash-point seam (see vgpu/crash_point.h). Async-signal-unsafe calls are fine here: it runs
// on the normal path of single-threaded tools. The claim is a rename, so of two processes that
// read the same armed line only one dies for it.
#include "vgpu/base/crash_point.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "vgpu/base/text_split.h"

namespace vgpu {
namespace {

std::string read_small(const char* path) {
  std::string text;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() > 65536) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

void crash_point(CrashPointName point) noexcept {
  const char* path = std::getenv("VGPU_CRASH_POINT_FILE");
  if (!path || !*path) return;
  try {
    const std::string text = read_small(path);
    const auto eol = text.find('\n');
    std::string_view first = trim_view(std::string_view(text).substr(0, eol));
    std::string_view program;
    if (auto at = first.find('@'); at != std::string_view::npos) {
      program = first.substr(at + 1);
      first = first.substr(0, at);
    }
    if (first != point.name) return;
    if (!program.empty() && program != program_invocation_short_name) return;
    const std::string me = std::to_string(::getpid());
    const std::string claimed = std::string(path) + ".claim." + me;
    if (::rename(path, claimed.c_str()) != 0) return;  // another process took it first
    const std::string rest = eol == std::string::npos ? "" : text.substr(eol + 1);
    if (rest.find_first_not_of(" \t\r\n") != std::string::npos) {
      const std::string tmp = std::string(path) + ".tmp." + me;
      int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) {
        write_all(fd, rest);
        ::close(fd);
        (void)::rename(tmp.c_str(), path);
      }
    }
    ::unlink(claimed.c_str());
    const std::string hits = std::string(path) + ".hits";
    int fd = ::open(hits.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      write_all(fd, std::string(point.name) + " " + program_invocation_short_name + " " + me + "\n");
      ::close(fd);
    }
  } catch (...) {
    return;  // out of memory while reading a test file: do not crash for the wrong reason
  }
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);
}

}  // namespace vgpu
