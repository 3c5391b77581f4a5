#include "caps.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fakenvml {
namespace {

constexpr unsigned kDefaultMode = 0444;  // DeviceFileMode 292, as the driver states mig/monitor

// "DeviceFileModify: 1" unless the access file says 0; the mode it states, or the default.
struct Setting {
  bool modify = true;
  unsigned mode = kDefaultMode;
};

std::optional<Setting> read_setting(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  Setting s;
  std::string line;
  while (std::getline(in, line)) {
    unsigned v = 0;
    if (std::sscanf(line.c_str(), "DeviceFileModify: %u", &v) == 1) s.modify = v != 0;
    if (std::sscanf(line.c_str(), "DeviceFileMode: %u", &v) == 1) s.mode = v;
  }
  return s;
}

// /proc/driver/nvidia/params, the lines that concern the GPU device files.
struct DriverParams {
  bool modify = true;
  unsigned uid = 0, gid = 0, mode = 0666;
};

DriverParams read_params(const std::string& root) {
  DriverParams p;
  std::ifstream in(root + "/proc/driver/nvidia/params");
  std::string line;
  while (std::getline(in, line)) {
    unsigned v = 0;
    if (std::sscanf(line.c_str(), "ModifyDeviceFiles: %u", &v) == 1) p.modify = v != 0;
    if (std::sscanf(line.c_str(), "DeviceFileUID: %u", &v) == 1) p.uid = v;
    if (std::sscanf(line.c_str(), "DeviceFileGID: %u", &v) == 1) p.gid = v;
    if (std::sscanf(line.c_str(), "DeviceFileMode: %u", &v) == 1) p.mode = v & 07777;
  }
  return p;
}

// Owner and mode as stated; whether the file changed.
bool force_owner_and_mode(const std::string& path, unsigned uid, unsigned gid, unsigned mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && st.st_uid == uid && st.st_gid == gid && (st.st_mode & 07777) == mode)
    return false;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return false;
  (void)::fchown(fd, uid, gid);
  (void)::fchmod(fd, mode);
  ::close(fd);
  return true;
}

}  // namespace

std::string CapFiles::gpu_device_path(unsigned minor) const { return root_ + "/dev/nvidia" + std::to_string(minor); }

void CapFiles::ensure_gpu_device(unsigned minor) const {
  std::error_code ec;
  std::filesystem::create_directories(root_ + "/dev", ec);
  if (std::filesystem::exists(gpu_device_path(minor), ec)) return;
  const DriverParams p = read_params(root_);
  (void)force_owner_and_mode(gpu_device_path(minor), p.uid, p.gid, p.mode);
}

std::optional<CapFiles> CapFiles::from_env(std::string& error) {
  const char* root = std::getenv("VGPU_FAKE_NVML_DEVICE_ROOT");
  if (!root || !*root) return std::nullopt;
  CapFiles out;
  out.root_ = root;
  const std::string path = out.root_ + "/proc/driver/nvidia-caps/mig-minors";
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot open";
    return std::nullopt;
  }
  std::string line;
  while (std::getline(in, line)) {
    unsigned gpu = 0, gi = 0, ci = 0, minor = 0;
    char rest[16] = {};
    if (std::sscanf(line.c_str(), "gpu%u/gi%u/ci%u/access %u", &gpu, &gi, &ci, &minor) == 4)
      out.minors_[{gpu, gi, static_cast<int>(ci)}] = minor;
    else if (std::sscanf(line.c_str(), "gpu%u/gi%u/%15s %u", &gpu, &gi, rest, &minor) == 4 &&
             std::string(rest) == "access")
      out.minors_[{gpu, gi, -1}] = minor;
  }
  return out;
}

std::string CapFiles::access_path(unsigned gpu, unsigned gi, std::optional<unsigned> ci) const {
  std::string p = root_ + "/proc/driver/nvidia/capabilities/gpu" + std::to_string(gpu) + "/mig/gi" + std::to_string(gi);
  if (ci) p += "/ci" + std::to_string(*ci);
  return p + "/access";
}

