// Getting a trustworthy ledger on a node: load it, or rebuild it from the hardware and re-adopt
// the instances that surviving job records name (so a lost ledger never orphans a running job),
// then those running jobs of an earlier layout use (moving_in.h).
#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>

#include "moving_in.h"
#include "vgpu/contract/job_record.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/node/node_state.h"

namespace vgpu {

std::vector<const PartitionPolicy*> node_partitions(const PolicyFile& policy, const std::string& node) {
  std::vector<const PartitionPolicy*> out;
  for (const auto& p : policy.partitions)
    if (p.allows_node(node)) out.push_back(&p);
  return out;
}

LedgerInstance instance_made_at(const PlanSlot& slot, const InstanceInfo& info, std::int64_t now) {
  LedgerInstance inst;
  inst.gpu = slot.gpu;
  inst.profile = slot.profile;
  inst.placement = slot.placement;
  inst.gpu_instance_id = info.gi_id;
  inst.compute_instance_id = info.ci_id.value_or(0);
  inst.mig_uuid = info.mig_uuid;
  inst.state = InstanceState::idle;
  inst.created_at = now;
  return inst;
}

HardwareView hardware_view_from_snapshot(const NodeSnapshot& snap, const Catalog& catalog) {
  HardwareView view;
  for (const auto& g : snap.gpus) {
    const GpuModel* m = catalog.find_model_for_product(g.product_name);
    view.gpus.push_back({g.index, g.uuid, m ? m->name : g.product_name, g.pci_bus_id});
  }
  for (const auto& i : snap.instances) {
    std::string profile = fmt::format("profile-id-{}", i.profile_id);
    for (const auto& g : snap.gpus)
      if (g.index == i.gpu)
        if (const GpuModel* m = catalog.find_model_for_product(g.product_name))
          if (const Profile* p = m->find_profile_by_nvml_id(i.profile_id)) profile = p->name;
    view.instances.push_back({i.gpu, profile, i.placement, i.gi_id, i.ci_id.value_or(0), i.mig_uuid});
  }
  return view;
}

namespace {

// MIG uuid -> job id, from every readable jobs/<id>.json. Unreadable records are skipped: they
// can only make an instance look orphaned, which quarantines it rather than exposing it.
std::map<std::string, JobId> owners_from_job_records(const NodeContext& ctx) {
  std::map<std::string, JobId> owners;
  for (const auto& [job, uuids] : read_job_records(ctx))
    for (const auto& uuid : uuids) owners[uuid] = job;
  return owners;
}

// An adopted job gets the record a prolog would have written (its epilog and `--verify` read it),
// and its instances are its user's alone from now on, as a prolog's grant makes them; the job's
// processes run as that user and keep them. Not under the access lock: no sweep can have read a
// ledger that did not exist yet.
void record_adopted(const NodeContext& ctx, const Ledger& ledger, const node::MovingIn& moving_in) {
  std::map<JobId, std::vector<LedgerInstance>> by_job;
  for (const auto& i : ledger.instances)
    if (i.adopted && i.job) by_job[*i.job].push_back(i);
  for (const auto& [job, instances] : by_job) {
    auto record = job_record_of(ledger, job, instances);
    auto written = record ? write_job_record(ctx, *record) : Result<void>(std::unexpected(record.error()));
    if (!written) ctx.log(fmt::format("vgpu: node {}: rebuild: adopted {}", ctx.node, written.error().message));
  }
  if (!ctx.access) return;
  for (const auto& [uuid, uid] : moving_in.grants) {
    auto inst = std::ranges::find(ledger.instances, uuid, &LedgerInstance::mig_uuid);
    if (inst == ledger.instances.end()) continue;
    if (auto ok = ctx.access->grant(*inst, uid); !ok)
      ctx.log(fmt::format("vgpu: node {}: rebuild: GPU {} {}: giving it to job {}'s user: {}", ctx.node, inst->gpu,
                          inst->mig_uuid, inst->job.value_or(0), ok.error().message));
  }
}

}  // namespace

std::map<JobId, std::set<std::string>> read_job_records(const NodeContext& ctx, std::vector<std::string>* unreadable) {
  std::map<JobId, std::set<std::string>> records;
  std::string dir = ctx.node_dir() + "/jobs";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return records;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!name.ends_with(".json") || name.starts_with(".")) continue;
    auto job = contract::parse_job_id(name.substr(0, name.size() - 5).c_str());
    auto text = job ? contract::read_small_file(dir + "/" + name) : Result<std::string>(std::string());
    auto record = job && text ? contract::parse_job_record(*text, *job) : Result<contract::JobRecord>();
    if (!job || !text || !record) {
      if (unreadable) unreadable->push_back(name);
      continue;
    }
    auto& uuids = records[*job];
    for (const auto& inst : record->instances) uuids.insert(inst.mig_uuid);
  }
  ::closedir(d);
  return records;
}

Result<Ledger> ensure_ledger(const NodeContext& ctx) {
  auto loaded = ctx.ledger->load();
  if (loaded) return loaded;
  if (loaded.error().code == ErrorCode::corrupt) {
    ctx.log(fmt::format("vgpu: node {}: {}; rebuilding from the hardware", ctx.node, loaded.error().message));
    loaded = ctx.ledger->load();
    if (loaded) return loaded;
  }
  if (loaded.error().code != ErrorCode::not_found) return std::unexpected(loaded.error());

  auto snap = take_snapshot(*ctx.backend);
  if (!snap) return std::unexpected(snap.error().within(fmt::format("node {}: rebuild", ctx.node)));
  auto rebuilt = rebuild_from_hardware(ctx.node, hardware_view_from_snapshot(*snap, Catalog::builtin()), ctx.now());
  if (!rebuilt) return std::unexpected(rebuilt.error().within(fmt::format("node {}: rebuild", ctx.node)));
  auto owners = owners_from_job_records(ctx);
  int adopted = 0;
  for (auto& inst : rebuilt->instances) {
    auto it = owners.find(inst.mig_uuid);
    if (it == owners.end()) continue;
    inst.job = it->second;
    inst.orphaned = false;
    inst.state = InstanceState::ready;
    ++adopted;
  }
  const node::MovingIn moving_in = node::adopt_instances_in_use(ctx, *rebuilt);
  // The partitions of a uniform GPU's mode, and whole GPUs, that nothing holds are free space.
  std::erase_if(rebuilt->instances, [&](const LedgerInstance& i) {
    return !i.job && !i.adopted && exists_with_gpu_mode(*rebuilt, Catalog::builtin(), i.gpu, i.profile);
  });
  if (auto ok = ctx.ledger->replace(*rebuilt); !ok) return std::unexpected(ok.error());
  for (const auto& note : moving_in.notes) ctx.log(fmt::format("vgpu: node {}: rebuild: {}", ctx.node, note));
  record_adopted(ctx, *rebuilt, moving_in);
  ctx.log(fmt::format(
      "vgpu: node {}: ledger rebuilt from hardware: {} GPU(s), {} instance(s), {} re-adopted from job "
      "records, {} in use adopted for their running jobs, {} in use quarantined",
      ctx.node, rebuilt->gpus.size(), rebuilt->instances.size(), adopted, moving_in.for_jobs, moving_in.quarantined));
  return rebuilt;
}

}  // namespace vgpu
