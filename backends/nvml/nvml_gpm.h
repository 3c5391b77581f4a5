// Utilisation through NVML: per MIG instance (or per whole GPU without MIG) the SM and DRAM
// bandwidth utilisation from GPM (GPU Performance Monitoring, Hopper and newer), and the memory
// in use. GPM reports a metric between two samples of the same scope, so the sampler keeps each
// scope's previous sample and a scope's first call gives no utilisation yet. Read-only: it only
// resolves query entry points, like the Reader it borrows (which must outlive it).
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "nvml_reader.h"

namespace vgpu::nvml {

struct GpmApi {
  decltype(&nvmlGpmQueryDeviceSupport) query_device_support = nullptr;
  decltype(&nvmlGpmSampleAlloc) sample_alloc = nullptr;
  decltype(&nvmlGpmSampleFree) sample_free = nullptr;
  decltype(&nvmlGpmSampleGet) sample_get = nullptr;
  decltype(&nvmlGpmMigSampleGet) mig_sample_get = nullptr;
  decltype(&nvmlGpmMetricsGet) metrics_get = nullptr;
  [[nodiscard]] bool complete() const {
    return query_device_support && sample_alloc && sample_free && sample_get && mig_sample_get && metrics_get;
  }
};

// All of GPM's entry points, or none: drivers before 520 have no GPM.
GpmApi resolve_gpm(const Library& lib);

class GpmSampler : public ActivitySampler {
 public:
  GpmSampler(Reader& reader, GpmApi api) : reader_(reader), api_(api) {}
  ~GpmSampler() override;
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;

  ActivitySample sample() override;

 private:
  struct Held {
    nvmlGpmSample_t sample = nullptr;
    std::chrono::steady_clock::time_point taken;
  };
  struct Scope {
    int gpu = 0;
    std::optional<int> gi_id;
    std::string uuid;
    nvmlDevice_t handle = nullptr;  // the GPU, or the MIG device for memory queries
  };
  void read_scope(nvmlDevice_t gpu_handle, const Scope& scope, bool gpm, ActivitySample& out,
                  std::map<std::string, Held>& now);
  void free_sample(nvmlGpmSample_t s);

  Reader& reader_;
  GpmApi api_;
  std::map<std::string, Held> previous_;  // by scope uuid
};

}  // namespace vgpu::nvml
