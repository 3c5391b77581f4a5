// Built-in partition tables. NVIDIA MIG Sources: NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles"
// (fractions of memory/SMs, instance counts, placement diagrams) and its `nvidia-smi mig -lgip` /
// `-lgipp` listings (profile IDs, SM counts, memory in GiB with two decimals, placements).
// memory_mib is the listed GiB x 1024. H200-141GB is what a real H200's NVML answered
// (docs/hardware/h200, driver 580.159.04): the guide prints no listing for it, and the fraction
// rule below was off by up to 3 GiB. For H100-94GB, still without a capture, memory is the
// profile's memory fraction of the usable framebuffer, rounded down to 256 MiB like the published
// values; the backend's compare_models() against NVML is the arbiter on real hardware.
#include "catalog_tables.h"

#include <fmt/format.h>

namespace vgpu::detail {
namespace {

// NVML_GPU_INSTANCE_PROFILE_* values (nvml.h).
constexpr int kSlice1 = 0, kSlice2 = 1, kSlice3 = 2, kSlice4 = 3, kSlice7 = 4, kSlice1Rev1 = 7, kSlice2Rev1 = 8,
              kSlice1Rev2 = 9;

std::vector<Placement> every(int count, int step, int size) {
  std::vector<Placement> out;
  for (int i = 0; i < count; ++i) out.push_back({i * step, size});
  return out;
}

// The seven-compute-slice, eight-memory-slice family (A100, H100, H200) shares its geometry.
struct SevenSliceSizes {
  const char* g1;    // 1g.<g1>gb
  const char* g1x2;  // 1g.<2 mem slices>gb
  const char* g2;    // 2g.*
  const char* g3;    // 3g.*
  const char* g4;    // 4g.*
  const char* g7;    // 7g.*
  int mib_1slice, mib_2slice, mib_4slice, mib_full;
  int sm_1g, sm_1g_2slice, sm_2g, sm_3g, sm_4g, sm_7g;
};

std::vector<Profile> seven_slice_profiles(const SevenSliceSizes& s) {
  auto name = [](const char* c, const char* m) { return std::string(c) + "." + m + "gb"; };
  return {
      {name("1g", s.g1), 19, kSlice1, 1, 1, s.sm_1g, s.mib_1slice, 7, every(7, 1, 1), ""},
      {name("1g", s.g1) + "+me", 20, kSlice1Rev1, 1, 1, s.sm_1g, s.mib_1slice, 1, every(7, 1, 1), ""},
      {name("1g", s.g1x2), 15, kSlice1Rev2, 1, 2, s.sm_1g_2slice, s.mib_2slice, 4, every(4, 2, 2), ""},
      {name("2g", s.g2), 14, kSlice2, 2, 2, s.sm_2g, s.mib_2slice, 3, every(3, 2, 2), ""},
      {name("3g", s.g3), 9, kSlice3, 3, 4, s.sm_3g, s.mib_4slice, 2, every(2, 4, 4), ""},
      {name("4g", s.g4), 5, kSlice4, 4, 4, s.sm_4g, s.mib_4slice, 1, every(1, 4, 4), ""},
      {name("7g", s.g7), 0, kSlice7, 7, 8, s.sm_7g, s.mib_full, 1, every(1, 8, 8), ""},
  };
}

// The whole GPU with MIG off, as one more profile of the model's geometry: it spans every slice, so
// the layout rules keep it apart from any MIG instance. Its memory is the framebuffer NVML reports
// with MIG off (nvmlDeviceGetMemoryInfo's total), the model's memory_mib.
GpuModel with_whole_gpu(GpuModel model, std::string_view memory_gb) {
  Profile whole{fmt::format("whole.{}gb", memory_gb),
                kWholeGpuProfileId,
                kWholeGpuProfileId,
                model.compute_slices,
                model.memory_slices,
                model.sm_count,
                model.memory_mib,
                1,
                {{0, model.memory_slices}},
                ""};
  whole.whole_gpu = true;
  model.profiles.push_back(std::move(whole));
  return model;
}

GpuModel seven_slice_model(std::string short_name, std::vector<std::string> nvml_names, int sm, int memory_mib,
                           const SevenSliceSizes& sizes) {
  return with_whole_gpu(GpuModel{std::move(short_name), std::move(nvml_names), 7, 8, sm, memory_mib,
                                 seven_slice_profiles(sizes), "nvidia", Partitioning::mig},
                        sizes.g7);
}

// A GPU without MIG: one compute and one memory slice, its whole GPU the only profile. Memory is the
// framebuffer NVML reports (nvmlDeviceGetMemoryInfo's total, `nvidia-smi`'s memory.total), SMs are
// the datasheet's CUDA cores over the architecture's cores per SM (128 on Ampere GA10x and Ada, 64
// on Volta). Each entry cites where its numbers were read.
GpuModel whole_only_model(std::string short_name, std::vector<std::string> nvml_names, int sm, int memory_mib,
                          std::string_view memory_gb) {
  return with_whole_gpu(
      GpuModel{std::move(short_name), std::move(nvml_names), 1, 1, sm, memory_mib, {}, "nvidia", Partitioning::none},
      memory_gb);
}

// AMD Instinct MI300X/MI325X: 8 XCDs of 38 CUs (sm_count holds CUs), one compute-partition mode
// per GPU. Memory is the memory partition's even share per partition, as the driver caps it by
// default (amdgpu_amdkfd_xcp_memory_size, CAPPING mode), in NPS1, the only memory mode this
// catalog assumes (docs/backends.md). TPX needs 6 XCDs and is not offered on these models.
GpuModel instinct_model(std::string short_name, std::vector<std::string> product_names, int total_gb) {
  constexpr int kXcds = 8, kCusPerXcd = 38;
  auto mode = [&](const char* name, AmdPartitionMode id, int xcds) {
    const int count = kXcds / xcds;
    return Profile{fmt::format("{}.{}gb", name, total_gb / count),
                   static_cast<int>(id),
                   static_cast<int>(id),
                   xcds,
                   xcds,
                   xcds * kCusPerXcd,
                   total_gb * 1024 / count,
                   count,
                   every(count, xcds, xcds),
                   ""};
  };
  return GpuModel{std::move(short_name),
                  std::move(product_names),
                  kXcds,
                  kXcds,
                  kXcds * kCusPerXcd,
                  total_gb * 1024,
                  {mode("cpx", AmdPartitionMode::cpx, 1), mode("qpx", AmdPartitionMode::qpx, 2),
                   mode("dpx", AmdPartitionMode::dpx, 4), mode("spx", AmdPartitionMode::spx, 8)},
                  "amd",
                  Partitioning::uniform};
}

}  // namespace

std::vector<GpuModel> builtin_models() {
  std::vector<GpuModel> models;
  models.push_back(
      seven_slice_model("A100-40GB", {"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "NVIDIA A100 40GB PCIe"}, 108,
                        40960, {"5", "10", "10", "20", "20", "40", 4864, 9856, 20096, 40448, 14, 14, 28, 42, 56, 98}));
  models.push_back(seven_slice_model(
      "A100-80GB", {"NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB"}, 108, 81920,
      {"10", "20", "20", "40", "40", "80", 9728, 19968, 40192, 81152, 14, 14, 28, 42, 56, 98}));
  models.push_back(
      seven_slice_model("H100-80GB", {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100"}, 132, 81559,
                        {"10", "20", "20", "40", "40", "80", 9984, 20096, 40448, 81152, 16, 26, 32, 60, 64, 132}));
  models.push_back(
      seven_slice_model("H100-94GB", {"NVIDIA H100 NVL", "NVIDIA H100 94GB HBM3"}, 132, 95830,
                        {"12", "24", "24", "47", "47", "94", 11264, 22784, 46848, 93696, 16, 26, 32, 60, 64, 132}));
  models.push_back(
      seven_slice_model("H200-141GB", {"NVIDIA H200", "NVIDIA H200 NVL"}, 132, 143771,
                        {"18", "35", "35", "71", "71", "141", 16384, 33280, 71424, 143360, 16, 26, 32, 60, 64, 132}));

  // A30: four compute and four memory slices; media extensions on 1g and 2g.
  models.push_back(with_whole_gpu(GpuModel{"A30-24GB",
                                           {"NVIDIA A30"},
                                           4,
                                           4,
                                           56,
                                           24576,
                                           {
                                               {"1g.6gb", 14, kSlice1, 1, 1, 14, 5952, 4, every(4, 1, 1), ""},
                                               {"1g.6gb+me", 21, kSlice1Rev1, 1, 1, 14, 5952, 1, every(4, 1, 1), ""},
                                               {"2g.12gb", 5, kSlice2, 2, 2, 28, 12032, 2, every(2, 2, 2), ""},
                                               {"2g.12gb+me", 6, kSlice2Rev1, 2, 2, 28, 12032, 1, every(2, 2, 2), ""},
                                               {"4g.24gb", 0, kSlice4, 4, 4, 56, 24192, 1, every(1, 4, 4), ""},
                                           },
                                           "nvidia",
                                           Partitioning::mig},
                                  "24"));

  for (auto& m : models)
    if (m.name.starts_with("A100-") || m.name.starts_with("A30-")) m.mig_switch_needs_reset = true;

  // GPUs without MIG. Memory, as nvidia-smi printed it on real cards: L40S 46068 MiB
  // (akash-network/provider-configs#99, driver 595.71.05; modal-labs/modal-client#2797), L4 23034 MiB
  // and A10 23028 MiB (modal-labs/modal-client#2797; A10: 24,146,608,128 bytes through NVML in
  // mayooot/detect-gpu#3), V100-SXM2-16GB 16160 MiB (4paradigm/k8s-vgpu-scheduler#7). SMs: L40S
  // 18,176 CUDA cores (NVIDIA L40S datasheet), L4 7,424 (L4 datasheet), A10 9,216 (A10 datasheet),
  // V100 80 SMs (NVIDIA Tesla V100 whitepaper). Not here for want of a recorded memory total: A40,
  // RTX 6000 Ada, V100 32GB (docs/backends.md).
  models.push_back(whole_only_model("L40S-48GB", {"NVIDIA L40S"}, 142, 46068, "48"));
  models.push_back(whole_only_model("L4-24GB", {"NVIDIA L4"}, 58, 23034, "24"));
  models.push_back(whole_only_model("A10-24GB", {"NVIDIA A10"}, 72, 23028, "24"));
  models.push_back(whole_only_model("V100-16GB", {"Tesla V100-SXM2-16GB"}, 80, 16160, "16"));

  models.push_back(instinct_model("MI300X-192GB", {"AMD Instinct MI300X", "AMD Instinct MI300X OAM"}, 192));
  models.push_back(instinct_model("MI325X-256GB", {"AMD Instinct MI325X", "AMD Instinct MI325X OAM"}, 256));
  return models;
}

}  // namespace vgpu::detail
