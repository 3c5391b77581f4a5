// FGD's published results (data/openb/fgd_published.csv): per openb workload, the unallocated
// GPU % each scheduler of the paper's artifact reached when arrivals hit 100 % of capacity.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"

namespace vgpu::bench {

struct PublishedRow {
  std::map<std::string, double> unallocated_pct;  // "fgd", "bestfit", "dotprod", ...
};

// workload -> row. Columns are `<scheduler>_unallocated_pct`; `seeds` is checked, not kept.
Result<std::map<std::string, PublishedRow>> parse_published(std::string_view text, std::string_view path);
Result<std::map<std::string, PublishedRow>> load_published(const std::string& path);

// "default" for ".../openb_pod_list_default.csv"; nullopt for a file not named that way.
std::optional<std::string> workload_of_trace(std::string_view trace_path);

}  // namespace vgpu::bench
