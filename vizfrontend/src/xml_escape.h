// Escaping for text that goes into libvirt domain XML. Every value that did not come from
// our own string literals passes through here, so a job name cannot close a tag or an attribute.
#pragma once

#include <string>
#include <string_view>

namespace vgpu::viz {

// Escapes &, <, >, ' and " so the result is safe both as element text and inside an attribute
// quoted with either quote character. Control characters that XML 1.0 forbids (everything below
// 0x20 except tab, LF, CR) are replaced by '?', because libvirt's parser would reject the
// whole document otherwise and an escape like &#1; is not legal XML 1.0 either.
std::string xml_escape(std::string_view text);

}  // namespace vgpu::viz
