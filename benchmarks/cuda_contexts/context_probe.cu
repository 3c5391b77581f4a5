// One scrub's CUDA start-up, as vgpu-scrub pays it: wait for a common start time, create the
// context, allocate and zero `--gib` GiB, synchronize. Prints one JSON line of wall times (ms from
// the common start), so several started together show whether their start-ups run side by side.
//   context_probe START_EPOCH_MS GIB
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

static double ms_since(long long start_ms) {
  using namespace std::chrono;
  return duration<double, std::milli>(system_clock::now().time_since_epoch()).count() - double(start_ms);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: context_probe START_EPOCH_MS GIB\n");
    return 2;
  }
  const long long start = std::atoll(argv[1]);
  const size_t bytes = size_t(std::atof(argv[2]) * (1ull << 30));
  std::this_thread::sleep_until(std::chrono::system_clock::time_point(std::chrono::milliseconds(start)));
  const double began = ms_since(start);
  cudaError_t e = cudaFree(nullptr);  // creates the primary context
  const double context = ms_since(start);
  void* p = nullptr;
  if (e == cudaSuccess) e = cudaMalloc(&p, bytes);
  if (e == cudaSuccess) e = cudaMemset(p, 0, bytes);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  const double zeroed = ms_since(start);
  if (p) cudaFree(p);
  std::printf("{\"began_ms\": %.1f, \"context_ms\": %.1f, \"zeroed_ms\": %.1f, \"error\": \"%s\"}\n", began, context,
              zeroed, e == cudaSuccess ? "" : cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
