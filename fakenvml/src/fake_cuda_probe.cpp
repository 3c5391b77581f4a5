// fake-cuda-probe: what a CUDA program in a test job does to reach its GPUs, reduced to the part
// that decides access. For each MIG UUID in CUDA_VISIBLE_DEVICES it finds the instance through
// NVML (the fake) and opens the instance's GPU-instance and compute-instance capability files, as
// the CUDA driver does before it hands them to the kernel driver; an instance whose files the
// caller cannot open is refused, as CUDA reports no such device. A GPU UUID (a whole GPU, MIG
// off) is the GPU's device file /dev/nvidia<minor>, opened the same way. Prints one line per device and
// exits 0 only when every listed device is usable. With `--hold SECONDS` it then keeps a compute
// context on each for that long, as a running CUDA program does: NVML lists it among the device's
// processes until it exits. Test double: never install it on a node.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "caps.h"
#include "fake_control.h"
#include "nvml_abi.h"

namespace {

struct MigDevice {
  unsigned gpu_minor = 0, gi = 0, ci = 0;
  nvmlDevice_t handle = nullptr;
};

bool find_mig(const std::string& uuid, MigDevice& out) {
  unsigned count = 0;
  if (nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS) return false;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    unsigned minor = 0, max = 0;
    if (nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS ||
        nvmlDeviceGetMinorNumber(dev, &minor) != NVML_SUCCESS ||
        nvmlDeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS)
      continue;
    for (unsigned m = 0; m < max; ++m) {
      nvmlDevice_t mig = nullptr;
      char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      if (nvmlDeviceGetMigDeviceHandleByIndex(dev, m, &mig) != NVML_SUCCESS ||
          nvmlDeviceGetUUID(mig, text, sizeof text) != NVML_SUCCESS || uuid != text)
        continue;
      out.gpu_minor = minor;
      out.handle = mig;
      return nvmlDeviceGetGpuInstanceId(mig, &out.gi) == NVML_SUCCESS &&
             nvmlDeviceGetComputeInstanceId(mig, &out.ci) == NVML_SUCCESS;
    }
  }
  return false;
}

// A whole GPU is usable when its MIG mode is off and its device file opens.
bool probe_whole_gpu(const fakenvml::CapFiles& caps, const std::string& uuid, nvmlDevice_t& handle) {
  nvmlDevice_t dev = nullptr;
  unsigned count = 0, minor = 0, current = 0, pending = 0;
  bool found = false;
  if (nvmlDeviceGetCount_v2(&count) == NVML_SUCCESS)
    for (unsigned i = 0; i < count && !found; ++i) {
      char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      found = nvmlDeviceGetHandleByIndex_v2(i, &dev) == NVML_SUCCESS &&
              nvmlDeviceGetUUID(dev, text, sizeof text) == NVML_SUCCESS && uuid == text;
    }
  if (!found || nvmlDeviceGetMinorNumber(dev, &minor) != NVML_SUCCESS) {
    std::printf("fake-cuda: %s: refused: no such GPU\n", uuid.c_str());
    return false;
  }
  if (nvmlDeviceGetMigMode(dev, &current, &pending) == NVML_SUCCESS && current == NVML_DEVICE_MIG_ENABLE) {
    std::printf("fake-cuda: %s: refused: MIG mode is on, so the GPU is no CUDA device itself\n", uuid.c_str());
    return false;
  }
  const std::string path = caps.gpu_device_path(minor);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::printf("fake-cuda: %s: refused: open %s: %s\n", uuid.c_str(), path.c_str(), std::strerror(errno));
    return false;
  }
  ::close(fd);
  std::printf("fake-cuda: %s: usable (whole GPU %u: %s)\n", uuid.c_str(), minor, path.c_str());
  handle = dev;
  return true;
}

// "--hold SECONDS", or nothing.
bool hold_seconds(int argc, char** argv, unsigned& seconds) {
  if (argc == 1) return true;
  char* end = nullptr;
  if (argc != 3 || std::strcmp(argv[1], "--hold") != 0) return false;
  seconds = static_cast<unsigned>(std::strtoul(argv[2], &end, 10));
  return *argv[2] != '\0' && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  unsigned hold = 0;
  if (!hold_seconds(argc, argv, hold)) {
    std::fprintf(stderr, "usage: fake-cuda-probe [--hold SECONDS]\n");
    return 2;
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible || !*visible) {
    std::printf("fake-cuda: no device: CUDA_VISIBLE_DEVICES is empty\n");
    return 1;
  }
  std::string error;
  auto caps = fakenvml::CapFiles::from_env(error);
  if (!caps) {
    std::fprintf(stderr, "fake-cuda: no capability files: %s\n",
                 error.empty() ? "VGPU_FAKE_NVML_DEVICE_ROOT unset" : error.c_str());
    return 2;
  }
  if (nvmlInit_v2() != NVML_SUCCESS) {
    std::fprintf(stderr, "fake-cuda: nvmlInit failed\n");
    return 2;
  }
  int refused = 0;
  std::vector<nvmlDevice_t> usable;
  std::stringstream list(visible);
  std::string uuid;
  while (std::getline(list, uuid, ',')) {
    if (uuid.starts_with("GPU-")) {
      nvmlDevice_t handle = nullptr;
      refused += probe_whole_gpu(*caps, uuid, handle) ? 0 : 1;
      if (handle) usable.push_back(handle);
      continue;
    }
    MigDevice d;
    if (!find_mig(uuid, d)) {
      std::printf("fake-cuda: %s: refused: no such MIG device\n", uuid.c_str());
      ++refused;
      continue;
    }
    auto files = caps->paths(d.gpu_minor, d.gi, d.ci);
    if (!files) {
      std::printf("fake-cuda: %s: refused: no capability minors for gpu%u/gi%u/ci%u\n", uuid.c_str(), d.gpu_minor, d.gi,
                  d.ci);
      ++refused;
      continue;
    }
    std::string why;
    for (const auto& path : {files->first, files->second}) {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        why = "open " + path + ": " + std::strerror(errno);
        break;
      }
      ::close(fd);
    }
    if (why.empty())
      std::printf("fake-cuda: %s: usable (gpu %u gi %u ci %u: %s %s)\n", uuid.c_str(), d.gpu_minor, d.gi, d.ci,
                  files->first.c_str(), files->second.c_str());
    else
      std::printf("fake-cuda: %s: refused: %s\n", uuid.c_str(), why.c_str());
    refused += why.empty() ? 0 : 1;
    if (why.empty()) usable.push_back(d.handle);
  }
  if (refused == 0 && hold > 0) {
    for (nvmlDevice_t dev : usable)
      if (vgpuFakeOpenComputeContext(dev) != NVML_SUCCESS) {
        std::printf("fake-cuda: could not open a compute context\n");
        return 1;
      }
    std::printf("fake-cuda: holding a compute context on %zu device(s) for %u s\n", usable.size(), hold);
    std::fflush(stdout);
    ::sleep(hold);
  }
  nvmlShutdown();
  return refused == 0 ? 0 : 1;
}
