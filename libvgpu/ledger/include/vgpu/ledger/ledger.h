// The node ledger: the durable, node-local record of which GPUs a node has, which MIG instances
// exist on them and who owns each, the viz VMs, and the plan last advertised to Slurm. This header
// is the in-memory value and the pure operations on it; ledger_json.h is its on-disk format and
// ledger_store.h the locked, crash-safe file that holds it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/core/catalog.h"
#include "vgpu/base/error.h"
#include "vgpu/base/job_id.h"

namespace vgpu {

// idle: scrubbed (or never used), no job, kept at its plan slot for the next job of its profile,
// so that job's prolog claims it instead of creating one (and the last job's epilog destroys nothing).
enum class InstanceState { creating, ready, scrubbing, quarantined, destroying, idle };
enum class VmState { starting, running, stopping };

std::string_view to_string(InstanceState state);
std::string_view to_string(VmState state);
std::optional<InstanceState> parse_instance_state(std::string_view text);
std::optional<VmState> parse_vm_state(std::string_view text);

struct LedgerGpu {
  int index = 0;           // NVML device index
  std::string uuid;        // "GPU-..."
  std::string model;       // catalog short name, "H100-80GB"
  std::string pci_bus_id;  // "0000:00:06.0"
  bool operator==(const LedgerGpu&) const = default;
};

struct LedgerInstance {
  int gpu = 0;  // LedgerGpu::index
  std::string profile;
  Placement placement;
  int gpu_instance_id = 0;      // NVML GPU-instance id
  int compute_instance_id = 0;  // NVML compute-instance id inside it
  std::string mig_uuid;         // "MIG-...", or an AMD partition's "GPU-<16 hex>"
  std::optional<JobId> job;     // none: idle, being scrubbed, or orphaned
  std::string user;             // owner's user name; empty when job is none
  InstanceState state = InstanceState::creating;
  std::int64_t created_at = 0;  // Unix seconds
  bool orphaned = false;        // found on the hardware with no known owner (rebuild)
  // Found in use when the node's ledger was first made: a job of the layout before slurm-vgpu (an
  // admin's static MIG layout) keeps it until it ends (`job`), or, where no Slurm job runs the
  // process using it, it is quarantined (docs/admin.md, "Moving in").
  bool adopted = false;
  bool operator==(const LedgerInstance&) const = default;
};

struct VizVm {
  JobId job = 0;
  std::string domain;  // libvirt domain name
  std::string device;  // mdev uuid, VF BDF or MIG uuid handed to the VM
  VmState state = VmState::starting;
  bool operator==(const VizVm&) const = default;
};

// One job's share of a shared instance (a share type's: docs/shared-instances.md).
struct ShareHolder {
  JobId job = 0;
  std::string user;
  std::int64_t since = 0;  // Unix seconds: when the job took the share
  bool operator==(const ShareHolder&) const = default;
};

// The jobs holding shares of one place: a plan slot of a share type, until its instance is made,
// then that instance, at the same GPU and placement (so making it moves nothing). Such a slot is
// never claimed_by_job, such an instance never has a `job`: the group is their owner. It goes
// when its last holder leaves. vgpu/ledger/share_groups.h has the operations.
struct ShareGroup {
  int gpu = 0;
  Placement placement;
  std::string type;                  // the share type: a profile of the GPU's model with shares > 0
  std::vector<ShareHolder> holders;  // 1 to the type's shares; one share per job
  bool operator==(const ShareGroup&) const = default;
};

struct PlanSlot {
  int gpu = 0;
  std::string profile;
  Placement placement;
  std::optional<JobId> claimed_by_job;  // Slurm may already have allocated this slot to the job
  bool operator==(const PlanSlot&) const = default;
};

struct AdvertisedPlan {
  std::uint64_t generation = 0;
  std::vector<PlanSlot> slots;
  bool operator==(const AdvertisedPlan&) const = default;
};

// One tenancy, for accounting: kept in history.jsonl beside the ledger, not in ledger.json.
struct HistoryRecord {
  JobId job = 0;
  std::string user;
  int gpu = 0;
  std::string profile;
  Placement placement;
  std::string mig_uuid;
  std::int64_t start_time = 0;  // Unix seconds
  std::int64_t end_time = 0;
  std::string end_reason;  // "completed", "failed", "cancelled", "node_fail", ...
  bool operator==(const HistoryRecord&) const = default;
};

struct Ledger {
  std::string node;
  std::vector<LedgerGpu> gpus;
  std::vector<LedgerInstance> instances;
  std::vector<VizVm> vms;
  AdvertisedPlan plan;
  // The classes (requests by need) the instances and slots may be named after, as the policy
  // defined them when the planner last looked, plus any still named here after the policy dropped
  // them: so any reader can check the ledger without the policy. Empty on nodes without classes.
  std::vector<GpuClass> classes;
  // Who holds the shares of each shared slot or instance. Empty on nodes without share types.
  std::vector<ShareGroup> share_groups;
  // Records made during the current LedgerStore::update(); the store appends them to
  // history.jsonl before it replaces ledger.json. Never serialized into ledger.json.
  std::vector<HistoryRecord> new_history;
  bool operator==(const Ledger&) const = default;

