// Device code vgpu-scrub launches: a vectorized zero-fill and a gather of sampled words.
// Declared with plain runtime-API types so the host side compiles with the host compiler.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace vgpu::scrub {

// Zeroes [ptr, ptr+bytes) on `stream` with 16-byte stores; any unaligned head/tail bytes too.
cudaError_t launch_zero(void* ptr, std::size_t bytes, cudaStream_t stream);

// out[i] = *reinterpret_cast<const uint64_t*>(addresses[i]); both arrays must be device-visible
// (mapped pinned host memory, so verification needs no device memory of its own).
cudaError_t launch_gather(const std::uint64_t* addresses, std::uint64_t* out, std::size_t count, cudaStream_t stream);

}  // namespace vgpu::scrub
