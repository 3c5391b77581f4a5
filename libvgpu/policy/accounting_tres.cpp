#include "vgpu/policy/accounting_tres.h"

#include <algorithm>
#include <vector>

#include "vgpu/policy/submit_table.h"

namespace vgpu {

std::string render_accounting_tres(const PolicyFile& policy, const Catalog& catalog) {
  std::vector<std::string> types;
  for (const auto& partition : policy.partitions)
    for (auto& t : types_offered(partition, catalog))
      if (std::ranges::find(types, t) == types.end()) types.push_back(std::move(t));
  std::string out = "gres/vgpu";
  for (const auto& t : types) out += ",gres/vgpu:" + t;
  return out;
}

}  // namespace vgpu
