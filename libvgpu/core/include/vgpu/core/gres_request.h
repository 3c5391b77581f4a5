// Parses what users and Slurm write for vgpu requests: "vgpu:3g.40gb:2", "gres:vgpu:1g.10gb:4",
// comma lists like "vgpu:1g.10gb:2,vgpu:3g.40gb:1", and the prolog's VGPU_ALLOC "1g.10gb:2,7g.80gb:1".
// One parser so the submit filter, the prolog and vgpuctl agree on every corner case.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/base/error.h"

namespace vgpu {

struct GresRequest {
  std::string type;  // profile or viz pool name
  int count = 1;
  bool operator==(const GresRequest&) const = default;
};

// A --gres value. Entries for other GRES names (gpu:1) are skipped; a vgpu entry without a type is
// an error, because an untyped request would consume the padding type and never be placeable.
Result<std::vector<GresRequest>> parse_vgpu_gres(std::string_view text);

// The "type:count[,type:count...]" allocation summary the plugin hands the prolog/epilog.
Result<std::vector<GresRequest>> parse_vgpu_alloc(std::string_view text);

}  // namespace vgpu