std::string CapFiles::device_path(unsigned minor) const {
  return root_ + "/dev/nvidia-caps/nvidia-cap" + std::to_string(minor);
}

std::optional<std::pair<std::string, std::string>> CapFiles::paths(unsigned gpu, unsigned gi, unsigned ci) const {
  auto g = minors_.find({gpu, gi, -1});
  auto c = minors_.find({gpu, gi, static_cast<int>(ci)});
  if (g == minors_.end() || c == minors_.end()) return std::nullopt;
  return std::pair{device_path(g->second), device_path(c->second)};
}

void CapFiles::registered(unsigned gpu, unsigned gi, std::optional<unsigned> ci) const {
  auto m = minors_.find({gpu, gi, ci ? static_cast<int>(*ci) : -1});
  if (m == minors_.end()) return;
  const std::string access = access_path(gpu, gi, ci);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(access).parent_path(), ec);
  std::ofstream(access) << "DeviceFileMinor: " << m->second << "\nDeviceFileMode: " << kDefaultMode
                        << "\nDeviceFileModify: 1\n";
  // The creating process's CUDA driver runs nvidia-modprobe for the new instance.
  std::filesystem::create_directories(root_ + "/dev/nvidia-caps", ec);
  int fd = ::open(device_path(m->second).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kDefaultMode);
  if (fd >= 0) {
    ::fchmod(fd, kDefaultMode);  // whatever the umask
    ::close(fd);
  }
}

void CapFiles::unregistered(unsigned gpu, unsigned gi, std::optional<unsigned> ci) const {
  std::error_code ec;
  if (ci) std::filesystem::remove(access_path(gpu, gi, ci), ec);
  else
    std::filesystem::remove_all(std::filesystem::path(access_path(gpu, gi, ci)).parent_path(), ec);
}

std::vector<std::string> CapFiles::modprobe_all() const {
  std::vector<std::string> changed;
  for (const auto& [key, minor] : minors_) {
    const auto [gpu, gi, ci] = key;
    auto setting = read_setting(access_path(gpu, gi, ci < 0 ? std::nullopt : std::optional<unsigned>(ci)));
    if (!setting || !setting->modify) continue;
    const std::string dev = device_path(minor);
    struct stat st {};
    if (::lstat(dev.c_str(), &st) == 0 && st.st_uid == 0 && st.st_gid == 0 && (st.st_mode & 07777) == setting->mode)
      continue;
    int fd = ::open(dev.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, setting->mode);
    if (fd < 0) continue;
    (void)::fchown(fd, 0, 0);
    (void)::fchmod(fd, setting->mode);
    ::close(fd);
    std::ostringstream line;
    line << dev << ": root 0" << std::oct << setting->mode;
    changed.push_back(line.str());
  }
  for (auto& line : libraries_reset(0)) changed.push_back(std::move(line));
  return changed;
}

std::vector<std::string> CapFiles::libraries_reset(unsigned euid) const {
  std::vector<std::string> changed;
  const DriverParams p = read_params(root_);
  if (!p.modify) return changed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root_ + "/dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 6 || !name.starts_with("nvidia") || name.find_first_not_of("0123456789", 6) != std::string::npos)
      continue;
    const std::string path = entry.path().string();
    std::ostringstream line;
    if (euid == 0) {
      if (!force_owner_and_mode(path, p.uid, p.gid, p.mode)) continue;
      line << path << ": " << p.uid << ":" << p.gid << " 0" << std::oct << p.mode;
    } else {
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0 || st.st_uid != euid || (st.st_mode & 07777) == p.mode) continue;
      if (::chmod(path.c_str(), p.mode) != 0) continue;
      line << path << ": 0" << std::oct << p.mode;
    }
    changed.push_back(line.str());
  }
  return changed;
}

}  // namespace fakenvml
