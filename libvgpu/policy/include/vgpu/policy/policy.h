// Admin policy files: one JSON file per cluster (or partition set) that steers slurm-vgpu per
// Slurm partition: which MIG profiles may be asked for, per-job/per-user limits, which nodes and
// GPUs take part, the idle layout to fall back to, scrubbing, and viz (VM) pools.
//
// Parsing is strict and exhaustive: an unknown field, a wrong type or a bad value is an error
// naming file:line:column and the field path, and every error in the file is found at once (the
// first kMaxPolicyDiagnostics are kept, the rest counted). The schema, as admins read it, is
// docs/policy.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/core/catalog.h"
#include "vgpu/base/error.h"
#include "vgpu/core/planner.h"
#include "vgpu/policy/policy_hostlist.h"

namespace vgpu {

inline constexpr int kPolicyVersion = 1;

// A real policy is a few KB with a handful of mistakes; these caps keep a careless or hostile file
// (a generated million-element list) from costing a node or an admin's terminal much:
// - a file larger than kMaxPolicyBytes is refused before it is read;
// - a check keeps the first kMaxPolicyDiagnostics errors it finds, with their messages, and only
//   counts the rest, so its time and memory do not grow with the number of errors.
inline constexpr std::uint64_t kMaxPolicyBytes = 4u << 20;
inline constexpr std::size_t kMaxPolicyDiagnostics = 20;

struct PlannerKnobs {
  int period_s = 5;        // how often each node re-plans its advertisement
  int starvation_s = 120;  // pending this long, a request may reserve a GPU to drain for it
  // With nothing pending for it, a node keeps the layout it last planned for demand this long before
  // it goes back to its idle layout: in a stream of jobs, a node prepared for a job that started
  // elsewhere likely fits the next one, and every move costs slurmctld a handover (two on a
  // reshape) and its confirmation. 0: back at once.
  int idle_return_s = 60;
  // Create an instance, idle, in every planned slot nobody holds, so a job's prolog only claims
  // it: a create (seconds on a real H100) leaves the job's way to its first command. Off by
  // default: instances then stand on GPUs no job uses (docs/policy.md says what that costs).
  bool prepare_slots = false;
  // Node weights the planner gives its node in slurmctld (`scontrol update Weight=`). Slurm fills
  // the lightest nodes first. One of two forms:
  // - by use: `in_use` while Slurm has any vgpu of the node allocated, `idle` otherwise
  //   (in_use < idle), so small jobs pack onto nodes already in use and idle nodes stay whole;
  // - by free capacity (per_free_gpu > 0): `base` + `per_free_gpu` x the node's free GPU capacity
  //   in GPUs (node/gpu_use.h), so Slurm tries the fullest nodes first: a best fit on GPUs where
  //   Slurm's own choice best-fits CPUs.
  // Absent: the planner never touches a node's weight.
  struct NodeWeights {
    int in_use = 0;
    int idle = 0;
    int base = 0;
    int per_free_gpu = 0;
    [[nodiscard]] bool by_free_capacity() const { return per_free_gpu > 0; }
  };
  // The most GPUs the free-capacity form assumes a node has, for its bound on base + per_free_gpu.
  static constexpr int kMaxGpusPerNode = 64;
  std::optional<NodeWeights> node_weights;
  // The planner tags its node with Slurm features (vgpu/contract/node_features.h): "in use" while
  // any vgpu of it is allocated, "partly used GPU" while a GPU is held in part, "no idle GPU"
  // while every GPU has a job's instance, for the submit filter's per-job preferences (parts of
  // GPUs fill split GPUs, other GPU jobs pack, CPU-only jobs spare idle GPUs' CPUs). slurm.conf
  // must declare all three on a FUTURE node (docs/admin.md).
  bool node_features = false;
};

// A bootable VM image for viz sessions.
struct VmImage {
  std::string name;
  std::string kernel;  // absolute paths without ".." components
  std::string initrd;
  std::optional<std::string> cmdline;
  std::optional<std::string> disk;
};

enum class VizAttach { mdev, sriov_vf, mig_vgpu, passthrough, none };
enum class VizDisplay { vnc, spice };
std::string_view to_string(VizAttach attach);  // as spelled in the file: "sriov-vf"
std::string_view to_string(VizDisplay display);

struct Geometry {
  int width = 0;
  int height = 0;
};

// A pool of viz VMs; users ask for one with --gres=vgpu:<name>:1.
struct VizPool {
  std::string name;
  std::string partition;  // the partition whose viz_pools list holds it
  VizAttach attach = VizAttach::none;
  std::string gpu_type;  // mdev type id, vGPU type name or MIG profile; empty for attach none
  std::string image;     // key of PolicyFile::images
  int memory_mib = 0;
  int vcpus = 0;
  int max_sessions = 0;
  VizDisplay display = VizDisplay::vnc;
  std::optional<Geometry> max_geometry;
};

enum class ScrubMode { required, optional };
std::string_view to_string(ScrubMode mode);

// What the planner may do with the MIG mode of a partition's GPUs (docs/policy.md, "mig_mode").
enum class MigModePolicy {
  as_found,     // never switched: a GPU serves in the mode the node was booted with
  partitioned,  // MIG turned on where it is found off, once nothing uses the GPU (Hopper and newer)
  whole,        // MIG turned off where it is found on, once nothing uses the GPU: served whole
  on_demand,    // either, per GPU, as pending jobs ask (vgpu/node/mig_mode_on_demand.h)
};
std::string_view to_string(MigModePolicy mode);

struct PartitionPolicy {
  // How the file stated the allowed profiles.
  enum class ProfileRule {
    every_profile,         // "profiles" absent: every profile of every model
    same_for_every_model,  // a list: those names, on every model that has them
    per_model,             // an object keyed by model: only the models named, each its own list
  };

