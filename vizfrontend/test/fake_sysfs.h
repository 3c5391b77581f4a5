// A faithful test double of the sysfs the attachment backends drive: the real kernel layout
// (FINDINGS.md section 5, captured from the kernel's mdev samples) as plain files under a temp
// root, and write() applying the kernel's rules, including its errno for each refusal.
// Files are the state; the rules live only in write().
#pragma once

#include <cerrno>
#include <map>
#include <string>

#include "sysfs.h"

namespace vgpu::viz::testing {

class FakeSysfs final : public Sysfs {
 public:
  FakeSysfs();  // makes a fresh temp root
  ~FakeSysfs() override;
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  // --- layout builders
  // An mdev parent (a GPU, or a VF with SR-IOV) offering `types` {type id -> available_instances}.
  void add_mdev_parent(const std::string& bdf, const std::map<std::string, int>& types);
  // An NVIDIA SR-IOV VF of physical function `pf`, offering `types` {id -> name}.
  void add_vgpu_vf(const std::string& vf, const std::string& pf, const std::map<std::string, std::string>& types,
                   bool mig_capable = false);
  // A PCI device with a class code, optionally in an IOMMU group.
  void add_pci_device(const std::string& bdf, const std::string& pci_class, bool iommu_group);

  // --- fault injection: the next write whose path ends with `suffix` fails with `err`.
  void fail_next_write(std::string suffix, int err);

  // --- Sysfs
  Result<std::string> read(std::string_view path) const override { return files_.read(path); }
  std::expected<void, int> write(std::string_view path, std::string_view value) override;
  Result<std::vector<std::string>> list(std::string_view dir) const override { return files_.list(dir); }
  bool exists(std::string_view path) const override { return files_.exists(path); }
  Result<std::string> link_name(std::string_view path) const override { return files_.link_name(path); }

  const std::string& root() const { return root_; }
  int available(const std::string& parent, const std::string& type) const;
  // Count of live mdevs (entries under sys/bus/mdev/devices).
  std::size_t mdev_count() const;
  std::size_t writes() const { return writes_; }

 private:
  std::expected<void, int> mdev_create(const std::string& type_dir, std::string_view uuid);
  std::expected<void, int> mdev_remove(const std::string& device_dir);
  std::expected<void, int> set_vgpu_type(const std::string& nvidia_dir, std::string_view value);
  void put(const std::string& rel, const std::string& content) const;
  void link(const std::string& rel, const std::string& target) const;

  std::string root_;
  RootedSysfs files_;
  std::string fail_suffix_;
  int fail_errno_ = 0;
  std::size_t writes_ = 0;
};

}  // namespace vgpu::viz::testing
