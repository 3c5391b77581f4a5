#include "nvml_gpm.h"

#include <fmt/format.h>

#include <memory>

namespace vgpu::nvml {

namespace {

// Like the reader's required entry points, but a missing one leaves the slot null.
template <class Fn>
void resolve_optional(const Library& lib, Fn*& slot, const char* name) {
  if (auto s = lib.symbol<Fn>(name)) slot = *s;
}

}  // namespace

GpmApi resolve_gpm(const Library& lib) {
  GpmApi a;
  resolve_optional(lib, a.query_device_support, "nvmlGpmQueryDeviceSupport");
  resolve_optional(lib, a.sample_alloc, "nvmlGpmSampleAlloc");
  resolve_optional(lib, a.sample_free, "nvmlGpmSampleFree");
  resolve_optional(lib, a.sample_get, "nvmlGpmSampleGet");
  resolve_optional(lib, a.mig_sample_get, "nvmlGpmMigSampleGet");
  resolve_optional(lib, a.metrics_get, "nvmlGpmMetricsGet");
  return a.complete() ? a : GpmApi{};
}

std::unique_ptr<ActivitySampler> Reader::activity_sampler() {
  if (!lib_) return nullptr;
  return std::make_unique<GpmSampler>(*this, resolve_gpm(*lib_));
}

GpmSampler::~GpmSampler() {
  for (auto& [uuid, held] : previous_) free_sample(held.sample);
}

void GpmSampler::free_sample(nvmlGpmSample_t s) {
  if (s && api_.sample_free) api_.sample_free(s);
}

void GpmSampler::read_scope(nvmlDevice_t gpu_handle, const Scope& scope, bool gpm, ActivitySample& out,
                            std::map<std::string, Held>& now) {
  const auto& lib = *reader_.library();
  std::string where =
      scope.gi_id ? fmt::format("gpu {}, gi {}", scope.gpu, *scope.gi_id) : fmt::format("gpu {}", scope.gpu);
  ActivityReading r;
  r.gpu = scope.gpu;
  r.gi_id = scope.gi_id;
  r.uuid = scope.uuid;
  nvmlMemory_t mem{};
  if (auto rc = reader_.api().device_get_memory_info(scope.handle, &mem); rc == NVML_SUCCESS) {
    r.memory_used_bytes = mem.used;
    r.memory_total_bytes = mem.total;
  } else {
    out.errors.push_back(lib.failure(fmt::format("nvmlDeviceGetMemoryInfo({})", where), rc).message());
  }
  if (gpm) {
    nvmlGpmSample_t s = nullptr;
    nvmlReturn_t rc = api_.sample_alloc(&s);
    const char* call = "nvmlGpmSampleAlloc";
    if (rc == NVML_SUCCESS) {
      call = scope.gi_id ? "nvmlGpmMigSampleGet" : "nvmlGpmSampleGet";
      rc = scope.gi_id ? api_.mig_sample_get(gpu_handle, static_cast<unsigned>(*scope.gi_id), s)
                       : api_.sample_get(gpu_handle, s);
    }
    if (rc != NVML_SUCCESS) {
      out.errors.push_back(lib.failure(fmt::format("{}({})", call, where), rc).message());
      free_sample(s);
    } else {
      Held held{s, std::chrono::steady_clock::now()};
      if (auto prev = previous_.find(scope.uuid); prev != previous_.end()) {
        // Heap-allocated: the request carries the whole metrics array (over 13 kB).
        auto get = std::make_unique<nvmlGpmMetricsGet_t>();
        get->version = NVML_GPM_METRICS_GET_VERSION;
        get->numMetrics = 2;
        get->sample1 = prev->second.sample;
        get->sample2 = s;
        get->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
        get->metrics[1].metricId = NVML_GPM_METRIC_DRAM_BW_UTIL;
        if (auto mrc = api_.metrics_get(get.get()); mrc == NVML_ERROR_INVALID_ARGUMENT) {
          // The two samples are not of one scope: the instance was destroyed and created again at
          // the same place between the calls, under the same UUID (the fake keeps MIG UUIDs
          // stable). This sample starts the new instance's first interval, like a first call.
        } else if (mrc != NVML_SUCCESS) {
          out.errors.push_back(lib.failure(fmt::format("nvmlGpmMetricsGet({})", where), mrc).message());
        } else {
          r.interval_seconds = std::chrono::duration<double>(held.taken - prev->second.taken).count();
          auto ratio = [&](const nvmlGpmMetric_t& m, std::optional<double>& into) {
            if (m.nvmlReturn == NVML_SUCCESS) into = m.value / 100.0;
            else
              out.errors.push_back(
                  lib.failure(fmt::format("nvmlGpmMetricsGet({}, metric {})", where, m.metricId), m.nvmlReturn)
                      .message());
          };
          ratio(get->metrics[0], r.sm_utilization);
          ratio(get->metrics[1], r.dram_bandwidth_utilization);
        }
      }
      now[scope.uuid] = held;
    }
  }
  out.readings.push_back(std::move(r));
}

ActivitySample GpmSampler::sample() {
  ActivitySample out;
  std::map<std::string, Held> now;
  auto gpus = reader_.discover();
  if (!gpus) {
    out.errors.push_back(gpus.error().message);
    gpus = std::vector<GpuInfo>{};
  }
  const QueryApi& q = reader_.api();
  const auto& lib = *reader_.library();
  for (const GpuInfo& info : *gpus) {
    auto dev = reader_.device(info.index);
    if (!dev) {
      out.errors.push_back(dev.error().message);
      continue;
    }
    bool gpm = false;
    if (api_.complete()) {
      nvmlGpmSupport_t support{};
      support.version = NVML_GPM_SUPPORT_VERSION;
      if (auto rc = api_.query_device_support(*dev, &support); rc == NVML_SUCCESS) gpm = support.isSupportedDevice != 0;
      else
        out.errors.push_back(lib.failure(fmt::format("nvmlGpmQueryDeviceSupport(gpu {})", info.index), rc).message());
    }
    if (!gpm) ++out.gpus_without_support;
    if (info.mig_current != MigMode::enabled) {
      read_scope(*dev, {info.index, std::nullopt, info.uuid, *dev}, gpm, out, now);
      continue;
    }
    unsigned max = 0;
    if (auto rc = q.device_get_max_mig_device_count(*dev, &max); rc != NVML_SUCCESS) {
      out.errors.push_back(
          lib.failure(fmt::format("nvmlDeviceGetMaxMigDeviceCount(gpu {})", info.index), rc).message());
      continue;
    }
    for (unsigned i = 0; i < max; ++i) {
      nvmlDevice_t mig = nullptr;
      nvmlReturn_t rc = q.device_get_mig_device_handle_by_index(*dev, i, &mig);
      if (rc == NVML_ERROR_NOT_FOUND) continue;
      unsigned gi = 0;
      char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      const char* call = "nvmlDeviceGetMigDeviceHandleByIndex";
      if (rc == NVML_SUCCESS) call = "nvmlDeviceGetGpuInstanceId", rc = q.device_get_gpu_instance_id(mig, &gi);
      if (rc == NVML_SUCCESS) call = "nvmlDeviceGetUUID", rc = q.device_get_uuid(mig, uuid, sizeof uuid);
      if (rc != NVML_SUCCESS) {
        // An instance destroyed between the calls (an epilog racing the planner) ends up here.
        out.errors.push_back(lib.failure(fmt::format("{}(gpu {}, mig index {})", call, info.index, i), rc).message());
        continue;
      }
      read_scope(*dev, {info.index, static_cast<int>(gi), uuid, mig}, gpm, out, now);
    }
  }
  // Scopes gone since the last call (instances destroyed) release their samples.
  for (auto& [uuid, held] : previous_)
    if (!now.contains(uuid)) free_sample(held.sample);
  previous_ = std::move(now);
  return out;
}

}  // namespace vgpu::nvml