  std::string name;
  ProfileRule profile_rule = ProfileRule::every_profile;
  std::vector<std::string> profiles;                                  // same_for_every_model
  std::map<std::string, std::vector<std::string>> profiles_by_model;  // per_model
  std::optional<int> max_instances_per_job;
  std::optional<int> max_instances_per_user;
  std::optional<Hostlist> nodes;         // nullopt: every node of the partition
  std::optional<std::vector<int>> gpus;  // nullopt: every GPU ("all")
  std::vector<std::string> idle_layout;
  ScrubMode scrub = ScrubMode::required;
  MigModePolicy mig_mode = MigModePolicy::as_found;
  // Whether jobs of different users may hold shares of one instance (its MPS server serves one
  // Linux user at a time: docs/shared-instances.md). Off: one user per shared instance.
  bool share_across_users = false;
  std::vector<VizPool> viz_pools;

  // Allowed profile names on `model`, in the catalog's order. Empty: the partition does not use
  // GPUs of this model at all. Share types only where "profiles" names them: a partition without
  // the field gives whole instances. The whole GPU with MIG off (whole.<M>gb) is a profile like the
  // others: offered where "profiles" is absent or names it.
  [[nodiscard]] std::vector<std::string> allowed_profiles_for(const GpuModel& model) const;
  [[nodiscard]] bool uses_model(const GpuModel& model) const { return !allowed_profiles_for(model).empty(); }
  [[nodiscard]] bool allows_node(std::string_view node_name) const;
  [[nodiscard]] bool allows_gpu(int index) const;
  [[nodiscard]] const VizPool* find_viz_pool(std::string_view pool_name) const;
  // What the planner needs for one GPU model; an error when the partition does not use it
  // (the planner reads an empty allow-list as "everything", so that case must not reach it).
  [[nodiscard]] Result<PlannerConfig> planner_config_for(const GpuModel& model) const;
};

struct PolicyFile {
  int version = kPolicyVersion;
  std::string source;  // the file label errors were reported against
  PlannerKnobs planner;
  std::map<std::string, VmImage> images;
  // Requests by need ("classes": {"small": {...}}), the same names on every model; each node
  // realizes them on its model (Catalog::with_classes). Sorted by name.
  std::vector<GpuClass> classes;
  // Parts of an instance ("share_types": {"quarter": {"instance": "3g.40gb", "shares": 4}}), each
  // a GpuClass with shares > 0, realized per model like a class. Sorted by name.
  std::vector<GpuClass> share_types;
  std::vector<PartitionPolicy> partitions;  // sorted by name

  // The GRES types the site defines: the classes, then the share types. What the catalog adds to
  // its profiles (Catalog::with_classes) and the node's ledger keeps (sync_classes).
  [[nodiscard]] std::vector<GpuClass> site_types() const;
  [[nodiscard]] const PartitionPolicy* partition(std::string_view name) const;
  [[nodiscard]] const VizPool* find_viz_pool(std::string_view pool_name) const;
  [[nodiscard]] const VmImage* image(std::string_view name) const;
};

// One problem found in a policy file. line 0: not tied to a position (e.g. the file is unreadable).
struct PolicyDiagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;  // "partitions.infer.max_instances_per_job"; empty for syntax errors
  std::string message;
  // "policy.json:14:23: partitions.infer.max_instances_per_job: must be an integer >= 1, got \"four\""
  [[nodiscard]] std::string to_string() const;
};

struct PolicyCheck {
  std::optional<PolicyFile> policy;  // set exactly when diagnostics is empty
  // The first kMaxPolicyDiagnostics errors found, in file order.
  std::vector<PolicyDiagnostic> diagnostics;
  std::size_t unlisted = 0;  // errors found past those, counted only
  bool io_error = false;     // the file could not be read at all
  [[nodiscard]] bool ok() const { return diagnostics.empty(); }
  [[nodiscard]] std::size_t error_count() const { return diagnostics.size() + unlisted; }
  // "... and 999980 more errors"; empty when every error is listed.
  [[nodiscard]] std::string unlisted_line() const;
};

// Every error, with positions, for tools that show them (vgpuctl policy check).
PolicyCheck check_policy(std::string_view text, std::string_view file_label);
// Reads the file as contract::read_guarded does (no symlink, FIFO or other non-regular file, owned
// by root or the caller, not group/other-writable, at most kMaxPolicyBytes); a refusal is one
// io_error diagnostic at line 0: "<path>: cannot read: refused: a symbolic link (never followed)".
PolicyCheck check_policy_file(const std::string& path);

// The same as a Result: on failure the message holds the listed diagnostics, one per line, then
// unlisted_line() when some were only counted.
Result<PolicyFile> parse_policy(std::string_view text, std::string_view file_label);
Result<PolicyFile> load_policy_file(const std::string& path);

// Whether a job may ask `partition` for `count` instances of `profile` on a `model` GPU. The
// error explains every violation (and lists what is allowed); the submit filter and the prolog
// call this.
Result<void> validate_request(const PartitionPolicy& partition, const GpuModel& model, std::string_view profile,
                              int count);

// The idle layout as the planner would place it on an empty GPU of `model`; an error names the
// entry that does not fit.
Result<GpuLayout> place_idle_layout(const PartitionPolicy& partition, const GpuModel& model);

// For humans: partitions, profiles per model, limits, nodes, idle layouts drawn, viz pools.
std::string summary(const PolicyFile& policy);
// The parsed policy as JSON text (vgpuctl policy check --json).
std::string summary_json(const PolicyFile& policy);

}  // namespace vgpu
