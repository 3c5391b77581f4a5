// Instances the fake has "created", shared by every process that loads the fake (prolog, epilog,
// slurmd, the job): a JSON state file under flock, re-read on every call so each process sees the
// others' changes at once, as it would with the real driver.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "activity.h"
#include "nvml_abi.h"

namespace fakenvml {

struct CiState {
  unsigned id = 0, profile_id = 0, start = 0, size = 0;
  std::uint64_t serial = 0;  // distinguishes a re-created instance with the same id
};

struct GiState {
  unsigned id = 0, profile_id = 0;
  nvmlGpuInstancePlacement_t placement{};
  std::uint64_t serial = 0;
  std::vector<CiState> cis;
  Activity activity;  // zero when created, gone with the instance
};

// A GPU's MIG mode once nvmlDeviceSetMigMode changed it (NVML_DEVICE_MIG_DISABLE/_ENABLE); a GPU
// without an entry is in its fixture's mode.
struct MigModeState {
  unsigned current = 0, pending = 0;
};

struct State {
  std::uint64_t next_serial = 1;
  std::map<std::string, MigModeState> mig_modes;     // GPU uuid -> mode set through the fake
  std::map<std::string, std::vector<GiState>> gpus;  // GPU uuid -> its GPU instances
  std::map<std::string, Activity> whole_gpus;        // GPU uuid -> activity while MIG is off
};

class StateStore {
 public:
  // An empty path keeps the state in this process only.
  explicit StateStore(std::string path) : path_(std::move(path)) {}

  // Runs `fn` on the current state under a shared (read) or exclusive (write) lock. After a
  // write whose `fn` returned NVML_SUCCESS the state is written back before the lock is dropped.
  nvmlReturn_t with(bool write, const std::function<nvmlReturn_t(State&)>& fn);

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  State memory_;
  // The last text this process read or wrote and its parse: most calls find the file unchanged,
  // and parsing it on every call made the fake, not the product, a large part of each hook's CPU
  // (a real driver answers from kernel memory).
  std::string cached_text_;
  State cached_state_;
};

std::string state_to_text(const State& state);

}  // namespace fakenvml
