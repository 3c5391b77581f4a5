#include "vgpu/node/note_log.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

using Notes = std::vector<std::string>;

TEST(PlannerNoteLog, AStandingNoteIsLoggedOnceThenOncePerRepeatPeriod) {
  NoteLog log(600);
  const std::string pending =
      "1 instance(s) of quarter not planned: 4 more units would pass the node's vgpu total of 9";
  EXPECT_EQ(log.to_log({pending}, 1000), Notes{pending});
  EXPECT_EQ(log.to_log({pending}, 1005), Notes{});
  EXPECT_EQ(log.to_log({pending}, 1599), Notes{});
  EXPECT_EQ(log.to_log({pending}, 1600), Notes{pending}) << "ten minutes on, it is said again";
  EXPECT_EQ(log.to_log({pending}, 1605), Notes{});
}

TEST(PlannerNoteLog, ANewOrChangedNoteIsLoggedAtOnceBesideStandingOnes) {
  NoteLog log(600);
  EXPECT_EQ(log.to_log({"a", "b"}, 0), (Notes{"a", "b"}));
  EXPECT_EQ(log.to_log({"a", "b", "c"}, 5), Notes{"c"});
  EXPECT_EQ(log.to_log({"b", "c2"}, 10), Notes{"c2"}) << "a note whose text changed is a new one";
}

TEST(PlannerNoteLog, ANoteThatClearsAndComesBackIsLoggedAgain) {
  NoteLog log(600);
  EXPECT_EQ(log.to_log({"shrink not yet confirmed"}, 0), Notes{"shrink not yet confirmed"});
  EXPECT_EQ(log.to_log({}, 5), Notes{});
  EXPECT_EQ(log.to_log({"shrink not yet confirmed"}, 10), Notes{"shrink not yet confirmed"});
}

TEST(PlannerNoteLog, TheSameNoteTwiceInARoundIsOneLine) {
  NoteLog log(600);
  EXPECT_EQ(log.to_log({"x", "x"}, 0), Notes{"x"});
  EXPECT_EQ(log.to_log({"x", "x"}, 1), Notes{});
}

}  // namespace
}  // namespace vgpu
