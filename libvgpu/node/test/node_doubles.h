// Test doubles for the node flows: a MIG GPU backend that applies the placement rules through
// GpuLayout, a Slurm that adopts advertisements after a configurable number of polls, and a
// scrubber with a scripted outcome.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "vgpu/contract/node_features.h"
#include "vgpu/ledger/share_groups.h"
#include "vgpu/node/context.h"
#include "vgpu/node/node_state.h"

namespace vgpu::testing {

class MemoryBackend final : public GpuBackend {
 public:
  MemoryBackend(const GpuModel& model, int gpus) : model_(&model) {
    for (int i = 0; i < gpus; ++i) layouts_.emplace_back(model);
  }
  std::string_view backend_name() const override { return "memory"; }
  std::string unavailable_reason() const override { return ""; }
  Result<std::vector<GpuInfo>> discover() override {
    std::vector<GpuInfo> out;
    for (int i = 0; i < static_cast<int>(layouts_.size()); ++i)
      out.push_back({i, model_->nvml_names.front(), fmt::format("GPU-{:08d}-0000-4000-8000-000000000000", i),
                     fmt::format("00000000:{:02x}:00.0", i), model_->memory_mib, mig_mode_of(i), mig_mode_of(i), i});
    return out;
  }
  Result<GpuModel> read_catalog(int) override { return *model_; }
  Result<std::vector<InstanceInfo>> list_instances(int gpu) override {
    std::vector<InstanceInfo> out;
    for (const auto& i : instances_)
      if (i.gpu == gpu) out.push_back(i);
    if (after_list) after_list(gpu);
    return out;
  }
  Result<InstanceInfo> create_instance(int gpu, int profile_id, Placement placement) override {
    ++creates;
    if (fail_next_create) {
      fail_next_create = false;
      return fail_create_with == ErrorCode::conflict ? fail(ErrorCode::conflict, "injected: In use by another client")
                                                     : fail(ErrorCode::no_capacity, "injected: Insufficient Resources");
    }
    const Profile* p = model_->find_profile_by_nvml_id(profile_id);
    if (!p) return fail(ErrorCode::invalid_argument, "bad profile id");
    if (auto ok = layouts_.at(static_cast<std::size_t>(gpu)).place(*p, placement); !ok)
      return std::unexpected(ok.error());
    InstanceInfo info{gpu,    next_gi_, 0, profile_id, placement, fmt::format("MIG-{:04d}-{:04d}", gpu, next_gi_),
                      p->name};
    ++next_gi_;
    instances_.push_back(info);
    return info;
  }
  // What a process killed between the GPU-instance and compute-instance creates leaves behind.
  Result<InstanceInfo> create_gpu_instance_only(int gpu, int profile_id, Placement placement) {
    auto made = create_instance(gpu, profile_id, placement);
    if (!made) return made;
    instances_.back().ci_id.reset();
    instances_.back().mig_uuid.clear();
    return instances_.back();
  }
  Result<void> destroy_instance(int gpu, int gi_id) override {
    ++destroys;
    auto it = std::ranges::find_if(instances_, [&](const InstanceInfo& i) { return i.gpu == gpu && i.gi_id == gi_id; });
    if (it == instances_.end()) return fail(ErrorCode::not_found, "no such GPU instance");
    (void)layouts_.at(static_cast<std::size_t>(gpu)).release(it->placement);
    instances_.erase(it);
    return {};
  }
  // The driver's rules as the fake NVML applies them (fakenvml/src/mig_mode.h): a process or an
  // instance on the GPU keeps the new mode pending.
  Result<MigModeSwitch> set_mig_mode(int gpu, MigMode mode) override {
    ++mig_switches;
    const bool on = mode == MigMode::enabled;
    const bool has_instance = std::ranges::any_of(instances_, [&](const InstanceInfo& i) { return i.gpu == gpu; });
    if (busy.contains(gpu) || (!on && has_instance)) return MigModeSwitch::pending_in_use;
    if (on) mig_off.erase(gpu);
    else
      mig_off.insert(gpu);
    return MigModeSwitch::activated;
  }
  // What the driver lists (by GPU-instance id) until `processes_unknown` says it cannot.
  Result<std::vector<GpuProcess>> compute_processes(int gpu) override {
    if (!processes_unknown.empty()) return fail(ErrorCode::unavailable, processes_unknown);
    std::vector<GpuProcess> out;
    for (const auto& [pid, at] : processes)
      if (at.first == gpu) out.push_back({pid, at.second});
    return out;
  }
  std::map<int, std::pair<int, int>> processes;  // pid -> (GPU, GPU-instance id) it has a context on
  std::string processes_unknown;
  const std::vector<InstanceInfo>& instances() const { return instances_; }
  int creates = 0, destroys = 0, mig_switches = 0;
  std::set<int> busy;  // GPUs a process outside slurm-vgpu holds
  bool fail_next_create = false;
  std::set<int> mig_off;          // GPUs discover() reports with MIG mode disabled
  std::optional<GpuLinks> links;  // what gpu_links() answers: none, as a backend that cannot tell
  std::optional<GpuLinks> gpu_links() override { return links; }
  ErrorCode fail_create_with = ErrorCode::no_capacity;
  // Runs after a GPU's instances were listed, before the list is returned: what happens here is
  // what another process did just after the caller looked.
  std::function<void(int gpu)> after_list;

