#include "vgpu/node/note_log.h"

#include <utility>

namespace vgpu {

std::vector<std::string> NoteLog::to_log(const std::vector<std::string>& notes, std::int64_t now) {
  std::vector<std::string> out;
  std::map<std::string, std::int64_t> standing;
  for (const auto& n : notes) {
    if (standing.contains(n)) continue;  // the same note twice in a round is one line
    auto it = logged_at_.find(n);
    if (it != logged_at_.end() && now - it->second < repeat_s_) {
      standing.emplace(n, it->second);
      continue;
    }
    standing.emplace(n, now);
    out.push_back(n);
  }
  logged_at_ = std::move(standing);
  return out;
}

}  // namespace vgpu
