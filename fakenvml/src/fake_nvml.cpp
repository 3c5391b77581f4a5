// The fake libnvidia-ml.so.1: NVML's C ABI (the subset in nvml_abi.h) over a fixture file and a
// shared state file. It answers with the codes the real library documents for each situation, so
// the production NVML backend runs against it unchanged.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "fake_control.h"
#include "fixture.h"
#include "latency.h"
#include "caps.h"
#include "contexts.h"
#include "mig_mode.h"
#include "mig_uuid.h"
#include "nvml_abi.h"
#include "state.h"

namespace fakenvml {
namespace {

enum class Kind { device, mig_device, gpu_instance, compute_instance };

// Every handle the fake gives out points at one of these. Handles are validated by membership in
// the registry before they are dereferenced, so a stale or made-up handle is INVALID_ARGUMENT.
struct Handle {
  Kind kind = Kind::device;
  unsigned gpu = 0;
  unsigned gi = 0, ci = 0;
  std::uint64_t gi_serial = 0, ci_serial = 0;
};

struct Globals {
  std::mutex mu;
  int init_count = 0;
  std::optional<Fixture> fixture;
  std::unique_ptr<StateStore> store;
  std::optional<CapFiles> caps;      // the instances' capability files, when the fake has a device root
  std::optional<Contexts> contexts;  // processes' compute contexts
  Latency latency;
  std::vector<std::unique_ptr<Handle>> handles;
  std::set<const Handle*> valid;
};

Globals& g() {
  static Globals* globals = new Globals;  // never destroyed: NVML may be called during exit
  return *globals;
}

Handle* intern(const Handle& h) {
  auto& G = g();
  for (auto& p : G.handles)
    if (p->kind == h.kind && p->gpu == h.gpu && p->gi == h.gi && p->ci == h.ci && p->gi_serial == h.gi_serial &&
        p->ci_serial == h.ci_serial)
      return p.get();
  G.handles.push_back(std::make_unique<Handle>(h));
  G.valid.insert(G.handles.back().get());
  return G.handles.back().get();
}

template <class T>
const Handle* lookup(T handle, Kind kind) {
  const auto* h = reinterpret_cast<const Handle*>(handle);
  if (!h || !g().valid.contains(h) || h->kind != kind) return nullptr;
  return h;
}

nvmlDevice_t as_device(Handle* h) { return reinterpret_cast<nvmlDevice_t>(h); }
nvmlGpuInstance_t as_gi(Handle* h) { return reinterpret_cast<nvmlGpuInstance_t>(h); }
nvmlComputeInstance_t as_ci(Handle* h) { return reinterpret_cast<nvmlComputeInstance_t>(h); }

const Gpu& gpu_of(const Handle* h) { return g().fixture->gpus[h->gpu]; }

nvmlReturn_t copy_string(const std::string& s, char* out, unsigned length) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

const GiProfile* gi_profile_by_id(const Gpu& gpu, unsigned id) {
  for (const auto& p : gpu.gi_profiles)
    if (!p.error && p.id == id) return &p;
  return nullptr;
}

const CiProfile* ci_profile_by_id(const Gpu& gpu, unsigned id) {
  for (const auto& c : gpu.ci_profiles)
    if (c.id == id) return &c;
  return nullptr;
}

GiState* find_gi(State& s, const Gpu& gpu, unsigned id, std::uint64_t serial) {
  for (auto& gi : s.gpus[gpu.uuid])
    if (gi.id == id && (serial == 0 || gi.serial == serial)) return &gi;
  return nullptr;
}

// GI ids follow the memory-slice buddy tree, like the driver's swizzle ids: the whole GPU is 0,
// its halves 1-2, quarters 3-6, eighths 7-14. Overlapping placements cannot coexist, so the id is
// unique among live instances and the same placement always gets the same id.
unsigned gi_id_for(const Gpu& gpu, const std::vector<GiState>& live, nvmlGpuInstancePlacement_t p) {
  unsigned total = gpu.memory_slices;
  if (p.size && total % p.size == 0 && p.start % p.size == 0) return total / p.size - 1 + p.start / p.size;
  unsigned id = 2 * total;
  while (std::any_of(live.begin(), live.end(), [&](const GiState& gi) { return gi.id == id; })) ++id;
  return id;
}

struct MigEntry {
  const GiState* gi;
  const CiState* ci;
};

std::vector<MigEntry> mig_devices(const State& s, const Gpu& gpu) {
  std::vector<MigEntry> out;
  auto it = s.gpus.find(gpu.uuid);
  if (it == s.gpus.end()) return out;
  std::vector<const GiState*> gis;
  for (const auto& gi : it->second) gis.push_back(&gi);
  std::sort(gis.begin(), gis.end(), [](auto* a, auto* b) { return a->id < b->id; });
  for (const auto* gi : gis)
    for (const auto& ci : gi->cis) out.push_back({gi, &ci});
  return out;
}

// A successful reconfiguration takes this long, with the process lock held: the driver serializes
// MIG changes on a GPU too.
nvmlReturn_t after(nvmlReturn_t rc, unsigned ms) {
  if (rc == NVML_SUCCESS && ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return rc;
}

std::string state_path_from_env() {
  const char* p = std::getenv("VGPU_FAKE_NVML_STATE");
  return p ? p : "";
}

}  // namespace
}  // namespace fakenvml

using namespace fakenvml;

#define FAKE_API extern "C" __attribute__((visibility("default")))

// Every entry point takes the process lock and checks initialisation first, as NVML does.
#define ENTER()                              \
  std::lock_guard<std::mutex> lock_(g().mu); \
  if (g().init_count == 0) return NVML_ERROR_UNINITIALIZED

FAKE_API nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard<std::mutex> lock(g().mu);
  auto& G = g();
  if (G.init_count > 0) {
    ++G.init_count;
    return NVML_SUCCESS;
  }
  const char* path = std::getenv("VGPU_FAKE_NVML_FIXTURE");
  // No fixture is this fake's way of being a node whose driver is not loaded.
  if (!path || !*path) return NVML_ERROR_DRIVER_NOT_LOADED;
  std::string error;
  auto fixture = load_fixture(path, error);
  if (!fixture) {
    std::fprintf(stderr, "fake-nvml: %s\n", error.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  const char* latency_text = std::getenv("VGPU_FAKE_NVML_LATENCY_MS");
  auto latency = parse_latency(latency_text ? latency_text : "", error);
  if (!latency) {
    std::fprintf(stderr, "fake-nvml: %s\n", error.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  G.latency = *latency;
  error.clear();
  G.caps = CapFiles::from_env(error);
  if (!error.empty()) {
    std::fprintf(stderr, "fake-nvml: VGPU_FAKE_NVML_DEVICE_ROOT: %s\n", error.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  if (G.caps) {
    for (const auto& gpu : fixture->gpus) G.caps->ensure_gpu_device(gpu.minor);
    (void)G.caps->libraries_reset(::geteuid());
  }
  G.fixture = std::move(fixture);
  G.store = std::make_unique<StateStore>(state_path_from_env());
  G.contexts.emplace(contexts_dir_for(state_path_from_env()));
  if (::geteuid() == 0 && !G.contexts->prepare(error)) std::fprintf(stderr, "fake-nvml: %s\n", error.c_str());
  G.init_count = 1;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlShutdown(void) {
  ENTER();
  auto& G = g();
  if (--G.init_count == 0) {
    G.valid.clear();
    G.handles.clear();
    G.store.reset();
    G.fixture.reset();
  }
  return NVML_SUCCESS;
}

FAKE_API const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Version mismatch between passed in argument and the version of NVML";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    default: return "Unknown Error";
  }
}

FAKE_API nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  ENTER();
  return copy_string(g().fixture->driver_version, version, length);
}

FAKE_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  ENTER();
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(g().fixture->gpus.size());
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  ENTER();
  if (!device || index >= g().fixture->gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = as_device(intern({Kind::device, index, 0, 0, 0, 0}));
  return NVML_SUCCESS;
}

namespace {
// Device queries accept physical and MIG device handles where NVML does.
const Handle* any_device(nvmlDevice_t d) {
  if (const auto* h = lookup(d, Kind::device)) return h;
  return lookup(d, Kind::mig_device);
}

const GiState* live_gi_of_mig(State& s, const Handle* h) {
  GiState* gi = find_gi(s, gpu_of(h), h->gi, h->gi_serial);
  if (!gi) return nullptr;
  for (const auto& ci : gi->cis)
    if (ci.id == h->ci && ci.serial == h->ci_serial) return gi;
  return nullptr;
}
}  // namespace

FAKE_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  ENTER();
  const Handle* h = any_device(device);
  if (!h) return NVML_ERROR_INVALID_ARGUMENT;
  if (h->kind == Kind::device) return copy_string(gpu_of(h).name, name, length);
  std::string mig_name;
  nvmlReturn_t rc = g().store->with(false, [&](State& s) {
    const GiState* gi = live_gi_of_mig(s, h);
    if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
    const GiProfile* p = gi_profile_by_id(gpu_of(h), gi->profile_id);
    mig_name = gpu_of(h).name + " " + (p ? p->name : std::string("MIG"));
    return NVML_SUCCESS;
  });
  return rc != NVML_SUCCESS ? rc : copy_string(mig_name, name, length);
}

FAKE_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  ENTER();
  const Handle* h = any_device(device);
  if (!h) return NVML_ERROR_INVALID_ARGUMENT;
  if (h->kind == Kind::device) return copy_string(gpu_of(h).uuid, uuid, length);
  std::string text;
  nvmlReturn_t rc = g().store->with(false, [&](State& s) {
    const GiState* gi = live_gi_of_mig(s, h);
    if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
    text = mig_uuid(gpu_of(h).uuid, gi->id, gi->placement.start, gi->placement.size, h->ci);
    return NVML_SUCCESS;
  });
  return rc != NVML_SUCCESS ? rc : copy_string(text, uuid, length);
}

namespace {
// The address fields of an nvmlPciInfo_t from a bus id "0000DDDD:BB:DD.F", as NVML fills them.
nvmlReturn_t fill_pci_address(const std::string& bus_id, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof *pci);
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return NVML_ERROR_UNKNOWN;
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
  std::snprintf(pci->busId, sizeof pci->busId, "%s", bus_id.c_str());
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.%x", domain & 0xffffu, bus & 0xffu,
                dev & 0xffu, fn & 0xfu);
  return NVML_SUCCESS;
}
}  // namespace