 private:
  MigMode mig_mode_of(int gpu) const { return mig_off.contains(gpu) ? MigMode::disabled : MigMode::enabled; }
  const GpuModel* model_;
  std::vector<GpuLayout> layouts_;
  std::vector<InstanceInfo> instances_;
  int next_gi_ = 1;
};

// slurmctld as the node agent sees it: the configured split follows the advertisement file
// `lag` polls after it changes; `used` is what Slurm has allocated.
// Counts handovers; with a FakeSlurm that follows the file, a handover is slurmctld taking it.
class CountingPublisher final : public SplitPublisher {
 public:
  Result<void> publish(const std::map<std::string, int>&) override {
    ++published;
    return {};
  }
  int published = 0;
};

class FakeSlurm final : public SlurmClient {
 public:
  explicit FakeSlurm(std::string advertisement_path) : path_(std::move(advertisement_path)) {}
  Result<PendingJobs> pending_jobs() override { return parse_pending_jobs(squeue); }
  Result<NodeGres> node_gres(const std::string& node) override {
    if (view_taken_at) return *view_node;
    return node_gres_now(node);
  }
  // A published cluster view (contract/cluster_view.h): after take_view(at), node_gres and
  // jobs_on_node answer what slurmctld showed then, as a view up to a period old does, until
  // drop_view(); node_gres_now always asks the live one.
  void take_view(std::int64_t at) {
    view_node = *node_gres_now("");
    view_node->published_at = at;
    view_running = running;
    view_taken_at = at;
  }
  void drop_view() { view_taken_at.reset(); }
  [[nodiscard]] std::optional<ClusterViewStatus> cluster_view_status() const override {
    if (!view_taken_at) return std::nullopt;
    return ClusterViewStatus{.source = "test", .age_s = 0, .usable = true, .problem = "", .direct_queries = 0};
  }
  std::optional<std::int64_t> view_taken_at;
  std::optional<NodeGres> view_node;
  std::set<JobId> view_running;
  Result<NodeGres> node_gres_now(const std::string&) override {
    ++polls;
    if (polls_until_adopt > 0) {
      --polls_until_adopt;
    } else if (follows_file) {
      std::ifstream in(path_);
      std::stringstream ss;
      ss << in.rdbuf();
      auto j = nlohmann::json::parse(ss.str(), nullptr, false);
      configured.clear();
      if (!j.is_discarded())
        for (const auto& [k, v] : j["counts"].items()) configured[k] = v.get<int>();
      if (total) {  // as the plugin pads a split it takes, and the planner's total comes from
        int sum = 0;
        for (const auto& [k, v] : configured) sum += v;
        if (sum <= *total) configured["free"] = *total - sum;
        else
          configured = {{"free", *total}};  // the plugin refuses a split over the total
      }
    }
    auto counted = used;
    if (ledger != nullptr)
      if (auto l = ledger->load(); l) {
        for (const auto& [profile, n] : held_by_jobs(*l)) counted[profile] = std::max(counted[profile], n);
      }
    return NodeGres{configured, counted, "MIXED", weight, features, std::nullopt};
  }
  Result<void> set_node_weight(const std::string& node, std::uint32_t w) override {
    if (!weight_refusal.empty()) return fail(ErrorCode::unavailable, weight_refusal);
    weight_updates.emplace_back(node, w);
    weight = w;
    return {};
  }
  Result<void> set_node_features(const std::string& node, const std::string& f) override {
    if (!feature_refusal.empty()) return fail(ErrorCode::unavailable, feature_refusal);
    feature_updates.emplace_back(node, f);
    features = contract::parse_feature_list(f);
    return {};
  }
  std::optional<std::vector<std::string>> features = std::vector<std::string>{"ib"};  // slurm.conf's
  std::vector<std::pair<std::string, std::string>> feature_updates;
  std::string feature_refusal;              // set: scontrol update AvailableFeatures= fails with this
  std::optional<std::uint32_t> weight = 1;  // slurm.conf's default
  std::vector<std::pair<std::string, std::uint32_t>> weight_updates;
  std::string weight_refusal;  // set: scontrol update Weight= fails with this
  Result<std::string> reservation_nodes(const std::string& name) override {
    ++reservation_queries;
    auto it = reservations.find(name);
    if (it == reservations.end()) return fail(ErrorCode::not_found, "no reservation " + name);
    return it->second;
  }
  std::map<std::string, std::string> reservations;  // name -> hostlist
  int reservation_queries = 0;
  Result<void> reject_job(JobId job, const std::string& reason) override {
    rejected.emplace_back(job, reason);
    return {};
  }
  Result<void> requeue_job(JobId job, const std::string& reason) override {
    if (!requeue_refusal.empty()) return fail(ErrorCode::unavailable, requeue_refusal);
    requeued.emplace_back(job, reason);
    return {};
  }
  std::vector<std::pair<JobId, std::string>> requeued;
  std::string requeue_refusal;  // set: scontrol requeue fails with this
  Result<NodeJobs> jobs_on_node(const std::string&) override {
    if (view_taken_at) return NodeJobs{view_running, view_taken_at};
    ++node_job_queries;
    return NodeJobs{running, std::nullopt};
  }
  Result<std::string> job_tres_per_node(JobId job) override {
    auto it = tres_per_node.find(job);
    if (it == tres_per_node.end()) return fail(ErrorCode::unavailable, "squeue: Invalid job id specified");
    return it->second;
  }
  std::map<JobId, std::string> tres_per_node;  // squeue -o %b, by job
  Result<std::optional<ProcessJob>> job_of_process(int pid) override {
    ++pidinfo_queries;
    if (!pidinfo_failure.empty()) return fail(ErrorCode::unavailable, pidinfo_failure);
    auto it = process_jobs.find(pid);
    if (it == process_jobs.end()) return std::nullopt;
    return it->second;
  }
  std::map<int, ProcessJob> process_jobs;  // scontrol pidinfo's answers: processes of jobs on this node
  std::string pidinfo_failure;             // set: scontrol pidinfo fails with this
  int pidinfo_queries = 0;
  Result<SlurmVersion> controller_version() override {
    ++version_queries;
    if (!controller) return fail(ErrorCode::unavailable, "slurmctld is not responding");
    return *controller;
  }
  Result<void> set_node_gres(const std::string& node, const std::string& value) override {
    gres_updates.emplace_back(node, value);
    return {};
  }
  // false: slurmctld keeps `configured` whatever the file says (a split it never took, or an
  // older one a restarted slurmctld took from slurmd's last report).
  bool follows_file = true;
  // The node's constant vgpu total (slurm.conf's Gres=vgpu:free:<total>): set, the split slurmctld
  // shows is padded with `free` to it, as the real one is.
  std::optional<int> total;
  std::optional<SlurmVersion> controller = SlurmVersion{22, 5, 8};
  int version_queries = 0;
  std::vector<std::pair<std::string, std::string>> gres_updates;
  // When set, what jobs hold in this ledger counts as used (at least), as a slurmctld that never
  // restarted counts it; `used` adds allocations whose prolog has not run. Null models a
  // restarted slurmctld that forgot running jobs' allocations.
  const LedgerStore* ledger = nullptr;
  std::set<JobId> running;  // what jobs_on_node reports
  int node_job_queries = 0;
  std::string squeue;
  std::map<std::string, int> configured, used;
  int polls_until_adopt = 0, polls = 0;
  std::vector<std::pair<JobId, std::string>> rejected;

