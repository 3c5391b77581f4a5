// Which of a planner round's notes go to the log. A round runs every few seconds, and a standing
// condition (shares pending past the node's total, a shrink slurmctld has not confirmed yet, a
// starving type) would otherwise write the same line every round and bury the lines that change.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vgpu {

class NoteLog {
 public:
  // A note that persists is logged again every `repeat_s`, so the log still shows it standing.
  explicit NoteLog(std::int64_t repeat_s) : repeat_s_(repeat_s) {}

  // The notes of a round at `now` to log: those the round before did not have (a note whose text
  // changed is a new one), and those last logged `repeat_s` ago or longer. A note that clears and
  // comes back is logged again at once.
  std::vector<std::string> to_log(const std::vector<std::string>& notes, std::int64_t now);

 private:
  std::int64_t repeat_s_;
  std::map<std::string, std::int64_t> logged_at_;  // the notes standing, and when each was last logged
};

}  // namespace vgpu
