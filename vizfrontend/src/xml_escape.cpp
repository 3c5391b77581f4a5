#include "xml_escape.h"

namespace vgpu::viz {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&apos;"; break;
      case '"': out += "&quot;"; break;
      case '\t':
      case '\n':
      case '\r': out += c; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace vgpu::viz
