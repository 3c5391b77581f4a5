// libnvidia-ml.so.1 opened at run time with dlopen(), initialised with nvmlInit_v2 and shut down
// with nvmlShutdown when the last user lets go (NVML refcounts init/shutdown per process, so two
// NvmlLibrary objects are fine). Building needs nothing from NVIDIA.
#pragma once

#include <memory>
#include <string>

#include "nvml_abi.h"
#include "nvml_error.h"
#include "vgpu/base/error.h"

namespace vgpu::nvml {

// VGPU_NVML_LIBRARY overrides the library path (tests point it at the fake).
inline constexpr const char* kLibraryEnv = "VGPU_NVML_LIBRARY";
inline constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

class Library {
 public:
  // Error code `unavailable` when the library cannot be loaded or the driver is not loaded: the
  // caller treats that as "this node has no NVIDIA GPUs", not as a failure.
  static Result<std::shared_ptr<Library>> open(std::string path = {});
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }

  // Resolves one entry point; a missing one is reported with the library path (old driver).
  template <class Fn>
  Result<Fn*> symbol(const char* name) const {
    auto p = raw_symbol(name);
    if (!p) return std::unexpected(p.error());
    return reinterpret_cast<Fn*>(*p);
  }

  // "Insufficient Resources" for NVML_ERROR_INSUFFICIENT_RESOURCES, from the library itself.
  [[nodiscard]] std::string error_string(nvmlReturn_t rc) const;
  [[nodiscard]] Failure failure(std::string call, nvmlReturn_t rc) const {
    return Failure{std::move(call), rc, error_string(rc)};
  }

 private:
  Library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  [[nodiscard]] Result<void*> raw_symbol(const char* name) const;

  void* handle_ = nullptr;
  std::string path_;
  decltype(&nvmlErrorString) error_string_ = nullptr;
  decltype(&nvmlShutdown) shutdown_ = nullptr;
};

}  // namespace vgpu::nvml
