// What each partitionable GPU model can hold: its profiles and their legal placements. NVIDIA MIG
// models follow NVIDIA's public MIG user guide (on real hardware the backend reads the same facts
// from NVML and compare_models() reports any field that differs); AMD Instinct compute partitions
// follow AMD's partitioning documentation (docs/backends.md says which facts come from where).
//
// One geometry serves both vendors: a GPU has compute and memory slices, and a profile occupies a
// contiguous range of memory slices. On an AMD Instinct GPU a slice is an XCD (accelerator die)
// and the profile is a compute-partition mode; what differs is the rule in Partitioning.
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

// No NVML GPU-instance profile has this id (theirs are below 64): the whole GPU's.
inline constexpr int kWholeGpuProfileId = 1000;

struct Profile {
  std::string name;  // "3g.40gb", "1g.10gb+me"; "cpx.24gb" for an AMD partition mode
  // The backend's id of the profile: nvmlGpuInstanceProfileInfo_t.id, as `nvidia-smi mig -lgip`
  // shows it; on AMD the compute-partition mode (AmdPartitionMode); kWholeGpuProfileId for the
  // whole GPU, which NVML has no profile for.
  int nvml_profile_id = 0;
  int nvml_profile_index = 0;  // NVML_GPU_INSTANCE_PROFILE_* passed to nvmlDeviceGetGpuInstanceProfileInfo
  int compute_slices = 0;
  int memory_slices = 0;
  int sm_count = 0;
  int memory_mib = 0;
  int max_instances = 0;
  std::vector<Placement> placements;  // every legal {start,size}, ascending by start
  // Empty for a profile of the hardware. For a class (a request by need, GpuClass) realized on a
  // model: the hardware profile it is, whose fields it copies under the class's name.
  std::string realizes;
  // For a share type realized on a model: how many jobs share one instance of `realizes` through
  // CUDA MPS (docs/shared-instances.md). 0 for a profile or class a job holds whole.
  int shares = 0;
  // The whole GPU with MIG off ("whole.80gb"): every slice, full NVLink and P2P, nothing to create.
  // It exists exactly while the GPU's MIG mode is off (GpuMode), and a MIG profile exactly while on.
  bool whole_gpu = false;
  bool operator==(const Profile&) const = default;

  [[nodiscard]] const std::string& hardware_name() const { return realizes.empty() ? name : realizes; }
};

// A GRES type the site defines, the same name on every model, realized per model as a catalog
// profile of that name (Catalog::with_classes):
// - a class, a request by need: "small" = at least 10 GB and 1/8 of a GPU's compute. Each model
//   realizes it as its smallest profile that satisfies both (realize());
// - a share type (shares > 0): one of `shares` equal parts of an instance, which is either a
//   hardware profile (`profile`, exact) or the smallest one meeting the same needs as a class's.
struct GpuClass {
  std::string name;
  int min_memory_gb = 0;              // as profile names state memory ("1g.10gb": 10)
  double min_compute_fraction = 0.0;  // of the whole GPU's compute slices
  std::string profile;                // a hardware profile name; empty: by the needs above
  int shares = 0;                     // 0: a class, held whole
  bool operator==(const GpuClass&) const = default;
};

// How instances of one GPU relate to each other.
enum class Partitioning {
  // NVIDIA MIG: any mix of profiles whose placements do not overlap; each instance is created and
  // destroyed on its own.
  mig,
  // AMD Instinct compute partitions: the GPU runs in one mode at a time (SPX, DPX, QPX, CPX), so
  // every partition on it has the same profile; the mode's partitions all exist while it is set,
  // and the mode changes only while no partition is in use.
  uniform,
  // A GPU without MIG (L40S, L4, A10, V100): the whole GPU is its one instance, nothing to create,
  // and NVML answers NOT_SUPPORTED for its MIG mode.
  none,
};
std::string_view to_string(Partitioning p);

// AMD compute-partition modes, in the driver's order (amdgpu_gfx_partition); used as the backend
// profile id of AMD profiles.
enum class AmdPartitionMode { spx = 0, dpx = 1, tpx = 2, qpx = 3, cpx = 4 };