FAKE_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  ENTER();
  const Handle* h = lookup(device, Kind::device);
  if (!h || !pci) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  if (auto rc = fill_pci_address(gpu.pci_bus_id, pci); rc != NVML_SUCCESS) return rc;
  pci->pciDeviceId = gpu.pci_device_id;
  return NVML_SUCCESS;
}

// A MIG device handle answers for its instance (the profile's memory, what its workload uses); the
// physical GPU for all of it.
FAKE_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  ENTER();
  const Handle* h = any_device(device);
  if (!h || !memory) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  constexpr unsigned long long kMiB = 1024ULL * 1024ULL;
  return g().store->with(false, [&](State& s) {
    unsigned long long total_mib = gpu.memory_mib, used_mib = 0;
    if (h->kind == Kind::mig_device) {
      const GiState* gi = live_gi_of_mig(s, h);
      if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
      const GiProfile* p = gi_profile_by_id(gpu, gi->profile_id);
      total_mib = p ? p->memory_size_mib : 0;
      used_mib = gi->activity.memory_used_mib;
    } else if (mig_enabled_now(s, gpu)) {
      for (const auto& gi : s.gpus[gpu.uuid]) used_mib += gi.activity.memory_used_mib;
    } else if (auto it = s.whole_gpus.find(gpu.uuid); it != s.whole_gpus.end()) {
      used_mib = it->second.memory_used_mib;
    }
    memory->total = total_mib * kMiB;
    memory->used = used_mib * kMiB;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  });
}

