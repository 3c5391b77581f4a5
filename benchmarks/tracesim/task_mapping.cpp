#include "task_mapping.h"

#include <stdexcept>

#include "vgpu/core/shared_instance.h"

namespace vgpu::bench {

const Profile* profile_for_milli(const GpuModel& model, int gpu_milli) {
  // The rule that sizes a new shared instance sizes a dedicated one too: one owner for it.
  return profile_for_shared_instance(model, gpu_milli);
}

const Profile& full_gpu_profile(const GpuModel& model) {
  const Profile* p = profile_for_milli(model, 1000);
  // Every catalog model has a full-GPU profile; its absence is a catalog bug, not an input error.
  if (!p || p->compute_slices != model.compute_slices)
    throw std::logic_error("model " + model.name + " has no full-GPU profile");
  return *p;
}

std::vector<MappedTask> map_tasks(const Trace& trace, const GpuModel& model, int gpus_per_node) {
  std::vector<MappedTask> out;
  out.reserve(trace.tasks.size());
  const Profile& full = full_gpu_profile(model);
  for (std::size_t i = 0; i < trace.tasks.size(); ++i) {
    const TraceTask& t = trace.tasks[i];
    MappedTask m;
    m.trace_index = static_cast<int>(i);
    m.requested_milli = t.requested_milli();
    m.cpu_milli = t.cpu_milli;
    m.memory_mib = t.memory_mib;
    if (t.num_gpu == 0) {
      m.kind = TaskKind::cpu_only;
      m.requested_milli = 0;
    } else if (t.num_gpu > gpus_per_node) {
      m.kind = TaskKind::too_wide;
    } else if (t.num_gpu == 1 && t.gpu_milli < 1000) {
      m.kind = TaskKind::sharing;
      m.profile = profile_for_milli(model, t.gpu_milli);
      m.gpus = 1;
    } else {
      m.kind = TaskKind::whole_gpu;
      m.profile = &full;
      m.gpus = t.num_gpu;
    }
    out.push_back(m);
  }
  return out;
}

MappingSummary summarize(const std::vector<MappedTask>& tasks) {
  MappingSummary s;
  for (const auto& t : tasks) {
    switch (t.kind) {
      case TaskKind::cpu_only: ++s.cpu_only; break;
      case TaskKind::too_wide: ++s.too_wide; break;
      case TaskKind::sharing:
      case TaskKind::whole_gpu:
        ++s.gpu_tasks;
        s.requested_milli += t.requested_milli;
        s.granted_slices += t.slices();
        break;
    }
  }
  return s;
}

std::vector<MappingRow> mapping_table(const GpuModel& model) {
  std::vector<MappingRow> rows;
  for (int milli = 1; milli <= 1000; ++milli) {
    const Profile* p = profile_for_milli(model, milli);
    std::string name = p ? p->name : "-";
    if (!rows.empty() && rows.back().profile == name) rows.back().milli_to = milli;
    else
      rows.push_back({milli, milli, name});
  }
  return rows;
}

}  // namespace vgpu::bench