 private:
  std::string path_;
};

// MPS control daemons as a map: device -> the limits it was opened with. `scrub_needs_closed`
// (a ScriptedScrubber hook checks it) models a daemon's server holding its device.
class FakeMps final : public MpsControl {
 public:
  Result<std::string> open(const std::string& device, const ShareLimits& limits) override {
    ++opens;
    if (!open_refusal.empty()) return fail(ErrorCode::unavailable, open_refusal);
    daemons[device] = limits;
    return "/run/test-mps/" + device + "/pipe";
  }
  Result<void> close(const std::string& device) override {
    ++closes;
    daemons.erase(device);
    return {};
  }
  Result<std::vector<std::string>> devices() override {
    std::vector<std::string> out;
    for (const auto& [d, l] : daemons) out.push_back(d);
    return out;
  }
  std::map<std::string, ShareLimits> daemons;
  std::string open_refusal;
  int opens = 0, closes = 0;
};

class ScriptedScrubber final : public Scrubber {
 public:
  ScrubOutcome scrub(const std::string& uuid) override {
    scrubbed.push_back(uuid);
    if (on_scrub) on_scrub(uuid);
    return {status, "scripted"};
  }
  [[nodiscard]] std::string unavailable_reason() const override { return unavailable; }
  ScrubStatus status = ScrubStatus::scrubbed;
  std::string unavailable;  // what unavailable_reason() says: empty, a scrub can run
  std::vector<std::string> scrubbed;
  std::function<void(const std::string& uuid)> on_scrub;  // sees the node as the scrub does
};

// Who may open each instance, by MIG UUID: a uid, or 0 once taken back (root only). An instance
// never granted or revoked is absent.
class RecordingAccess final : public InstanceAccess {
 public:
  Result<void> grant(const LedgerInstance& inst, unsigned uid) override {
    if (fail_grant) return fail(ErrorCode::io, "chown 1001:0 /dev/nvidia-caps/nvidia-cap12: Read-only file system");
    owner[inst.mig_uuid] = uid;
    users.erase(inst.mig_uuid);
    return {};
  }
  Result<void> grant_users(const LedgerInstance& inst, const std::vector<std::string>& names) override {
    if (fail_grant)
      return fail(ErrorCode::io, "setting the access ACL of /dev/nvidia-caps/nvidia-cap12: Operation not supported");
    users[inst.mig_uuid] = names;
    owner[inst.mig_uuid] = names.empty() ? 0 : kNamedOwner;
    if (on_grant_users) on_grant_users(inst);
    return {};
  }
  Result<void> revoke(const LedgerInstance& inst) override {
    if (fail_revoke) return fail(ErrorCode::io, "chmod 0400 /dev/nvidia-caps/nvidia-cap12: Read-only file system");
    owner[inst.mig_uuid] = 0;
    users.erase(inst.mig_uuid);
    return {};
  }
  Result<int> secure_unheld(const Ledger& ledger) override {
    int changed = 0;
    for (auto& [uuid, uid] : owner) {
      const bool held = std::ranges::any_of(
          ledger.instances, [&](const LedgerInstance& i) { return i.mig_uuid == uuid && instance_is_held(ledger, i); });
      if (!held && uid != 0) {
        uid = 0;
        ++changed;
      }
    }
    ++secure_calls;
    return changed;
  }
  static constexpr unsigned kNamedOwner = 0xfffffffe;  // owner[] of an instance granted by names
  std::map<std::string, unsigned> owner;
  std::map<std::string, std::vector<std::string>> users;  // who grant_users() last named, per instance
  bool fail_grant = false, fail_revoke = false;
  int secure_calls = 0;
  std::function<void(const LedgerInstance& inst)> on_grant_users;  // sees the node as the grant leaves it
};

// Points `ctx` at node n1 of a test: its state under `state_dir`, the policy and the doubles every
// node flow needs. The clock, the log and the optional ports (viz, mps, access) stay the caller's.
inline void wire_test_node(NodeContext& ctx, const std::string& state_dir, const PolicyFile& policy, LedgerStore& store,
                           GpuBackend& backend, FakeSlurm& slurm, Scrubber& scrubber, SplitPublisher& publisher) {
  slurm.ledger = &store;
  ctx.node = "n1";
  ctx.state_dir = state_dir;
  ctx.policy = &policy;
  ctx.ledger = &store;
  ctx.backend = &backend;
  ctx.slurm = &slurm;
  ctx.scrubber = &scrubber;
  ctx.publisher = &publisher;
  ctx.confirm_poll_ms = 1;
}

}  // namespace vgpu::testing