FAKE_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  ENTER();
  const Handle* h = lookup(device, Kind::device);
  if (!h || !minor) return NVML_ERROR_INVALID_ARGUMENT;
  *minor = gpu_of(h).minor;
  return NVML_SUCCESS;
}

// Topology as the fixture recorded it: a pair or link not recorded answers NOT_SUPPORTED, as a
// GPU without NVLink does. NVML documents no answer for a device paired with itself; the fake
// refuses it as an invalid argument.
namespace {
nvmlReturn_t recorded_pair(nvmlDevice_t device1, nvmlDevice_t device2, const GpuPairTopology*& pair) {
  const Handle* a = lookup(device1, Kind::device);
  const Handle* b = lookup(device2, Kind::device);
  if (!a || !b || a->gpu == b->gpu) return NVML_ERROR_INVALID_ARGUMENT;
  for (const auto& p : g().fixture->pairs)
    if ((p.a == a->gpu && p.b == b->gpu) || (p.a == b->gpu && p.b == a->gpu)) {
      pair = &p;
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t recorded_link(nvmlDevice_t device, unsigned link, const NvLink*& out) {
  const Handle* h = lookup(device, Kind::device);
  if (!h || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  const auto& links = gpu_of(h).nvlinks;
  if (!links) return NVML_ERROR_NOT_SUPPORTED;
  for (const auto& l : *links)
    if (l.link == link) {
      out = &l;
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_SUPPORTED;
}
}  // namespace

FAKE_API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                          nvmlGpuTopologyLevel_t* pathInfo) {
  ENTER();
  const GpuPairTopology* pair = nullptr;
  if (!pathInfo) return NVML_ERROR_INVALID_ARGUMENT;
  if (auto rc = recorded_pair(device1, device2, pair); rc != NVML_SUCCESS) return rc;
  if (!pair->common_ancestor) return NVML_ERROR_NOT_SUPPORTED;
  *pathInfo = *pair->common_ancestor;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuP2PCapsIndex_t p2pIndex,
                                             nvmlGpuP2PStatus_t* p2pStatus) {
  ENTER();
  const GpuPairTopology* pair = nullptr;
  if (!p2pStatus) return NVML_ERROR_INVALID_ARGUMENT;
  if (auto rc = recorded_pair(device1, device2, pair); rc != NVML_SUCCESS) return rc;
  const auto& status = p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK ? pair->p2p_nvlink
                       : p2pIndex == NVML_P2P_CAPS_INDEX_READ ? pair->p2p_read
                                                              : std::optional<nvmlGpuP2PStatus_t>{};
  if (!status) return NVML_ERROR_NOT_SUPPORTED;
  *p2pStatus = *status;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive) {
  ENTER();
  const NvLink* l = nullptr;
  if (!isActive) return NVML_ERROR_INVALID_ARGUMENT;
  if (auto rc = recorded_link(device, link, l); rc != NVML_SUCCESS) return rc;
  *isActive = l->active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci) {
  ENTER();
  const NvLink* l = nullptr;
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  if (auto rc = recorded_link(device, link, l); rc != NVML_SUCCESS) return rc;
  if (l->remote_pci_bus_id.empty()) return NVML_ERROR_NOT_SUPPORTED;
  return fill_pci_address(l->remote_pci_bus_id, pci);
}

FAKE_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current, unsigned int* pending) {
  ENTER();
  const Handle* h = lookup(device, Kind::device);
  if (!h || !current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  if (gpu.mig_current == Mig::unsupported) return NVML_ERROR_NOT_SUPPORTED;
  return g().store->with(false, [&](State& s) {
    MigModeState mode = mig_mode_now(s, gpu);
    *current = mode.current;
    *pending = mode.pending;
    return NVML_SUCCESS;
  });
}

// The rules are mig_mode.h's. The euid stands for NVML's root check: the hooks and the planner run
// as root, a job does not.
FAKE_API nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activationStatus) {
  ENTER();
  const Handle* h = lookup(device, Kind::device);
  if (!h || !activationStatus) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  return g().store->with(true, [&](State& s) {
    return set_mig_mode(s, gpu, mode, ::geteuid() == 0, *activationStatus,
                        g().contexts->held({gpu.uuid, std::nullopt, 0}));
  });
}

FAKE_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                           nvmlGpuInstanceProfileInfo_v2_t* info) {
  ENTER();
  const Handle* h = lookup(device, Kind::device);
  if (!h || !info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != nvmlGpuInstanceProfileInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const Gpu& gpu = gpu_of(h);
  if (gpu.mig_current == Mig::unsupported) return NVML_ERROR_NOT_SUPPORTED;
  auto it = std::find_if(gpu.gi_profiles.begin(), gpu.gi_profiles.end(),
                         [&](const GiProfile& p) { return p.index == profile; });
  if (it == gpu.gi_profiles.end()) return NVML_ERROR_NOT_SUPPORTED;
  if (it->error) return it->error->code;
  unsigned version = info->version;
  std::memset(info, 0, sizeof *info);
  info->version = version;
  info->id = it->id;
  info->isP2pSupported = it->is_p2p_supported;
  info->sliceCount = it->slice_count;
  info->instanceCount = it->instance_count;
  info->multiprocessorCount = it->multiprocessor_count;
  info->copyEngineCount = it->copy_engine_count;
  info->decoderCount = it->decoder_count;
  info->encoderCount = it->encoder_count;
  info->jpegCount = it->jpeg_count;
  info->ofaCount = it->ofa_count;
  info->memorySizeMB = it->memory_size_mib;
  std::snprintf(info->name, sizeof info->name, "%s", it->name.c_str());
  return NVML_SUCCESS;
}

// Possible placements are a property of the profile, answered whether or not MIG is enabled.
FAKE_API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                                    nvmlGpuInstancePlacement_t* placements,
                                                                    unsigned int* count) {
  ENTER();
  const Handle* h = lookup(device, Kind::device);
  if (!h || !count) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  if (gpu.mig_current == Mig::unsupported) return NVML_ERROR_NOT_SUPPORTED;
  const GiProfile* p = gi_profile_by_id(gpu, profileId);
  if (!p) return NVML_ERROR_INVALID_ARGUMENT;
  if (p->placements_error) return p->placements_error->code;
  auto n = static_cast<unsigned>(p->placements.size());
  if (!placements) {
    *count = n;
    return NVML_SUCCESS;
  }
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(p->placements.begin(), p->placements.end(), placements);
  *count = n;
  return NVML_SUCCESS;
}

namespace {
// The checks every GPU-instance call makes before touching state.
nvmlReturn_t mig_device(nvmlDevice_t device, const Handle*& h) {
  h = lookup(device, Kind::device);
  if (!h) return NVML_ERROR_INVALID_ARGUMENT;
  return g().store->with(
      false, [&](State& s) { return mig_enabled_now(s, gpu_of(h)) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED; });
}

Handle* gi_handle(const Handle* dev, const GiState& gi) {
  return intern({Kind::gpu_instance, dev->gpu, gi.id, 0, gi.serial, 0});
}
}  // namespace

FAKE_API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                               const nvmlGpuInstancePlacement_t* placement,
                                                               nvmlGpuInstance_t* gpuInstance) {
  ENTER();
  const Handle* h = nullptr;
  if (auto rc = mig_device(device, h); rc != NVML_SUCCESS) return rc;
  if (!placement || !gpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  const GiProfile* p = gi_profile_by_id(gpu, profileId);
  if (!p) return NVML_ERROR_INVALID_ARGUMENT;
  bool legal = std::any_of(p->placements.begin(), p->placements.end(),
                           [&](auto pl) { return pl.start == placement->start && pl.size == placement->size; });
  if (!legal) return NVML_ERROR_INVALID_ARGUMENT;
  return after(g().store->with(true,
                               [&](State& s) {
                                 auto& live = s.gpus[gpu.uuid];
                                 unsigned same_profile = 0, used_compute = 0;
                                 std::uint32_t used_mask = 0;
                                 for (const auto& gi : live) {
                                   if (gi.profile_id == profileId) ++same_profile;
                                   if (const GiProfile* q = gi_profile_by_id(gpu, gi.profile_id))
                                     used_compute += q->slice_count;
                                   used_mask |= ((1u << gi.placement.size) - 1u) << gi.placement.start;
                                 }
                                 std::uint32_t want = ((1u << placement->size) - 1u) << placement->start;
                                 if (same_profile >= p->instance_count || (used_mask & want) != 0 ||
                                     used_compute + p->slice_count > gpu.compute_slices)
                                   return NVML_ERROR_INSUFFICIENT_RESOURCES;
                                 GiState gi;
                                 gi.id = gi_id_for(gpu, live, *placement);
                                 gi.profile_id = profileId;
                                 gi.placement = *placement;
                                 gi.serial = s.next_serial++;
                                 live.push_back(gi);
                                 if (g().caps) g().caps->registered(gpu.minor, gi.id, std::nullopt);
                                 *gpuInstance = as_gi(gi_handle(h, gi));
                                 return NVML_SUCCESS;
                               }),
               g().latency.gi_create_ms);
}

FAKE_API nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                nvmlGpuInstance_t* gpuInstances, unsigned int* count) {
  ENTER();
  const Handle* h = nullptr;
  if (auto rc = mig_device(device, h); rc != NVML_SUCCESS) return rc;
  if (!gpuInstances || !count) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  if (!gi_profile_by_id(gpu, profileId)) return NVML_ERROR_INVALID_ARGUMENT;
  return g().store->with(false, [&](State& s) {
    unsigned n = 0;
    for (const auto& gi : s.gpus[gpu.uuid])
      if (gi.profile_id == profileId) gpuInstances[n++] = as_gi(gi_handle(h, gi));
    *count = n;
    return NVML_SUCCESS;
  });
}

