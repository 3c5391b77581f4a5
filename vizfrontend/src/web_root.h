// The directory the node's websockify serves: our session page (vgpu-viz.html, compiled into the
// binary) next to noVNC's own modules (core/, vendor/), linked from the noVNC package. Rebuilt
// each time the proxy starts, so an upgraded vgpu-viz serves its own page.
#pragma once

#include <string>
#include <string_view>

#include "vgpu/base/error.h"

namespace vgpu::viz {

// The page every session URL opens.
inline constexpr std::string_view kSessionPageName = "vgpu-viz.html";

// Writes <dir>/vgpu-viz.html and points <dir>/core and <dir>/vendor at novnc_dir's. Fails, naming
// the path, when novnc_dir has no core/rfb.js (noVNC not installed where viz.json says).
Result<void> prepare_web_root(const std::string& dir, const std::string& novnc_dir);

}  // namespace vgpu::viz
