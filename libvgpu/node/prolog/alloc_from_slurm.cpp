// What a job holds on this node when slurmd gave its prolog no VGPU_ALLOC (prolog.h says when).
#include <fmt/format.h>

#include <optional>

#include "vgpu/base/text_split.h"
#include "vgpu/contract/alloc_codec.h"
#include "vgpu/core/gres_request.h"
#include "vgpu/node/prolog.h"

namespace vgpu {

Result<std::string> vgpu_alloc_for_prolog(const PolicyFile& policy, SlurmClient& slurm, JobId job,
                                          std::string_view partition, std::string_view vgpu_alloc_env) {
  if (!vgpu_alloc_env.empty()) return std::string(vgpu_alloc_env);
  bool vgpu_partition = false;
  for (auto name : split_view(partition, ',')) vgpu_partition = vgpu_partition || policy.partition(name) != nullptr;
  if (!vgpu_partition) return std::string();
  auto text = slurm.job_tres_per_node(job);
  if (!text) return std::unexpected(text.error().within(fmt::format("job {}: what it holds (squeue)", job)));
  // The last task of an array carries the array's own id, and `squeue -j <that id>` lists every
  // task of the array, one line each, spelled by its state ("vgpu:1g.20gb:3" running,
  // "gres/vgpu:1g.20gb:3" pending). Every task asks the same; lines that differ are an error.
  std::optional<std::string> alloc;
  for (auto raw : split_view(*text, '\n')) {
    std::string_view line = raw;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    std::string this_line;
    if (line != "N/A") {
      auto requests = parse_vgpu_gres(line);
      if (!requests) return std::unexpected(requests.error().within(fmt::format("job {}: squeue %b", job)));
      for (const auto& r : *requests)
        this_line = contract::append_alloc_item(this_line, r.type, static_cast<std::uint64_t>(r.count));
    }
    if (alloc && *alloc != this_line)
      return fail(ErrorCode::invalid_argument,
                  fmt::format("job {}: squeue %b: the array's tasks differ ('{}' and '{}')", job, *alloc, this_line));
    alloc = std::move(this_line);
  }
  return alloc.value_or(std::string());
}

}  // namespace vgpu