FAKE_API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                   nvmlGpuInstance_t* gpuInstance) {
  ENTER();
  const Handle* h = nullptr;
  if (auto rc = mig_device(device, h); rc != NVML_SUCCESS) return rc;
  if (!gpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  return g().store->with(false, [&](State& s) {
    GiState* gi = find_gi(s, gpu_of(h), id, 0);
    if (!gi) return NVML_ERROR_NOT_FOUND;
    *gpuInstance = as_gi(gi_handle(h, *gi));
    return NVML_SUCCESS;
  });
}

namespace {
// Resolves a GI handle against the current state; a destroyed GI's handle is invalid.
template <class Fn>
nvmlReturn_t with_gi(nvmlGpuInstance_t handle, bool write, Fn&& fn) {
  const Handle* h = lookup(handle, Kind::gpu_instance);
  if (!h) return NVML_ERROR_INVALID_ARGUMENT;
  return g().store->with(write, [&](State& s) {
    GiState* gi = find_gi(s, gpu_of(h), h->gi, h->gi_serial);
    if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
    return fn(s, h, *gi);
  });
}
}  // namespace

FAKE_API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info) {
  ENTER();
  if (!info) return NVML_ERROR_INVALID_ARGUMENT;
  return with_gi(gpuInstance, false, [&](State&, const Handle* h, GiState& gi) {
    info->device = as_device(intern({Kind::device, h->gpu, 0, 0, 0, 0}));
    info->id = gi.id;
    info->profileId = gi.profile_id;
    info->placement = gi.placement;
    return NVML_SUCCESS;
  });
}

