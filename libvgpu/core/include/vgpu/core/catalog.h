// What each MIG-capable GPU model can hold: its GPU-instance profiles and their legal placements.
// The built-in tables follow NVIDIA's public MIG user guide; on real hardware the backend reads the
// same facts from NVML and compare_models() reports any field that differs.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu {

// A contiguous range of memory slices, as NVML's nvmlGpuInstancePlacement_t {start, size}.
struct Placement {
  int start = 0;
  int size = 0;
  [[nodiscard]] int end() const { return start + size; }
  [[nodiscard]] std::uint32_t mask() const { return ((1u << size) - 1u) << start; }
  auto operator<=>(const Placement&) const = default;
};

struct Profile {
  std::string name;             // "3g.40gb", "1g.10gb+me"
  int nvml_profile_id = 0;      // nvmlGpuInstanceProfileInfo_t.id, as `nvidia-smi mig -lgip` shows it
  int nvml_profile_index = 0;   // NVML_GPU_INSTANCE_PROFILE_* passed to nvmlDeviceGetGpuInstanceProfileInfo
  int compute_slices = 0;
  int memory_slices = 0;
  int sm_count = 0;
  int memory_mib = 0;
  int max_instances = 0;
  std::vector<Placement> placements;  // every legal {start,size}, ascending by start
  bool operator==(const Profile&) const = default;
};

struct GpuModel {
  std::string name;                      // short, stable: "H100-80GB"
  std::vector<std::string> nvml_names;   // nvmlDeviceGetName() spellings that map here
  int compute_slices = 0;                // 7 on A100/H100/H200, 4 on A30
  int memory_slices = 0;                 // 8 on A100/H100/H200, 4 on A30
  int sm_count = 0;
  int memory_mib = 0;
  std::vector<Profile> profiles;         // largest first is NOT assumed; use helpers below

  [[nodiscard]] const Profile* find_profile(std::string_view profile_name) const;
  [[nodiscard]] const Profile* find_profile_by_nvml_id(int nvml_profile_id) const;
  // Profile names joined with ", " for error messages that list what is valid.
  [[nodiscard]] std::string profile_names() const;
};

class Catalog {
 public:
  explicit Catalog(std::vector<GpuModel> models) : models_(std::move(models)) {}
  static const Catalog& builtin();

  [[nodiscard]] std::span<const GpuModel> models() const { return models_; }
  [[nodiscard]] const GpuModel* find_model(std::string_view name) const;
  // Matches a model by its short name or any NVML product name ("NVIDIA H100 80GB HBM3").
  [[nodiscard]] const GpuModel* find_model_for_product(std::string_view product) const;
  [[nodiscard]] Result<const GpuModel*> require_model(std::string_view name) const;
  [[nodiscard]] Result<const Profile*> require_profile(const GpuModel& model,
                                                       std::string_view profile_name) const;
  [[nodiscard]] std::string model_names() const;

 private:
  std::vector<GpuModel> models_;
};

// Field-by-field differences between two descriptions of the same model (built-in vs. read from
// NVML). Empty means identical. Each entry names the profile and field: "3g.40gb: memory_mib 40448 != 40192".
std::vector<std::string> compare_models(const GpuModel& expected, const GpuModel& actual);

// A profile name is <compute>g.<memory>gb with an optional "+me"/"+gfx" suffix. This validates the
// spelling only (not whether a model has it) and is the one parser for user-supplied profile text.
Result<std::string> parse_profile_name(std::string_view text);

}  // namespace vgpu
