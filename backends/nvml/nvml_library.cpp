#include "nvml_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace vgpu::nvml {

Result<std::shared_ptr<Library>> Library::open(std::string path) {
  if (path.empty()) {
    const char* env = std::getenv(kLibraryEnv);
    path = env && *env ? env : kDefaultLibrary;
  }
  // RTLD_LOCAL keeps NVML's symbols out of the global namespace of the host (slurmd).
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    return fail(ErrorCode::unavailable, fmt::format("NVML library {} not loadable: {}", path, why ? why : "unknown"));
  }
  std::shared_ptr<Library> lib(new Library(handle, path));
  auto init = lib->symbol<decltype(nvmlInit_v2)>("nvmlInit_v2");
  auto err = lib->symbol<decltype(nvmlErrorString)>("nvmlErrorString");
  auto shutdown = lib->symbol<decltype(nvmlShutdown)>("nvmlShutdown");
  if (!init || !err || !shutdown)
    return fail(ErrorCode::unavailable,
                fmt::format("NVML library {} lacks nvmlInit_v2/nvmlErrorString/nvmlShutdown", path));
  lib->error_string_ = *err;
  nvmlReturn_t rc = (*init)();
  if (rc != NVML_SUCCESS) {
    auto f = lib->failure("nvmlInit_v2()", rc);
    // Not initialised: the destructor must not shut down what never started.
    lib->shutdown_ = nullptr;
    return fail(rc == NVML_ERROR_DRIVER_NOT_LOADED || rc == NVML_ERROR_LIBRARY_NOT_FOUND ? ErrorCode::unavailable
                                                                                         : error_code_for(rc),
                fmt::format("{} ({})", f.message(), path));
  }
  lib->shutdown_ = *shutdown;
  return lib;
}

Library::~Library() {
  if (shutdown_) shutdown_();
  // The library stays mapped: NVML registers atexit handlers and threads of its own, and unmapping
  // it under them is a known way to crash at exit. dlopen refcounts, so reopening is cheap.
}

Result<void*> Library::raw_symbol(const char* name) const {
  ::dlerror();
  void* p = ::dlsym(handle_, name);
  if (!p)
    return fail(ErrorCode::unavailable, fmt::format("NVML library {}: no symbol {} (driver too old?)", path_, name));
  return p;
}

std::string Library::error_string(nvmlReturn_t rc) const {
  const char* s = error_string_ ? error_string_(rc) : nullptr;
  return s ? s : code_name(rc);
}

}  // namespace vgpu::nvml