struct GpuModel {
  std::string name;                     // short, stable: "H100-80GB"
  std::vector<std::string> nvml_names;  // nvmlDeviceGetName() spellings that map here
  int compute_slices = 0;               // 7 on A100/H100/H200, 4 on A30
  int memory_slices = 0;                // 8 on A100/H100/H200, 4 on A30
  int sm_count = 0;
  int memory_mib = 0;
  std::vector<Profile> profiles;  // largest first is NOT assumed; use helpers below
  std::string vendor = "nvidia";  // "nvidia" or "amd": which backend drives it
  Partitioning partitioning = Partitioning::mig;
  // Whether a new MIG mode takes effect only at a GPU reset: Ampere (A100, A30). MIG user guide,
  // "Deployment Considerations": "Setting MIG mode on the A100/A30 requires a GPU reset". Hopper
  // and newer switch without one once idle (docs/backends.md, "MIG mode").
  bool mig_switch_needs_reset = false;

  [[nodiscard]] const Profile* find_profile(std::string_view profile_name) const;
  [[nodiscard]] const Profile* find_profile_by_nvml_id(int nvml_profile_id) const;
  // The profile of the whole GPU with MIG off, or nullptr on a model without one (AMD: its SPX mode
  // is already the whole GPU).
  [[nodiscard]] const Profile* whole_gpu_profile() const;
  // Profile names joined with ", " for error messages that list what is valid.
  [[nodiscard]] std::string profile_names() const;
};

class Catalog {
 public:
  explicit Catalog(std::vector<GpuModel> models) : models_(std::move(models)) {}
  // The built-in tables, plus the site's classes once the program installed them from its policy.
  static const Catalog& builtin();
  // Adds `classes` to what builtin() returns, for the rest of the process. Called once, at start,
  // before any profile of builtin() is looked up (pointers into it must stay valid).
  static void install_classes(std::vector<GpuClass> classes);
  // `base` with each class added to every model that can realize it.
  static Catalog with_classes(const Catalog& base, std::span<const GpuClass> classes);

  [[nodiscard]] std::span<const GpuModel> models() const { return models_; }
  [[nodiscard]] const GpuModel* find_model(std::string_view name) const;
  // Matches a model by its short name or any NVML product name ("NVIDIA H100 80GB HBM3").
  [[nodiscard]] const GpuModel* find_model_for_product(std::string_view product) const;
  [[nodiscard]] Result<const GpuModel*> require_model(std::string_view name) const;
  [[nodiscard]] Result<const Profile*> require_profile(const GpuModel& model, std::string_view profile_name) const;
  [[nodiscard]] std::string model_names() const;

 private:
  std::vector<GpuModel> models_;
};

// The hardware profile `gpu_class` names, if it names one and `model` has it; otherwise the
// smallest hardware profile of `model` (fewest compute slices, then least memory) with at least the
// class's memory and compute share, media/graphics variants ("+me", "+gfx") never. nullptr when
// none does. A share type is realized only where its instance splits into its shares
// (share_limits, vgpu/core/shared_instance.h).
const Profile* realize(const GpuModel& model, const GpuClass& gpu_class);

// Field-by-field differences between two descriptions of the same model (built-in vs. read from
// NVML). Empty means identical. Each entry names the profile and field: "3g.40gb: memory_mib 40448 != 40192".
std::vector<std::string> compare_models(const GpuModel& expected, const GpuModel& actual);

// A profile name is <compute>g.<memory>gb with an optional "+me"/"+gfx" suffix (NVIDIA MIG),
// <mode>.<memory>gb with mode spx, dpx, tpx, qpx or cpx (AMD compute partitions), or
// whole.<memory>gb (a whole NVIDIA GPU with MIG off). This validates the spelling only (not whether
// a model has it) and is the one parser for user-supplied profile text.
Result<std::string> parse_profile_name(std::string_view text);
// Whether a (well-spelled) profile name is a whole GPU's: for readers that see a name without its
// model, such as a device-access adapter handed one instance.
[[nodiscard]] inline bool names_whole_gpu(std::string_view profile) { return profile.starts_with("whole."); }

}  // namespace vgpu