FAKE_API nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  ENTER();
  return after(with_gi(gpuInstance, true,
                       [&](State& s, const Handle* h, GiState& gi) {
                         if (!gi.cis.empty()) return NVML_ERROR_IN_USE;  // compute instances must go first
                         auto& live = s.gpus[gpu_of(h).uuid];
                         std::uint64_t serial = gi.serial;
                         if (g().caps) g().caps->unregistered(gpu_of(h).minor, gi.id, std::nullopt);
                         live.erase(std::remove_if(live.begin(), live.end(),
                                                   [&](const GiState& x) { return x.serial == serial; }),
                                    live.end());
                         return NVML_SUCCESS;
                       }),
               g().latency.gi_destroy_ms);
}

FAKE_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                   unsigned int engProfile,
                                                                   nvmlComputeInstanceProfileInfo_t* info) {
  ENTER();
  if (!info || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
      engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
    return NVML_ERROR_INVALID_ARGUMENT;
  return with_gi(gpuInstance, false, [&](State&, const Handle* h, GiState& gi) {
    const Gpu& gpu = gpu_of(h);
    const GiProfile* gp = gi_profile_by_id(gpu, gi.profile_id);
    for (const auto& c : gpu.ci_profiles) {
      if (c.index != profile) continue;
      if (!gp || c.slice_count > gp->slice_count) return NVML_ERROR_NOT_SUPPORTED;
      std::memset(info, 0, sizeof *info);
      info->id = c.id;
      info->sliceCount = c.slice_count;
      info->instanceCount = gp->slice_count / c.slice_count;
      info->multiprocessorCount = c.multiprocessor_count;
      info->sharedCopyEngineCount = gp->copy_engine_count;
      info->sharedDecoderCount = gp->decoder_count;
      info->sharedEncoderCount = gp->encoder_count;
      info->sharedJpegCount = gp->jpeg_count;
      info->sharedOfaCount = gp->ofa_count;
      return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_SUPPORTED;
  });
}

FAKE_API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                           nvmlComputeInstance_t* computeInstance) {
  ENTER();
  if (!computeInstance) return NVML_ERROR_INVALID_ARGUMENT;
  return after(
      with_gi(gpuInstance, true,
              [&](State& s, const Handle* h, GiState& gi) {
                const Gpu& gpu = gpu_of(h);
                const CiProfile* c = ci_profile_by_id(gpu, profileId);
                const GiProfile* gp = gi_profile_by_id(gpu, gi.profile_id);
                if (!c || !gp) return NVML_ERROR_INVALID_ARGUMENT;
                if (c->slice_count > gp->slice_count) return NVML_ERROR_NOT_SUPPORTED;
                unsigned used = 0;
                for (const auto& ci : gi.cis) used += ci.size;
                if (used + c->slice_count > gp->slice_count) return NVML_ERROR_INSUFFICIENT_RESOURCES;
                unsigned id = 0;
                while (std::any_of(gi.cis.begin(), gi.cis.end(), [&](const CiState& x) { return x.id == id; })) ++id;
                CiState ci{id, profileId, used, c->slice_count, s.next_serial++};
                gi.cis.push_back(ci);
                if (g().caps) g().caps->registered(gpu.minor, gi.id, id);
                *computeInstance = as_ci(intern({Kind::compute_instance, h->gpu, gi.id, id, gi.serial, ci.serial}));
                return NVML_SUCCESS;
              }),
      g().latency.ci_create_ms);
}

FAKE_API nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                         nvmlComputeInstance_t* computeInstances, unsigned int* count) {
  ENTER();
  if (!computeInstances || !count) return NVML_ERROR_INVALID_ARGUMENT;
  return with_gi(gpuInstance, false, [&](State&, const Handle* h, GiState& gi) {
    if (!ci_profile_by_id(gpu_of(h), profileId)) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0;
    for (const auto& ci : gi.cis)
      if (ci.profile_id == profileId)
        computeInstances[n++] = as_ci(intern({Kind::compute_instance, h->gpu, gi.id, ci.id, gi.serial, ci.serial}));
    *count = n;
    return NVML_SUCCESS;
  });
}

