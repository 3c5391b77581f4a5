// The probe's report: what NVML says about each GPU (attributes, MIG mode, every GPU-instance
// profile index with its answer or its exact NVML error, possible placements, existing instances)
// and how the catalog read from the device compares with the built-in one. The JSON is also a
// fake-NVML fixture (format "vgpu-nvml-probe"), so a recording from real hardware can be replayed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nvml_reader.h"

namespace vgpu::probe {

// Never throws and never fails: whatever NVML refuses is recorded in the report. With
// gpm_seconds > 0 each GPU also gets "activity": GPM utilisation and memory per MIG instance (or
// for the whole GPU with MIG off), between two samples that far apart. Each count in
// `choose_whole` adds to "whole_gpu_choices" what the whole-GPU placement gives a request for that
// many GPUs, all free, from the topology the report records.
nlohmann::json report(nvml::Reader& reader, const std::string& source, double gpm_seconds = 0,
                      const std::vector<int>& choose_whole = {});

}  // namespace vgpu::probe
