// fake-nvidia-modprobe: what nvidia-modprobe (setuid root) does to the capability files when any
// user's CUDA program starts: creates missing ones and resets owner and mode of every capability
// that does not say "DeviceFileModify: 0" (caps.h). Tests run it as root to check that a job's
// confined instance survives it. Test double: never install it on a node.
#include <cstdio>
#include <string>

#include "caps.h"

int main() {
  std::string error;
  auto caps = fakenvml::CapFiles::from_env(error);
  if (!caps) {
    std::fprintf(stderr, "fake-nvidia-modprobe: %s\n",
                 error.empty() ? "VGPU_FAKE_NVML_DEVICE_ROOT unset" : error.c_str());
    return 2;
  }
  auto changed = caps->modprobe_all();
  for (const auto& line : changed) std::printf("fake-nvidia-modprobe: reset %s\n", line.c_str());
  std::printf("fake-nvidia-modprobe: %zu file(s) reset\n", changed.size());
  return 0;
}
