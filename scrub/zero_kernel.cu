#include "zero_kernel.h"

#include <cuda_runtime.h>

namespace vgpu::scrub {
namespace {

// Four independent 16-byte stores per iteration keep enough writes in flight per thread to saturate
// HBM without relying on the compiler to unroll a bounds-checked grid-stride loop.
__global__ void zero_vec16(uint4* __restrict__ p, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint4 z = make_uint4(0, 0, 0, 0);
  for (; i + 3 * stride < n; i += 4 * stride) {
    p[i] = z;
    p[i + stride] = z;
    p[i + 2 * stride] = z;
    p[i + 3 * stride] = z;
  }
  for (; i < n; i += stride) p[i] = z;
}

__global__ void zero_bytes(unsigned char* __restrict__ p, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = 0;
}

__global__ void gather_words(const std::uint64_t* __restrict__ addresses, std::uint64_t* __restrict__ out,
                             std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = *reinterpret_cast<const volatile std::uint64_t*>(addresses[i]);
}

constexpr int kThreads = 512;

// Enough resident blocks to fill every SM; grid-stride covers the rest. Cached per process: the
// scrub only ever sees one device.
int resident_blocks() {
  static int blocks = [] {
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, zero_vec16, kThreads, 0) != cudaSuccess || sms <= 0 ||
        per_sm <= 0)
      return 1024;
    return sms * per_sm;
  }();
  return blocks;
}

int blocks_for(std::size_t items) {
  const std::size_t needed = (items + kThreads - 1) / kThreads;
  const auto cap = static_cast<std::size_t>(resident_blocks());
  return static_cast<int>(needed < cap ? (needed == 0 ? 1 : needed) : cap);
}

}  // namespace

cudaError_t launch_zero(void* ptr, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  auto* base = static_cast<unsigned char*>(ptr);
  const auto addr = reinterpret_cast<std::uintptr_t>(base);
  std::size_t head = (16 - addr % 16) % 16;
  if (head > bytes) head = bytes;
  const std::size_t words = (bytes - head) / 16;
  const std::size_t tail = bytes - head - words * 16;
  if (head > 0) zero_bytes<<<1, 32, 0, stream>>>(base, head);
  if (words > 0) zero_vec16<<<blocks_for(words), kThreads, 0, stream>>>(reinterpret_cast<uint4*>(base + head), words);
  if (tail > 0) zero_bytes<<<1, 32, 0, stream>>>(base + head + words * 16, tail);
  return cudaGetLastError();
}

cudaError_t launch_gather(const std::uint64_t* addresses, std::uint64_t* out, std::size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  gather_words<<<blocks_for(count), kThreads, 0, stream>>>(addresses, out, count);
  return cudaGetLastError();
}

}  // namespace vgpu::scrub
