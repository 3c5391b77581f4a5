// The only file that calls the CUDA runtime: each Device call is one or a few runtime calls,
// with errors named after the call. Plain cudaMalloc only (never managed memory).
#include "cuda_device.h"

#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "zero_kernel.h"

namespace vgpu::scrub {
namespace {

// No device or no usable driver: the epilog applies the partition's policy instead of treating it
// as a hardware fault.
bool means_no_device(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary;
}

DeviceResult check(const char* what, cudaError_t e) {
  if (e == cudaSuccess) return std::nullopt;
  return DeviceError{means_no_device(e) ? Exit::no_device : Exit::cuda_error,
                     fmt::format("{}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e))};
}

std::string format_uuid(const cudaUUID_t& u) {
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    hex += fmt::format("{:02x}", static_cast<unsigned char>(u.bytes[i]));
    if (i == 3 || i == 5 || i == 7 || i == 9) hex += '-';
  }
  return hex;
}

class CudaDevice final : public Device {
 public:
  CudaDevice() = default;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;
  ~CudaDevice() override {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  DeviceResult open(DeviceInfo& info) override {
    int count = 0;
    if (auto f = check("cudaGetDeviceCount", cudaGetDeviceCount(&count))) return f;
    if (count == 0) return DeviceError{Exit::no_device, "cudaGetDeviceCount: 0 devices visible"};
    // Mapped pinned memory for read_words(). Set before cudaSetDevice, which creates the context
    // since CUDA 12; on UVA systems mapping is implied anyway, so "already active" is harmless.
    if (const cudaError_t e = cudaSetDeviceFlags(cudaDeviceMapHost); e == cudaErrorSetOnActiveProcess)
      (void)cudaGetLastError();
    else if (auto f = check("cudaSetDeviceFlags", e))
      return f;
    if (auto f = check("cudaSetDevice(0)", cudaSetDevice(0))) return f;
    if (auto f = check("cudaFree(0) (context creation)", cudaFree(nullptr))) return f;
    cudaDeviceProp prop{};
    if (auto f = check("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, 0))) return f;
    info.name = prop.name;
    info.uuid = format_uuid(prop.uuid);
    if (auto f = check("cudaStreamCreate", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking))) return f;
    if (auto f = check("cudaEventCreate", cudaEventCreate(&start_))) return f;
    return check("cudaEventCreate", cudaEventCreate(&stop_));
  }

  DeviceResult memory(std::size_t& free_bytes, std::size_t& total_bytes) override {
    return check("cudaMemGetInfo", cudaMemGetInfo(&free_bytes, &total_bytes));
  }

  DeviceResult allocate(std::size_t bytes, void*& ptr, bool& refused) override {
    const cudaError_t e = cudaMalloc(&ptr, bytes);
    refused = e == cudaErrorMemoryAllocation;
    if (refused) {
      (void)cudaGetLastError();  // not sticky, but clear it so later checks see only new errors
      return std::nullopt;
    }
    return check("cudaMalloc", e);
  }

  void release(void* ptr) override { cudaFree(ptr); }

  DeviceResult timed(const std::function<DeviceResult()>& enqueue, double& seconds) override {
    if (auto f = check("cudaEventRecord", cudaEventRecord(start_, stream_))) return f;
    if (auto f = enqueue()) return f;
    if (auto f = check("cudaEventRecord", cudaEventRecord(stop_, stream_))) return f;
    if (auto f = check("cudaEventSynchronize", cudaEventSynchronize(stop_))) return f;
    float ms = 0;
    if (auto f = check("cudaEventElapsedTime", cudaEventElapsedTime(&ms, start_, stop_))) return f;
    seconds = static_cast<double>(ms) / 1e3;
    return std::nullopt;
  }

  DeviceResult zero(Method method, void* ptr, std::size_t bytes) override {
    if (method == Method::memset) return check("cudaMemsetAsync", cudaMemsetAsync(ptr, 0, bytes, stream_));
    return check("zero kernel launch", launch_zero(ptr, bytes, stream_));
  }

  DeviceResult copy(void* dst, const void* src, std::size_t bytes) override {
    return check("cudaMemcpyAsync(D2D)", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }

  // Gathers through a kernel into mapped pinned host memory, so verification needs no device
  // memory of its own (all of it is allocated for the scrub by then).
  DeviceResult read_words(std::span<const std::uintptr_t> addresses, std::span<std::uint64_t> out) override {
    const std::size_t n = addresses.size();
    if (n == 0) return std::nullopt;
    void* host_addr = nullptr;
    void* host_out = nullptr;
    auto result = [&]() -> DeviceResult {
      if (auto f = check("cudaHostAlloc", cudaHostAlloc(&host_addr, n * sizeof(std::uint64_t), cudaHostAllocMapped)))
        return f;
      if (auto f = check("cudaHostAlloc", cudaHostAlloc(&host_out, n * sizeof(std::uint64_t), cudaHostAllocMapped)))
        return f;
      std::span<std::uint64_t> a(static_cast<std::uint64_t*>(host_addr), n),
          o(static_cast<std::uint64_t*>(host_out), n);
      for (std::size_t i = 0; i < n; ++i) {
        a[i] = addresses[i];
        o[i] = out[i];  // the caller's sentinel survives a gather that did not run
      }
      void* dev_addr = nullptr;
      void* dev_out = nullptr;
      if (auto f = check("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&dev_addr, host_addr, 0))) return f;
      if (auto f = check("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&dev_out, host_out, 0))) return f;
      if (auto f = check("gather kernel launch", launch_gather(static_cast<const std::uint64_t*>(dev_addr),
                                                               static_cast<std::uint64_t*>(dev_out), n, stream_)))
        return f;
      if (auto f = check("cudaStreamSynchronize", cudaStreamSynchronize(stream_))) return f;
      for (std::size_t i = 0; i < n; ++i) out[i] = o[i];
      return std::nullopt;
    }();
    if (host_addr != nullptr) cudaFreeHost(host_addr);
    if (host_out != nullptr) cudaFreeHost(host_out);
    return result;
  }

  DeviceResult finish() override { return check("cudaDeviceSynchronize", cudaDeviceSynchronize()); }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device() { return std::make_unique<CudaDevice>(); }

}  // namespace vgpu::scrub
