// Text forms for describing a node on the command line (plan, demo):
//   running: "GPU:PROFILE@START[/OWNER]" comma-separated, e.g. "0:3g.40gb@0/job42,1:1g.10gb@6"
//   demand:  "PROFILE:COUNT" comma-separated, in priority order, e.g. "7g.80gb:1,1g.10gb:4"
#pragma once

#include <string>
#include <vector>

#include "vgpu/core/planner.h"

namespace vgpuctl {

struct RunningSpec {
  int gpu = 0;
  std::string profile;
  int start = 0;
  std::string owner;
};

vgpu::Result<std::vector<RunningSpec>> parse_running(std::string_view text);
vgpu::Result<std::vector<vgpu::Demand>> parse_demand(std::string_view text);
std::vector<std::string> split_list(std::string_view text);

}  // namespace vgpuctl
