#include "fake_sysfs.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "validate.h"

namespace vgpu::viz::testing {
namespace fs = std::filesystem;
namespace {

std::string make_root() {
  std::string tmpl = (fs::temp_directory_path() / "viz-fake-sysfs-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  return tmpl;
}

std::string trimmed(std::string_view v) {
  std::string s(v);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

FakeSysfs::FakeSysfs() : root_(make_root()), files_(root_) {
  fs::create_directories(root_ + "/sys/class/mdev_bus");
  fs::create_directories(root_ + "/sys/bus/mdev/devices");
  fs::create_directories(root_ + "/sys/bus/pci/devices");
  fs::create_directories(root_ + "/sys/devices/pci0000:00");
}

FakeSysfs::~FakeSysfs() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void FakeSysfs::put(const std::string& rel, const std::string& content) const {
  fs::create_directories(fs::path(root_ + "/" + rel).parent_path());
  std::ofstream(root_ + "/" + rel) << content;
}

void FakeSysfs::link(const std::string& rel, const std::string& target) const {
  fs::create_directories(fs::path(root_ + "/" + rel).parent_path());
  std::error_code ec;
  fs::remove(root_ + "/" + rel, ec);
  fs::create_directory_symlink(target, root_ + "/" + rel);
}

void FakeSysfs::add_mdev_parent(const std::string& bdf, const std::map<std::string, int>& types) {
  const std::string dev = "sys/devices/pci0000:00/" + bdf;
  for (const auto& [type, n] : types) {
    const std::string t = dev + "/mdev_supported_types/" + type;
    fs::create_directories(root_ + "/" + t + "/devices");
    put(t + "/name", "GRID " + type + "\n");
    put(t + "/device_api", "vfio-pci\n");
    put(t + "/available_instances", fmt::format("{}\n", n));
    put(t + "/description", fmt::format("max_instance={}\n", n));
    put(t + "/create", "");
  }
  link("sys/class/mdev_bus/" + bdf, "../../devices/pci0000:00/" + bdf);
  link("sys/bus/pci/devices/" + bdf, "../../../devices/pci0000:00/" + bdf);
}

void FakeSysfs::add_vgpu_vf(const std::string& vf, const std::string& pf,
                            const std::map<std::string, std::string>& types, bool mig_capable) {
  const std::string dev = "sys/devices/pci0000:00/" + vf;
  std::string creatable = "ID    : vGPU Name\n";
  for (const auto& [id, name] : types) creatable += fmt::format("{:<6}: {}\n", id, name);
  put(dev + "/nvidia/creatable_vgpu_types", creatable);
  put(dev + "/nvidia/current_vgpu_type", "0\n");
  if (mig_capable) put(dev + "/nvidia/current_gpu_instance_id", "-1\n");
  put(dev + "/class", "0x030200\n");
  link(dev + "/physfn", "../" + pf);
  link("sys/bus/pci/devices/" + vf, "../../../devices/pci0000:00/" + vf);
}

void FakeSysfs::add_pci_device(const std::string& bdf, const std::string& pci_class, bool iommu_group) {
  const std::string dev = "sys/devices/pci0000:00/" + bdf;
  put(dev + "/class", pci_class + "\n");
  if (iommu_group) {
    fs::create_directories(root_ + "/sys/kernel/iommu_groups/17/devices");
    link(dev + "/iommu_group", "../../../kernel/iommu_groups/17");
  }
  link("sys/bus/pci/devices/" + bdf, "../../../devices/pci0000:00/" + bdf);
}

void FakeSysfs::fail_next_write(std::string suffix, int err) {
  fail_suffix_ = std::move(suffix);
  fail_errno_ = err;
}

int FakeSysfs::available(const std::string& parent, const std::string& type) const {
  return std::atoi(
      files_.read(fmt::format("sys/class/mdev_bus/{}/mdev_supported_types/{}/available_instances", parent, type))
          .value_or("-1")
          .c_str());
}

std::size_t FakeSysfs::mdev_count() const {
  return files_.list("sys/bus/mdev/devices").value_or(std::vector<std::string>{}).size();
}

std::expected<void, int> FakeSysfs::write(std::string_view path, std::string_view value) {
  ++writes_;
  const std::string p(path);
  if (!fail_suffix_.empty() && p.ends_with(fail_suffix_)) {
    fail_suffix_.clear();
    return std::unexpected(fail_errno_);
  }
  // Resolve symlinks the way the kernel's VFS would, so rules see the real device directory.
  std::error_code ec;
  const fs::path real = fs::canonical(fs::path(root_ + "/" + p).parent_path(), ec);
  if (ec) return std::unexpected(ENOENT);
  const std::string dir = real.string();
  const std::string attr = fs::path(p).filename().string();
  if (!fs::exists(dir + "/" + attr)) return std::unexpected(ENOENT);
  if (attr == "create" && fs::path(dir).parent_path().filename() == "mdev_supported_types") {
    return mdev_create(dir, value);
  }
  if (attr == "remove" && fs::is_symlink(dir + "/mdev_type")) {
    if (trimmed(value) != "1") return std::unexpected(EINVAL);
    return mdev_remove(dir);
  }
  if (attr == "current_vgpu_type" && fs::path(dir).filename() == "nvidia") return set_vgpu_type(dir, value);
  if (attr == "current_gpu_instance_id") {
    const std::string v = trimmed(value);
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
      if (v != "-1") return std::unexpected(EINVAL);
    }
    if (trimmed(files_.read(fs::relative(dir, root_).string() + "/current_vgpu_type").value_or("0")) != "0") {
      return std::unexpected(EBUSY);  // cannot move a VF that already runs a vGPU
    }
    std::ofstream(dir + "/" + attr) << v << "\n";
    return {};
  }
  return std::unexpected(EACCES);  // every other attribute the backends touch is read-only
}

// mdev_device_create(): type_dir = <parent>/mdev_supported_types/<type>
std::expected<void, int> FakeSysfs::mdev_create(const std::string& type_dir, std::string_view value) {
  const std::string uuid = trimmed(value);
  if (!check_uuid(uuid)) return std::unexpected(EINVAL);                                    // uuid_parse fails
  if (fs::exists(root_ + "/sys/bus/mdev/devices/" + uuid)) return std::unexpected(EEXIST);  // duplicate UUID
  const std::string avail_path = type_dir + "/available_instances";
  std::ifstream in(avail_path);
  int avail = 0;
  in >> avail;
  if (avail <= 0) return std::unexpected(EUSERS);  // no instance left
  const fs::path parent = fs::path(type_dir).parent_path().parent_path();
  const std::string type = fs::path(type_dir).filename().string();
  const std::string parent_rel = fs::relative(parent, root_).string();
  fs::create_directories(parent / uuid);
  fs::create_directory_symlink("../mdev_supported_types/" + type, parent / uuid / "mdev_type");
  std::ofstream(parent / uuid / "remove") << "";
  fs::create_directory_symlink("../../" + uuid, fs::path(type_dir) / "devices" / uuid);
  // relative to sys/bus/mdev/devices, as the kernel makes it: ../../../devices/...
  fs::create_directory_symlink("../../../" + parent_rel.substr(4) + "/" + uuid,
                               root_ + "/sys/bus/mdev/devices/" + uuid);
  std::ofstream(avail_path) << (avail - 1) << "\n";
  return {};
}

// mdev "remove": only "1" is accepted; afterwards the device and its links are gone.
std::expected<void, int> FakeSysfs::mdev_remove(const std::string& device_dir) {
  const fs::path dev(device_dir);
  const std::string uuid = dev.filename().string();
  const fs::path type_dir = fs::canonical(dev / "mdev_type");
  std::ifstream in(type_dir / "available_instances");
  int avail = 0;
  in >> avail;
  fs::remove(type_dir / "devices" / uuid);
  fs::remove(root_ + "/sys/bus/mdev/devices/" + uuid);
  fs::remove_all(dev);
  std::ofstream(type_dir / "available_instances") << (avail + 1) << "\n";
  return {};
}

// NVIDIA's VF interface: a type id from creatable_vgpu_types, or 0 to free the VF.
std::expected<void, int> FakeSysfs::set_vgpu_type(const std::string& nvidia_dir, std::string_view value) {
  const std::string v = trimmed(value);
  const std::string rel = fs::relative(nvidia_dir, root_).string();
  const std::string current = files_.read(rel + "/current_vgpu_type").value_or("0");
  if (v == "0") {
    std::ofstream(nvidia_dir + "/current_vgpu_type") << "0\n";
    return {};
  }
  if (current != "0") return std::unexpected(EBUSY);
  // On a GPU in MIG mode a vGPU needs its GPU instance chosen first.
  if (files_.read(rel + "/current_gpu_instance_id").value_or("") == "-1") return std::unexpected(EINVAL);
  const std::string creatable = files_.read(rel + "/creatable_vgpu_types").value_or("");
  bool known = false;
  for (std::size_t pos = 0; pos < creatable.size();) {
    const auto nl = std::min(creatable.find('\n', pos), creatable.size());
    const std::string line = creatable.substr(pos, nl - pos);
    pos = nl + 1;
    const auto colon = line.find(':');
    if (colon != std::string::npos && trimmed(line.substr(0, line.find_first_of(" :"))) == v) known = true;
  }
  if (!known) return std::unexpected(EINVAL);
  std::ofstream(nvidia_dir + "/current_vgpu_type") << v << "\n";
  return {};
}

}  // namespace vgpu::viz::testing
