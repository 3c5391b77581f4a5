// The openb node list (openb_node_list_gpu_node.csv: sn,cpu_milli,memory_mib,gpu,model), parsed
// strictly into a ClusterShape. The trace's GPU models (P100, T4, V100, ...) are not MIG-capable;
// the simulator treats every GPU as one catalog model (H100-80GB by default) and keeps each node's
// GPU count, CPU and host memory, so the cluster has the real shape with partitionable GPUs.
#pragma once

#include <string>
#include <string_view>

#include "packer.h"

namespace vgpu::bench {

Result<ClusterShape> parse_node_list(std::string_view text, std::string_view path);
Result<ClusterShape> load_node_list(const std::string& path);

}  // namespace vgpu::bench
