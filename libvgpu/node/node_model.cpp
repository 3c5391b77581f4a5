#include "node_model.h"

namespace vgpu::node {

Result<const GpuModel*> model_of(const Ledger& ledger, int gpu) {
  const LedgerGpu* g = ledger.find_gpu(gpu);
  if (!g) return fail(ErrorCode::not_found, fmt::format("GPU {}: not in the ledger", gpu));
  return within(Catalog::builtin().require_model(g->model), fmt::format("GPU {}", gpu));
}

bool is_viz_pool(const PolicyFile& policy, const std::string& type) { return policy.find_viz_pool(type) != nullptr; }

}  // namespace vgpu::node
