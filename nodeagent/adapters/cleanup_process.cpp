// The epilog's cleanup hand-off (vgpu/node/ports.h, CleanupHandoff) as a detached process: the
// program that runs the epilog, started again as `<program> --finish-released GPU:GI...` with the
// i-th instance's cleanup lock on descriptor 3 + i. flock(2) locks belong to the open file, so
// the lock passes to the new process with the descriptor and is never free in between.
//
// Detached twice over: its own session, because slurmd kills what an epilog leaves in its process
// group; and the grandchild of the caller, adopted by init, because the caller may be the planner
// serving the epilog, which waits only for the children it runs commands in.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "adapters.h"

namespace vgpu::agent {
namespace {

// A descriptor this process owns; closed once.
class OwnedFd {
 public:
  explicit OwnedFd(int fd = -1) : fd_(fd) {}
  ~OwnedFd() { reset(); }
  OwnedFd(OwnedFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  OwnedFd& operator=(OwnedFd&&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// A close-on-exec copy of `fd` numbered `lowest` or above, where no target of the child's dup2 lies.
Result<OwnedFd> copy_above(int fd, int lowest, std::string_view what) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, lowest);
  if (copy < 0)
    return fail(ErrorCode::io, fmt::format("copying {} (descriptor {}): {}", what, fd, std::strerror(errno)));
  return OwnedFd(copy);
}

// Reaps the middle process, then reads the start report: end of file when the worker exec'd (the
// pipe is close-on-exec), an errno when it could not.
Result<void> wait_for_start(pid_t middle, int report_fd, const std::string& where) {
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  int child_errno = 0;
  ssize_t n;
  do n = ::read(report_fd, &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  if (n == sizeof child_errno) {
    // Until the failed child is gone, with its copies of the locks: the caller cleans up next.
    char rest;
    ssize_t r;
    do r = ::read(report_fd, &rest, 1);
    while (r > 0 || (r < 0 && errno == EINTR));
    return fail(ErrorCode::unavailable, fmt::format("{}: cannot start it: {}", where, std::strerror(child_errno)));
  }
  if (n != 0)
    return fail(ErrorCode::io,
                fmt::format("{}: its start report: {}", where, n < 0 ? std::strerror(errno) : "short read"));
  return {};
}

class CleanupProcessHandoff final : public CleanupHandoff {
 public:
  explicit CleanupProcessHandoff(std::string program) : program_(std::move(program)) {}

  Result<void> hand_off(const std::vector<HeldCleanup>& held) override {
    const std::string where = fmt::format("cleanup process {}", program_);
    // Everything the child needs is made here: between fork and exec only async-signal-safe calls
    // (a served epilog runs in the planner, which has threads).
    // Named for what it does in ps, logs and crash points, whichever program's image it runs.
    std::vector<std::string> args{std::string(kCleanupProcessName), std::string(kFinishReleasedFlag)};
    for (const auto& h : held) args.push_back(fmt::format("{}:{}", h.gpu, h.gpu_instance_id));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // In the child: the locks on 3 .. 3+n-1, the start report on 3+n, every copy made here above.
    const int report_at = 3 + static_cast<int>(held.size());
    const int above_targets = report_at + 1;
    std::vector<OwnedFd> locks;
    for (const auto& h : held) {
      auto copy = copy_above(h.lock_fd, above_targets,
                             fmt::format("the cleanup lock of GPU {} instance {}", h.gpu, h.gpu_instance_id));
      if (!copy) return std::unexpected(copy.error().within(where));
      locks.push_back(std::move(*copy));
    }
    OwnedFd null_in(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (null_in.get() < 0)
      return fail(ErrorCode::io, fmt::format("{}: open /dev/null: {}", where, std::strerror(errno)));
    auto devnull = copy_above(null_in.get(), above_targets, "/dev/null");
    int report_fds[2];
    if (::pipe2(report_fds, O_CLOEXEC) != 0)
      return fail(ErrorCode::io, fmt::format("{}: pipe: {}", where, std::strerror(errno)));
    OwnedFd report_read(report_fds[0]), report_low(report_fds[1]);
    auto report = copy_above(report_low.get(), above_targets, "the start report pipe");
    if (!devnull || !report) return std::unexpected((devnull ? report.error() : devnull.error()).within(where));
    report_low.reset();
    sigset_t none;
    sigemptyset(&none);

    const pid_t middle = ::fork();
    if (middle < 0) return fail(ErrorCode::io, fmt::format("{}: fork: {}", where, std::strerror(errno)));
    if (middle == 0) {
      auto fail_with = [&](int e) {
        (void)!::write(report->get(), &e, sizeof e);
        ::_exit(127);
      };
      if (::setsid() < 0) fail_with(errno);
      const pid_t worker = ::fork();
      if (worker < 0) fail_with(errno);
      if (worker > 0) ::_exit(0);
      // The planner blocks the signals it waits for; the cleanup process must die of them.
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int std_fd = 0; std_fd < 3; ++std_fd)
        if (::dup2(devnull->get(), std_fd) < 0) fail_with(errno);
      for (std::size_t i = 0; i < locks.size(); ++i)
        if (::dup2(locks[i].get(), 3 + static_cast<int>(i)) < 0) fail_with(errno);
      // Nothing else the caller had open lives on in a long-lived process (slurmd's descriptors
      // that lack close-on-exec, say, would outlive slurmd's restart): only the start report,
      // moved just above the locks, and it closes at exec.
      if (::dup3(report->get(), report_at, O_CLOEXEC) < 0) fail_with(errno);
      ::close_range(static_cast<unsigned>(report_at) + 1, ~0U, 0);
      ::execv(program_.c_str(), argv.data());
      const int e = errno;
      (void)!::write(report_at, &e, sizeof e);
      ::_exit(127);
    }
    report->reset();
    return wait_for_start(middle, report_read.get(), where);
  }

 private:
  std::string program_;
};

}  // namespace

std::unique_ptr<CleanupHandoff> make_cleanup_process_handoff(std::string program) {
  return std::make_unique<CleanupProcessHandoff>(std::move(program));
}

}  // namespace vgpu::agent