namespace {
template <class Fn>
nvmlReturn_t with_ci(nvmlComputeInstance_t handle, bool write, Fn&& fn) {
  const Handle* h = lookup(handle, Kind::compute_instance);
  if (!h) return NVML_ERROR_INVALID_ARGUMENT;
  return g().store->with(write, [&](State& s) {
    GiState* gi = find_gi(s, gpu_of(h), h->gi, h->gi_serial);
    if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
    auto it = std::find_if(gi->cis.begin(), gi->cis.end(),
                           [&](const CiState& c) { return c.id == h->ci && c.serial == h->ci_serial; });
    if (it == gi->cis.end()) return NVML_ERROR_INVALID_ARGUMENT;
    return fn(h, *gi, it);
  });
}
}  // namespace

FAKE_API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                    nvmlComputeInstanceInfo_t* info) {
  ENTER();
  if (!info) return NVML_ERROR_INVALID_ARGUMENT;
  return with_ci(computeInstance, false, [&](const Handle* h, GiState& gi, auto it) {
    info->device = as_device(intern({Kind::device, h->gpu, 0, 0, 0, 0}));
    info->gpuInstance = as_gi(intern({Kind::gpu_instance, h->gpu, gi.id, 0, gi.serial, 0}));
    info->id = it->id;
    info->profileId = it->profile_id;
    info->placement = {it->start, it->size};
    return NVML_SUCCESS;
  });
}

FAKE_API nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  ENTER();
  return after(with_ci(computeInstance, true,
                       [&](const Handle* h, GiState& gi, auto it) {
                         // nvml.h, nvmlComputeInstanceDestroy: "NVML_ERROR_IN_USE If the compute
                         // instance is in use". A process's context is what uses it.
                         if (g().contexts->held({gpu_of(h).uuid, gi.id, gi.serial})) return NVML_ERROR_IN_USE;
                         if (g().caps) g().caps->unregistered(gpu_of(h).minor, gi.id, it->id);
                         gi.cis.erase(it);
                         return NVML_SUCCESS;
                       }),
               g().latency.ci_destroy_ms);
}

FAKE_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  ENTER();
  const Handle* h = lookup(device, Kind::device);
  if (!h || !count) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  if (gpu.mig_current == Mig::unsupported) return NVML_ERROR_NOT_SUPPORTED;
  unsigned most = 0;
  for (const auto& p : gpu.gi_profiles)
    if (!p.error) most = std::max(most, p.instance_count);
  return g().store->with(false, [&](State& s) {
    *count = mig_enabled_now(s, gpu) ? most : 0;
    return NVML_SUCCESS;
  });
}

FAKE_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                          nvmlDevice_t* migDevice) {
  ENTER();
  const Handle* h = nullptr;
  if (auto rc = mig_device(device, h); rc != NVML_SUCCESS) return rc;
  if (!migDevice) return NVML_ERROR_INVALID_ARGUMENT;
  return g().store->with(false, [&](State& s) {
    auto entries = mig_devices(s, gpu_of(h));
    if (index >= entries.size()) return NVML_ERROR_NOT_FOUND;
    const auto& e = entries[index];
    *migDevice = as_device(intern({Kind::mig_device, h->gpu, e.gi->id, e.ci->id, e.gi->serial, e.ci->serial}));
    return NVML_SUCCESS;
  });
}

FAKE_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  ENTER();
  if (!id || !any_device(device)) return NVML_ERROR_INVALID_ARGUMENT;
  const Handle* h = lookup(device, Kind::mig_device);
  if (!h) return NVML_ERROR_NOT_SUPPORTED;  // a physical GPU is not a MIG device
  *id = h->gi;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  ENTER();
  if (!id || !any_device(device)) return NVML_ERROR_INVALID_ARGUMENT;
  const Handle* h = lookup(device, Kind::mig_device);
  if (!h) return NVML_ERROR_NOT_SUPPORTED;
  *id = h->ci;
  return NVML_SUCCESS;
}

/* ---- GPM: counters sampled per GPU or per MIG GPU instance (activity.h) ---- */

