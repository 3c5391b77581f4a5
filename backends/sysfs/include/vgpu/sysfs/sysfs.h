// The one door to sysfs, shared by every backend that drives the kernel through attribute files (viz
// mdev/VF attachment, AMD compute partitions).
// tree in tests) and never contain "..": the backends build them from validated pieces.
// Writes report the kernel's errno unchanged, because for sysfs attribute writes the errno *is*
// the answer (EEXIST: that mdev UUID exists, EUSERS: no instance left, ...).
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu {

class Sysfs {
 public:
  virtual ~Sysfs() = default;
  // Whole attribute, trailing newline removed.
  virtual Result<std::string> read(std::string_view path) const = 0;
  // errno on failure.
  virtual std::expected<void, int> write(std::string_view path, std::string_view value) = 0;
  // Entry names of a directory, sorted; not_found when it does not exist.
  virtual Result<std::vector<std::string>> list(std::string_view dir) const = 0;
  virtual bool exists(std::string_view path) const = 0;
  // Last path component of a symlink's target ("physfn" -> "0000:3b:00.0").
  virtual Result<std::string> link_name(std::string_view path) const = 0;
};

// Plain file access under `root`.
class RootedSysfs : public Sysfs {
 public:
  explicit RootedSysfs(std::string root);
  Result<std::string> read(std::string_view path) const override;
  std::expected<void, int> write(std::string_view path, std::string_view value) override;
  Result<std::vector<std::string>> list(std::string_view dir) const override;
  bool exists(std::string_view path) const override;
  Result<std::string> link_name(std::string_view path) const override;
  std::string full(std::string_view path) const;

 private:
  std::string root_;
};

}  // namespace vgpu
