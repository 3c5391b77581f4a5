// The fake driver seen through the product's Sysfs door, in process: what unit tests hand the AMD
// backend. The cluster tests reach the same driver through the FUSE daemon instead.
#pragma once

#include "fake_amdgpu_driver.h"
#include "vgpu/sysfs/sysfs.h"

namespace vgpu::fake {

class FakeAmdgpuSysfs final : public Sysfs {
 public:
  explicit FakeAmdgpuSysfs(FakeAmdgpuDriver& driver) : driver_(driver) {}
  Result<std::string> read(std::string_view path) const override;
  std::expected<void, int> write(std::string_view path, std::string_view value) override;
  Result<std::vector<std::string>> list(std::string_view dir) const override;
  bool exists(std::string_view path) const override;
  Result<std::string> link_name(std::string_view path) const override;

 private:
  FakeAmdgpuDriver& driver_;
};

}  // namespace vgpu::fake