namespace {

// A GPM sample: the scope it was read from and the counters at that moment. Like the other
// handles, one is only dereferenced after the registry has vouched for it.
struct GpmSampleObj {
  bool filled = false;
  unsigned gpu = 0;
  int gi = -1;  // -1: the whole GPU
  std::uint64_t gi_serial = 0;
  Counters counters;
};

std::set<GpmSampleObj*>& gpm_samples() {
  static auto* samples = new std::set<GpmSampleObj*>;
  return *samples;
}

GpmSampleObj* sample_of(nvmlGpmSample_t s) {
  auto* p = reinterpret_cast<GpmSampleObj*>(s);
  return p && gpm_samples().contains(p) ? p : nullptr;
}

// GPM is answered for physical devices on GPM-capable (Hopper and newer) GPUs only.
nvmlReturn_t gpm_device(nvmlDevice_t device, const Handle*& h) {
  h = lookup(device, Kind::device);
  if (!h) return NVML_ERROR_INVALID_ARGUMENT;
  return gpu_of(h).gpm_supported ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

// The whole GPU's counters: with MIG on, each instance's weighted by its share of the SMs (compute
// slices), so an instance of 3 of 7 slices at 100 % makes the GPU 3/7 busy.
Counters whole_gpu_counters(State& s, const Gpu& gpu, std::int64_t now) {
  if (!mig_enabled_now(s, gpu)) return counters_at(s.whole_gpus[gpu.uuid], now);
  Counters sum{now, 0, 0};
  for (const auto& gi : s.gpus[gpu.uuid]) {
    const GiProfile* p = gi_profile_by_id(gpu, gi.profile_id);
    if (!p || gpu.compute_slices == 0) continue;
    double share = static_cast<double>(p->slice_count) / gpu.compute_slices;
    Counters c = counters_at(gi.activity, now);
    sum.sm_pct_ns += share * c.sm_pct_ns;
    sum.dram_pct_ns += share * c.dram_pct_ns;
  }
  return sum;
}

const char* metric_name(unsigned id, const char*& long_name, const char*& unit) {
  unit = "%";
  switch (id) {
    case NVML_GPM_METRIC_GRAPHICS_UTIL: long_name = "Graphics engine utilization"; return "gr_util";
    case NVML_GPM_METRIC_SM_UTIL: long_name = "SM utilization"; return "sm_util";
    case NVML_GPM_METRIC_DRAM_BW_UTIL: long_name = "DRAM bandwidth utilization"; return "dram_bw_util";
    default: return nullptr;
  }
}

}  // namespace

FAKE_API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* support) {
  ENTER();
  const Handle* h = lookup(device, Kind::device);
  if (!h || !support) return NVML_ERROR_INVALID_ARGUMENT;
  if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  support->isSupportedDevice = gpu_of(h).gpm_supported ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  ENTER();
  if (!sample) return NVML_ERROR_INVALID_ARGUMENT;
  auto* obj = new GpmSampleObj;
  gpm_samples().insert(obj);
  *sample = reinterpret_cast<nvmlGpmSample_t>(obj);
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  ENTER();
  GpmSampleObj* obj = sample_of(sample);
  if (!obj) return NVML_ERROR_INVALID_ARGUMENT;
  gpm_samples().erase(obj);
  delete obj;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  ENTER();
  const Handle* h = nullptr;
  if (auto rc = gpm_device(device, h); rc != NVML_SUCCESS) return rc;
  GpmSampleObj* obj = sample_of(sample);
  if (!obj) return NVML_ERROR_INVALID_ARGUMENT;
  return g().store->with(false, [&](State& s) {
    *obj = {true, h->gpu, -1, 0, whole_gpu_counters(s, gpu_of(h), monotonic_ns())};
    return NVML_SUCCESS;
  });
}

FAKE_API nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t sample) {
  ENTER();
  const Handle* h = nullptr;
  if (auto rc = gpm_device(device, h); rc != NVML_SUCCESS) return rc;
  GpmSampleObj* obj = sample_of(sample);
  if (!obj) return NVML_ERROR_INVALID_ARGUMENT;
  return g().store->with(false, [&](State& s) {
    if (!mig_enabled_now(s, gpu_of(h))) return NVML_ERROR_NOT_SUPPORTED;
    GiState* gi = find_gi(s, gpu_of(h), gpuInstanceId, 0);
    if (!gi) return NVML_ERROR_NOT_FOUND;
    *obj = {true, h->gpu, static_cast<int>(gi->id), gi->serial, counters_at(gi->activity, monotonic_ns())};
    return NVML_SUCCESS;
  });
}

// Both samples must be filled, of one scope (one GPU, or one incarnation of one GPU instance) and
// in time order; each requested metric carries its own result.
FAKE_API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* get) {
  ENTER();
  if (!get) return NVML_ERROR_INVALID_ARGUMENT;
  if (get->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (get->numMetrics > VGPU_NVML_GPM_METRICS_CAPACITY) return NVML_ERROR_INVALID_ARGUMENT;
  const GpmSampleObj* a = sample_of(get->sample1);
  const GpmSampleObj* b = sample_of(get->sample2);
  if (!a || !b || !a->filled || !b->filled || a->gpu != b->gpu || a->gi != b->gi || a->gi_serial != b->gi_serial)
    return NVML_ERROR_INVALID_ARGUMENT;
  double sm = 0, dram = 0;
  if (!mean_between(a->counters, b->counters, sm, dram)) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < get->numMetrics; ++i) {
    nvmlGpmMetric_t& m = get->metrics[i];
    const char* long_name = nullptr;
    const char* unit = nullptr;
    const char* short_name = metric_name(m.metricId, long_name, unit);
    if (!short_name) {
      m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      m.value = 0;
      continue;
    }
    m.nvmlReturn = NVML_SUCCESS;
    m.value = m.metricId == NVML_GPM_METRIC_DRAM_BW_UTIL ? dram : sm;
    m.metricInfo.shortName = const_cast<char*>(short_name);
    m.metricInfo.longName = const_cast<char*>(long_name);
    m.metricInfo.unit = const_cast<char*>(unit);
  }
  return NVML_SUCCESS;
}

