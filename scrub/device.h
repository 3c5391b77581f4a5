// The seam between the scrub procedure and the GPU: everything vgpu-scrub asks of CUDA, as an
// interface, so the procedure (scrub_flow.cpp) runs in tests against a host-memory fake and the
// CUDA adapter (cuda_device.cpp) stays a thin translation of these calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "report.h"

namespace vgpu::scrub {

enum class Method { automatic, kernel, memset };

struct DeviceError {
  Exit exit = Exit::cuda_error;  // no_device or cuda_error
  std::string message;           // names the call and the runtime's error
};
// nullopt on success.
using DeviceResult = std::optional<DeviceError>;

struct DeviceInfo {
  std::string name;
  std::string uuid;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceResult open(DeviceInfo& info) = 0;
  virtual DeviceResult memory(std::size_t& free_bytes, std::size_t& total_bytes) = 0;
  // `refused` (with no error) means the allocator said out-of-memory: the caller backs off.
  virtual DeviceResult allocate(std::size_t bytes, void*& ptr, bool& refused) = 0;
  virtual void release(void* ptr) = 0;
  // Runs `enqueue` (which queues device work) and reports the device time that work took.
  virtual DeviceResult timed(const std::function<DeviceResult()>& enqueue, double& seconds) = 0;
  virtual DeviceResult zero(Method method, void* ptr, std::size_t bytes) = 0;
  virtual DeviceResult copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Reads the 8-byte words at `addresses` (device addresses) into `out`, synchronously.
  virtual DeviceResult read_words(std::span<const std::uintptr_t> addresses, std::span<std::uint64_t> out) = 0;
  // Waits for all device work and surfaces any asynchronous fault.
  virtual DeviceResult finish() = 0;
};

}  // namespace vgpu::scrub