  [[nodiscard]] const LedgerGpu* find_gpu(int index) const;
};

// Cross-field rules the on-disk format promises: unique GPUs, instances and slots on known GPUs
// with profiles of that GPU's model at legal placements, instances and plan slots jointly
// placeable on each GPU, unique MIG uuids / GPU-instance ids / VM domains, owners consistent,
// each share group on one slot or instance of its type, with room for its holders.
// Errors are `corrupt` and name the field path and value: "instances[2].placement: {2,4} ...".
Result<void> validate(const Ledger& ledger, const Catalog& catalog = Catalog::builtin());

// ---- pure operations used by prolog, epilog and the planner ----

// A *backed* slot stands where a released instance (no job; scrubbing or destroying) or an idle
// one still is, at the same GPU and placement: when a job ends, its instances' places go back to
// the plan as such slots, so the advertisement, and so Slurm's count, does not change with the
// job's end. The slot and its instance are one space, placed once. A slot backed by a released
// instance takes the space over once the instance is destroyed; one backed by an idle instance
// hands that instance to the job that claims it. For each plan slot, the index in `instances` of
// the instance backing it, if any; every such instance backs at most one slot.
std::vector<std::optional<std::size_t>> slot_backings(const Ledger& ledger);
// Released: no job, scrubbing or destroying (its place is not usable until it is destroyed).
bool is_released(const LedgerInstance& instance);
// Idle: no job, kept for the next job of its profile (InstanceState::idle).
bool is_idle(const LedgerInstance& instance);
// For each plan slot, the index in `instances` of the idle instance of the slot's profile standing
// on it, if any (the slot_backings that a job claiming the slot would take as they are).
std::vector<std::optional<std::size_t>> idle_backings(const Ledger& ledger);

std::vector<const LedgerInstance*> instances_of_job(const Ledger& ledger, JobId job);

// Marks `count` unclaimed plan slots of `profile` as allocated to `job`. Slots the job already
// holds count toward `count`, so a retried prolog claims nothing twice. Slots backed by an idle
// instance come first (nothing to create), then empty ones; a slot backed by a released instance
// (the prolog would wait for its scrub) only when no other is left. On error nothing changes.
Result<void> claim_slots(Ledger& ledger, JobId job, std::string_view profile, int count);
// Returns the job's claimed slots to the plan (job cancelled before its instances existed).
int release_claims(Ledger& ledger, JobId job);

// Records a new instance. A plan slot claimed by the same job at the same GPU and placement is
// consumed (the slot became this instance), and so is the slot of a share group there for an
// instance of its type with no job (the group now stands on the instance); otherwise the instance
// must fit beside everything.
Result<void> add_instance(Ledger& ledger, LedgerInstance instance, const Catalog& catalog = Catalog::builtin());
// Hands the idle instance (gpu, gpu_instance_id) to `job`: the plan slot it backs, which the job
// must have claimed, is consumed, and the instance is the job's (ready) from `now`. On error
// nothing changes.
Result<void> adopt_idle_instance(Ledger& ledger, int gpu, int gpu_instance_id, JobId job, std::string user,
                                 std::int64_t now);
// Hands `job` every idle instance standing on a slot it has claimed (adopt_idle_instance for
// each), so a prolog records its claim and these in one write. How many; on error nothing changes.
Result<int> adopt_idle_claims(Ledger& ledger, JobId job, const std::string& user, std::int64_t now);
// A released instance whose scrub failed is never handed out again: `quarantined`, and the slot
// it backed leaves the plan (that space is gone until an admin releases it).
Result<void> quarantine_instance(Ledger& ledger, int gpu, int gpu_instance_id);
// Forgets an instance once it is destroyed on the hardware.
Result<void> remove_instance(Ledger& ledger, int gpu, int gpu_instance_id);
// Forgets an instance that vanished from the hardware without us; a job that still owned it
// gets its history record (end reason "vanished"), so the history accounts for every instance.
Result<void> forget_vanished_instance(Ledger& ledger, int gpu, int gpu_instance_id, std::int64_t now);

// Whether the ledger names the job anywhere: an instance it owns, a slot claimed for it, a share
// it holds, its viz VM. An epilog for a job it does not name has nothing to release on this node.
bool names_job(const Ledger& ledger, JobId job);

// Ends a job's tenancy: one history record per instance it owned, the instances lose their owner
// and go to `scrubbing` (they still exist until the epilog destroys them), each leaves a backed
// slot of its profile at its place (see slot_backings), and the job's claims are released.
// Returns how many instances it owned; 0 is not an error (epilog retries).
int retire_job(Ledger& ledger, JobId job, std::int64_t end_time, std::string_view end_reason);

// ---- the hardware's own view, for rebuild and reconcile ----

struct HardwareGpu {
  int index = 0;
  std::string uuid;
  std::string model;  // catalog short name or an NVML product name
  std::string pci_bus_id;
};

struct HardwareInstance {
  int gpu = 0;
  std::string profile;
  Placement placement;
  int gpu_instance_id = 0;
  int compute_instance_id = 0;
  std::string mig_uuid;
};

struct HardwareView {
  std::vector<HardwareGpu> gpus;
  std::vector<HardwareInstance> instances;
};

// Whether GPU `gpu` of the ledger is of a uniform model (AMD compute partitions): its partitions
// exist while its mode is set, so one no job holds is free space, not a leak.
bool is_uniform_gpu(const Ledger& ledger, const Catalog& catalog, int gpu);
// Whether an instance of `profile` on GPU `gpu` exists with the GPU's mode rather than by a
// create: a partition of a uniform model, or the whole GPU with MIG off (whole.<M>gb). One that
// no job holds is the GPU's free space, not a leak, and nothing is created for a slot of it.
bool exists_with_gpu_mode(const Ledger& ledger, const Catalog& catalog, int gpu, std::string_view profile);

// Sets the ledger's classes to `wanted` plus those of its current ones that an instance or slot
// still names. Whether anything changed.
bool sync_classes(Ledger& ledger, const std::vector<GpuClass>& wanted);

// A fresh ledger describing exactly what the hardware has. Every instance is `orphaned`, owned by
// nobody and `quarantined`: it may still hold a former tenant's data, so it is never handed out
// before reconcile decides to scrub or destroy it. The plan is empty (generation 0).
Result<Ledger> rebuild_from_hardware(std::string node, const HardwareView& view, std::int64_t now,
                                     const Catalog& catalog = Catalog::builtin());

enum class DifferenceKind {
  missing_gpu,          // in the ledger, not on the hardware
  unknown_gpu,          // on the hardware, not in the ledger
  gpu_mismatch,         // same index, different uuid/model/bus id
  leaked_instance,      // on the hardware, not in the ledger
  missing_instance,     // in the ledger, not on the hardware
  mismatched_instance,  // same GPU and GPU-instance id, different uuid/profile/placement/CI id
};
std::string_view to_string(DifferenceKind kind);

struct Difference {
  DifferenceKind kind;
  int gpu = 0;
  std::optional<int> gpu_instance_id;
  std::string detail;  // "ledger MIG-a != hardware MIG-b"
  bool operator==(const Difference&) const = default;
};

// What differs between the ledger and the hardware; empty means they agree. Instances are matched
// by (GPU index, GPU-instance id), the identity NVML itself uses.
std::vector<Difference> reconcile(const Ledger& ledger, const HardwareView& view,
                                  const Catalog& catalog = Catalog::builtin());

}  // namespace vgpu
