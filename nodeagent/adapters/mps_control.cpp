// MpsControl over nvidia-cuda-mps-control: one control daemon per shared instance, in its own pipe
// and log directories (mps_text.h), started with `-d` and talked to through its pipe the way an
// admin would (`echo quit | nvidia-cuda-mps-control`). Whether a daemon runs is read from the pid
// file it writes into its pipe directory, never by writing to a pipe nobody may be reading.
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "adapters.h"
#include "process.h"
#include "vgpu/node/mps_text.h"

namespace vgpu::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string control_program() {
  const char* p = std::getenv("VGPU_MPS_CONTROL");
  return p && *p ? p : "nvidia-cuda-mps-control";
}

// Whether `pid` runs: a zombie nobody has reaped yet (the daemon's parent is whoever adopted it)
// has ended.
bool process_runs(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // "pid (comm) S ...": comm may hold spaces and parentheses
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

// The control daemon's pid, from the file it keeps in its pipe directory, if that process runs.
std::optional<pid_t> running_daemon(const MpsDirectories& dirs) {
  std::ifstream in(dirs.pipe + "/nvidia-cuda-mps-control.pid");
  long number = 0;
  if (!(in >> number) || number <= 1) return std::nullopt;
  const auto pid = static_cast<pid_t>(number);
  if (!process_runs(pid)) return std::nullopt;
  // A pid file a crash left behind may name a pid since reused by something else.
  std::ifstream cmdline(fmt::format("/proc/{}/cmdline", pid));
  const std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  if (args.find("nvidia-cuda-mps-control") == std::string::npos) return std::nullopt;
  return pid;
}

Result<void> make_dir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    return fail(ErrorCode::io, fmt::format("{}: mkdir: {}", path, std::strerror(errno)));
  // mkdir's mode passes through the umask, and a directory left by a crash may have any mode.
  if (::chmod(path.c_str(), mode) != 0)
    return fail(ErrorCode::io, fmt::format("{}: chmod: {}", path, std::strerror(errno)));
  return {};
}

class CommandMpsControl final : public MpsControl {
 public:
  explicit CommandMpsControl(std::string root) : root_(std::move(root)) {}

  Result<std::string> open(const std::string& device_uuid, const ShareLimits& limits) override {
    auto dirs = mps_directories(root_, device_uuid);
    if (!dirs) return std::unexpected(dirs.error());
    auto opened = open_in(*dirs, device_uuid, limits);
    if (!opened) return std::unexpected(opened.error().within(fmt::format("MPS for {}", device_uuid)));
    return dirs->pipe;
  }

  Result<void> close(const std::string& device_uuid) override {
    auto dirs = mps_directories(root_, device_uuid);
    if (!dirs) return std::unexpected(dirs.error());
    auto closed = close_in(*dirs);
    if (!closed) return std::unexpected(closed.error().within(fmt::format("MPS for {}", device_uuid)));
    return {};
  }

  Result<std::vector<std::string>> devices() override {
    std::vector<std::string> out;
    std::error_code ec;
    fs::directory_iterator it(root_, ec);
    if (ec == std::errc::no_such_file_or_directory) return out;
    if (ec) return fail(ErrorCode::io, fmt::format("{}: {}", root_, ec.message()));
    for (const auto& entry : it) {
      const std::string name = entry.path().filename().string();
      if (is_mps_device_name(name)) out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  Result<std::string> talk(const MpsDirectories& dirs, const std::string& command) {
    CommandOptions options;
    options.timeout = 10s;
    options.input = command + "\n";
    options.set_env = {{"CUDA_MPS_PIPE_DIRECTORY", dirs.pipe}, {"CUDA_MPS_LOG_DIRECTORY", dirs.log}};
    auto r = run_command({control_program()}, options);
    if (!r) return std::unexpected(r.error());
    if (r->timed_out) return fail(ErrorCode::io, fmt::format("\"{}\": no answer in 10 s", command));
    if (r->exit_code != 0)
      return fail(ErrorCode::io, fmt::format("\"{}\": exit {}: {}", command, r->exit_code, r->err + r->out));
    return r->out;
  }

  Result<void> open_in(const MpsDirectories& dirs, const std::string& device_uuid, const ShareLimits& limits) {
    std::error_code ec;
    fs::create_directories(fs::path(root_).parent_path(), ec);  // /run/slurm-vgpu after a reboot
    if (auto made = make_dir(root_, 0755); !made) return made;
    if (!running_daemon(dirs)) {
      // Whatever a dead daemon left (its pipe, sockets, pid file) must not confuse the new one.
      fs::remove_all(dirs.instance, ec);
      if (ec) return fail(ErrorCode::io, fmt::format("{}: {}", dirs.instance, ec.message()));
      for (auto [path, mode] : {std::pair{dirs.instance, 0755}, {dirs.pipe, 0755}, {dirs.log, 0700}})
        if (auto made = make_dir(path, static_cast<mode_t>(mode)); !made) return made;
      CommandOptions options;
      options.timeout = 10s;
      options.discard_output = true;
      options.set_env = {{"CUDA_VISIBLE_DEVICES", device_uuid},
                         {"CUDA_MPS_PIPE_DIRECTORY", dirs.pipe},
                         {"CUDA_MPS_LOG_DIRECTORY", dirs.log}};
      auto started = run_command({control_program(), "-d"}, options);
      if (!started) return std::unexpected(started.error());
      if (started->exit_code != 0)
        return fail(ErrorCode::unavailable, fmt::format("{} -d: exit {} (its log: {}/control.log)", control_program(),
                                                        started->exit_code, dirs.log));
    }
    for (const auto& command : mps_default_commands(limits)) {
      auto reply = talk(dirs, command);
      Result<void> set = reply ? check_mps_reply(command, *reply) : std::unexpected(reply.error());
      if (!set) {
        // A daemon without the share's limits would serve any client that finds it in full: quit it.
        if (auto closed = close_in(dirs); !closed) return std::unexpected(set.error().within(closed.error().message));
        return set;
      }
    }
    return {};
  }

  Result<void> close_in(const MpsDirectories& dirs) {
    std::error_code ec;
    if (!fs::exists(dirs.instance, ec)) return {};
    if (auto pid = running_daemon(dirs)) {
      auto quit = talk(dirs, "quit");
      // The daemon ends its servers first; 88 ms on an H100 with one idle server.
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (process_runs(*pid) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
      if (process_runs(*pid))
        return fail(ErrorCode::io, fmt::format("control daemon {} still runs 10 s after quit{}", *pid,
                                               quit ? "" : fmt::format(" ({})", quit.error().message)));
    }
    fs::remove_all(dirs.instance, ec);
    if (ec) return fail(ErrorCode::io, fmt::format("{}: {}", dirs.instance, ec.message()));
    return {};
  }

  std::string root_;
};

}  // namespace

std::unique_ptr<MpsControl> make_command_mps_control(std::string root) {
  return std::make_unique<CommandMpsControl>(std::move(root));
}

}  // namespace vgpu::agent
