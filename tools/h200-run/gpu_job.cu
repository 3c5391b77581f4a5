// A job's CUDA program for tools/h200-run/real-gpu-run.sh: what the device CUDA shows it (name,
// UUID, SMs, memory), then, on request, an allocation that it fills and checks with a kernel, and
// kernels for a while (each one checked), so that two jobs can run side by side and each can tell
// whether the other disturbed it. Prints one JSON line; plain cudaMalloc, never managed memory.
//   gpu-job [--label TEXT] [--alloc-mib N] [--second-alloc-mib N] [--run-s S]
// Exit status: 0 everything asked for worked; 2 no CUDA device or context; 3 the first allocation
// failed; 4 a kernel or check failed; 5 the second allocation (the one past a share's cap) failed.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

__global__ void fill(unsigned* p, size_t n, unsigned salt) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<unsigned>(i) * 2654435761u ^ salt;
}

// Counts the words that do not hold what fill wrote.
__global__ void check(const unsigned* p, size_t n, unsigned salt, unsigned long long* bad) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    mine += p[i] != (static_cast<unsigned>(i) * 2654435761u ^ salt);
  if (mine) atomicAdd(bad, mine);
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string uuid_text(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char s[64];
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

// Fills and checks `words` words at p: "" when right, else what went wrong.
std::string fill_and_check(unsigned* p, size_t words, unsigned salt, unsigned long long* bad, int sms) {
  fill<<<sms * 8, 256>>>(p, words, salt);
  cudaMemset(bad, 0, sizeof *bad);
  check<<<sms * 8, 256>>>(p, words, salt, bad);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return std::string("kernel: ") + cudaGetErrorString(e);
  unsigned long long host_bad = ~0ull;
  e = cudaMemcpy(&host_bad, bad, sizeof host_bad, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return std::string("copy: ") + cudaGetErrorString(e);
  if (host_bad != 0) return std::to_string(host_bad) + " words wrong";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string label = "job";
  double alloc_mib = 0, second_mib = 0, run_s = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--label")) label = argv[i + 1];
    else if (!std::strcmp(argv[i], "--alloc-mib"))
      alloc_mib = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--second-alloc-mib"))
      second_mib = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--run-s"))
      run_s = std::atof(argv[i + 1]);
  }
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  const char* pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const auto t0 = std::chrono::steady_clock::now();
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count > 0) e = cudaFree(nullptr);  // the context (through MPS, if any)
  if (e != cudaSuccess || count == 0) {
    std::printf("{\"label\":\"%s\",\"cvd\":\"%s\",\"devices\":%d,\"context\":\"%s\"}\n", label.c_str(), cvd ? cvd : "",
                count, e == cudaSuccess ? "no device" : cudaGetErrorString(e));
    return 2;
  }
  const double context_s = since(t0);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  int rc = 0;
  std::string alloc = "not tried", second = "not tried", run = "not run";
  unsigned long long* bad = nullptr;
  unsigned* data = nullptr;
  size_t words = 0;
  long kernels = 0;
  if (cudaMalloc(&bad, sizeof *bad) != cudaSuccess) bad = nullptr;
  if (alloc_mib > 0) {
    words = static_cast<size_t>(alloc_mib * 1024 * 1024 / sizeof(unsigned));
    e = cudaMalloc(&data, words * sizeof(unsigned));
    if (e != cudaSuccess) {
      alloc = cudaGetErrorString(e);
      data = nullptr;
      cudaGetLastError();
      rc = 3;
    } else if (!bad) {
      alloc = "ok, but no word for the check";
      rc = 4;
    } else {
      std::string why = fill_and_check(data, words, 1, bad, prop.multiProcessorCount);
      alloc = why.empty() ? "ok, filled and checked" : "ok, check failed: " + why;
      if (!why.empty()) rc = 4;
    }
  }
  if (rc == 0 && second_mib > 0) {
    void* more = nullptr;
    e = cudaMalloc(&more, static_cast<size_t>(second_mib * 1024 * 1024));
    second = e == cudaSuccess ? "ok" : cudaGetErrorString(e);
    if (e == cudaSuccess) cudaFree(more);
    else {
      cudaGetLastError();
      rc = 5;
    }
  }
  if (rc == 0 && run_s > 0 && data) {
    // Kernels over the job's own data until the time is up, each one checked: a neighbour that
    // took this job's memory or broke its context shows here.
    const auto r0 = std::chrono::steady_clock::now();
    run = "ok";
    for (unsigned salt = 2; since(r0) < run_s; ++salt) {
      std::string why = fill_and_check(data, words, salt, bad, prop.multiProcessorCount);
      if (!why.empty()) {
        run = "failed after " + std::to_string(since(r0)) + " s: " + why;
        rc = 4;
        break;
      }
      ++kernels;
    }
  }
  if (data) cudaFree(data);
  if (bad) cudaFree(bad);
  std::printf(
      "{\"label\":\"%s\",\"cvd\":\"%s\",\"mps_pipe\":\"%s\",\"devices\":%d,\"device\":\"%s\",\"uuid\":\"%s\","
      "\"context_s\":%.3f,\"sms\":%d,\"total_mib\":%zu,\"free_mib\":%zu,\"alloc_mib\":%.0f,\"alloc\":\"%s\","
      "\"second_alloc_mib\":%.0f,\"second_alloc\":\"%s\",\"run\":\"%s\",\"checked_passes\":%ld,\"rc\":%d}\n",
      label.c_str(), cvd ? cvd : "", pipe ? pipe : "", count, prop.name, uuid_text(prop.uuid).c_str(), context_s,
      prop.multiProcessorCount, total_b >> 20, free_b >> 20, alloc_mib, alloc.c_str(), second_mib, second.c_str(),
      run.c_str(), kernels, rc);
  return rc;
}
