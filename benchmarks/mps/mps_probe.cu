// One MPS client, for benchmarks/mps/h100_mps_limits.sh: what the CUDA context it gets is allowed
// to use (SMs, memory), and, on request, a fatal fault of its own or a long run of kernels, to see
// what another client of the same MPS server goes through. Prints one JSON object.
//   mps_probe [--alloc-gib N] [--spin-s S] [--fault-after-s S] [--label TEXT]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

__global__ void spin(long long cycles, int* sink) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(sink, 1);
}

__global__ void fault(int* p) { *p = 1; }  // p points nowhere: an illegal address

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  double alloc_gib = 0, spin_s = 0, fault_after_s = -1;
  std::string label = "probe";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--alloc-gib")) alloc_gib = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--spin-s"))
      spin_s = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--fault-after-s"))
      fault_after_s = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--label"))
      label = argv[i + 1];
  }
  const auto t0 = std::chrono::steady_clock::now();
  cudaError_t e = cudaFree(nullptr);  // context creation (through the MPS server, if any)
  double context_s = seconds_since(t0);
  if (e != cudaSuccess) {
    std::printf("{\"label\":\"%s\",\"context\":\"%s\"}\n", label.c_str(), cudaGetErrorString(e));
    return 2;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  std::string alloc = "not tried";
  void* held = nullptr;  // kept while the probe runs, so that concurrent probes add up
  if (alloc_gib > 0) {
    e = cudaMalloc(&held, static_cast<size_t>(alloc_gib * (1ull << 30)));
    alloc = e == cudaSuccess ? "ok" : cudaGetErrorString(e);
    if (e != cudaSuccess) held = nullptr;
    cudaGetLastError();
  }
  std::string run = "not run";
  int kernels = 0;
  if (spin_s > 0 || fault_after_s >= 0) {
    int* sink = nullptr;
    cudaMalloc(&sink, sizeof(int));
    const auto r0 = std::chrono::steady_clock::now();
    run = "ok";
    while (true) {
      double t = seconds_since(r0);
      if (fault_after_s >= 0 && t >= fault_after_s) {
        fault<<<1, 1>>>(reinterpret_cast<int*>(0x10));
        e = cudaDeviceSynchronize();
        run = std::string("fault raised: ") + cudaGetErrorString(e);
        break;
      }
      if (spin_s > 0 && t >= spin_s) break;
      spin<<<prop.multiProcessorCount * 4, 128>>>(2'000'000, sink);  // about 1 ms at 1.98 GHz
      e = cudaDeviceSynchronize();
      if (e != cudaSuccess) {
        run = std::string("kernel failed after ") + std::to_string(t) + " s: " + cudaGetErrorString(e);
        break;
      }
      ++kernels;
    }
  }
  if (held) cudaFree(held);
  std::printf(
      "{\"label\":\"%s\",\"context_s\":%.3f,\"sms\":%d,\"total_mib\":%zu,\"free_mib\":%zu,"
      "\"alloc_gib\":%.1f,\"alloc\":\"%s\",\"run\":\"%s\",\"kernels\":%d}\n",
      label.c_str(), context_s, prop.multiProcessorCount, total_b >> 20, free_b >> 20, alloc_gib, alloc.c_str(),
      run.c_str(), kernels);
  return 0;
}