// Processes with a compute context (vgpuFakeOpenComputeContext), as nvml.h documents the call: on a
// MIG device handle, that instance's; on a GPU's own handle in MIG mode, every instance's to root
// only ("aggregate information, only if the caller has appropriate privileges"); with MIG off, the
// GPU's. The fake accounts no memory per process: usedGpuMemory is 0.
FAKE_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                              nvmlProcessInfo_t* infos) {
  ENTER();
  const Handle* h = any_device(device);
  if (!h || !infoCount || (*infoCount > 0 && !infos)) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  const std::vector<Context> contexts = g().contexts->live();
  std::vector<nvmlProcessInfo_t> found;
  nvmlReturn_t rc = g().store->with(false, [&](State& s) {
    constexpr unsigned kNoId = 0xFFFFFFFF;
    const bool mig = mig_enabled_now(s, gpu);
    if (h->kind == Kind::device && mig && ::geteuid() != 0) return NVML_ERROR_NO_PERMISSION;
    if (h->kind == Kind::mig_device && !live_gi_of_mig(s, h)) return NVML_ERROR_INVALID_ARGUMENT;
    for (const auto& c : contexts) {
      if (c.scope.gpu_uuid != gpu.uuid) continue;
      const auto pid = static_cast<unsigned>(c.pid);
      if (!mig) {
        if (!c.scope.gi) found.push_back({pid, 0, kNoId, kNoId});
        continue;
      }
      if (!c.scope.gi || (h->kind == Kind::mig_device && *c.scope.gi != h->gi)) continue;
      const GiState* gi = find_gi(s, gpu, *c.scope.gi, c.scope.gi_serial);
      if (gi && !gi->cis.empty()) found.push_back({pid, 0, gi->id, gi->cis.front().id});
    }
    return NVML_SUCCESS;
  });
  if (rc != NVML_SUCCESS) return rc;
  const auto wanted = static_cast<unsigned>(found.size());
  if (*infoCount < wanted) {
    *infoCount = wanted;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(found.begin(), found.end(), infos);
  *infoCount = wanted;
  return NVML_SUCCESS;
}

/* ---- the fake's own control call (not NVML): what a test workload does to its scope ---- */

// Sets what `device` (a MIG device: its instance; a GPU without MIG: all of it) is doing from now
// on. Percentages 0..100; the memory must fit the scope.
FAKE_API nvmlReturn_t vgpuFakeSetActivity(nvmlDevice_t device, double smPercent, double dramPercent,
                                          unsigned long long memoryUsedMiB) {
  ENTER();
  const Handle* h = any_device(device);
  if (!h || !(smPercent >= 0 && smPercent <= 100) || !(dramPercent >= 0 && dramPercent <= 100))
    return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  return g().store->with(true, [&](State& s) {
    std::int64_t now = monotonic_ns();
    if (h->kind == Kind::mig_device) {
      GiState* gi = find_gi(s, gpu, h->gi, h->gi_serial);
      if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
      const GiProfile* p = gi_profile_by_id(gpu, gi->profile_id);
      if (!p || memoryUsedMiB > p->memory_size_mib) return NVML_ERROR_INVALID_ARGUMENT;
      set_activity(gi->activity, smPercent, dramPercent, memoryUsedMiB, now);
      return NVML_SUCCESS;
    }
    // With MIG on, the work runs in instances, not on the bare GPU.
    if (mig_enabled_now(s, gpu) || memoryUsedMiB > gpu.memory_mib) return NVML_ERROR_INVALID_ARGUMENT;
    set_activity(s.whole_gpus[gpu.uuid], smPercent, dramPercent, memoryUsedMiB, now);
    return NVML_SUCCESS;
  });
}

// The calling process holds a compute context on `device` (a MIG device, or a GPU with MIG off)
// from now until it exits, as a CUDA program does once it touched the device. Any user may: the
// record is the process's own (contexts.h), not the state file.
FAKE_API nvmlReturn_t vgpuFakeOpenComputeContext(nvmlDevice_t device) {
  ENTER();
  const Handle* h = any_device(device);
  if (!h) return NVML_ERROR_INVALID_ARGUMENT;
  const Gpu& gpu = gpu_of(h);
  ContextScope scope{gpu.uuid, std::nullopt, 0};
  nvmlReturn_t rc = g().store->with(false, [&](State& s) {
    if (h->kind == Kind::mig_device) {
      const GiState* gi = live_gi_of_mig(s, h);
      if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
      scope.gi = gi->id;
      scope.gi_serial = gi->serial;
      return NVML_SUCCESS;
    }
    // With MIG on, the work runs in instances.
    return mig_enabled_now(s, gpu) ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
  });
  if (rc != NVML_SUCCESS) return rc;
  std::string error;
  if (!g().contexts->open(::getpid(), scope, error)) {
    std::fprintf(stderr, "fake-nvml: %s\n", error.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  return NVML_SUCCESS;
}
