// The crash-point seam: every listed point is reached by some code, names are unique, and an
// armed point kills the process once (SIGKILL), consuming its line of the arming file.
#include "vgpu/base/crash_point.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The source tree this test was compiled from (__FILE__ is absolute in CMake builds).
fs::path source_root() { return fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path(); }

// Every crash_point("...") call in the product's sources, name -> files.
std::map<std::string, std::set<std::string>> calls_in_sources() {
  std::map<std::string, std::set<std::string>> calls;
  for (const char* dir : {"libvgpu", "backends", "vizfrontend/src", "prolog", "epilog", "nodeagent", "gres_plugin"}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(source_root() / dir, ec); it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (ec) break;
      const auto& p = it->path();
      if (p.extension() != ".cpp" || p.string().find("/test/") != std::string::npos) continue;
      const std::string text = slurp(p);
      // crash_point("name"), and with_crash_points("name", "name") (contract/atomic_file.h); names
      // of [a-z_.]. A plain scan (std::regex trips GCC 12's -Wmaybe-uninitialized at -O2 under
      // -Werror).
      auto name_at = [&](std::size_t start) {
        auto end = start;
        while (end < text.size() &&
               (std::islower(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == '.'))
          ++end;
        return end;
      };
      const std::string file = fs::relative(p, source_root()).string();
      constexpr std::string_view open = "crash_point(\"";
      for (auto at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
        const auto start = at + open.size();
        const auto end = name_at(start);
        if (end > start && text.compare(end, 2, "\")") == 0) calls[text.substr(start, end - start)].insert(file);
      }
      constexpr std::string_view pair = "with_crash_points(\"";
      for (auto at = text.find(pair); at != std::string::npos; at = text.find(pair, at + 1)) {
        const auto first = at + pair.size();
        const auto first_end = name_at(first);
        constexpr std::string_view between = "\", \"";
        if (first_end == first || text.compare(first_end, between.size(), between) != 0) continue;
        const auto second = first_end + between.size();
        const auto second_end = name_at(second);
        if (second_end == second || text.compare(second_end, 2, "\")") != 0) continue;
        calls[text.substr(first, first_end - first)].insert(file);
        calls[text.substr(second, second_end - second)].insert(file);
      }
    }
  }
  return calls;
}

// Runs crash_point(point) in a child with the arming file `file`; true when SIGKILL ended it.
bool killed_at(vgpu::CrashPointName point, const std::string& file) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("VGPU_CRASH_POINT_FILE", file.c_str(), 1);
    vgpu::crash_point(point);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

class CrashPointFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vgpu-crash-point-test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
    file_ = (dir_ / "arm").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  void arm(const std::string& text) { std::ofstream(file_) << text; }

  fs::path dir_;
  std::string file_;
};

}  // namespace

TEST(CrashPoints, NamesAreUniqueDottedAndDescribed) {
  std::set<std::string_view> seen;
  // [a-z]+ "." [a-z_]+
  auto dotted = [](std::string_view n) {
    const auto dot = n.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == n.size()) return false;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const char c = n[i];
      const bool ok = i < dot ? (c >= 'a' && c <= 'z') : i == dot || (c >= 'a' && c <= 'z') || c == '_';
      if (!ok) return false;
    }
    return true;
  };
  for (const auto& p : vgpu::kCrashPoints) {
    EXPECT_TRUE(seen.insert(p.name).second) << p.name << " listed twice";
    EXPECT_TRUE(dotted(p.name)) << p.name;
    EXPECT_FALSE(p.what.empty()) << p.name;
  }
}

TEST(CrashPoints, EveryListedPointIsReachedBySomeCodeAndNoCallNamesAnUnlistedOne) {
  ASSERT_TRUE(fs::exists(source_root() / "base/include/vgpu/base/crash_point.h")) << source_root();
  const auto calls = calls_in_sources();
  for (const auto& p : vgpu::kCrashPoints)
    EXPECT_TRUE(calls.contains(std::string(p.name))) << p.name << ": listed in kCrashPoints but no code calls it";
  for (const auto& [name, files] : calls) {
    EXPECT_TRUE(vgpu::is_crash_point(name)) << name << " called in " << *files.begin() << " but not listed";
    EXPECT_EQ(files.size(), 1U) << name << " is called from several files; a point names one step";
  }
}

TEST_F(CrashPointFile, UnarmedOrOtherPointReturns) {
  EXPECT_FALSE(killed_at("prolog.after_claim", file_));  // no file at all
  arm("prolog.after_create\n");
  EXPECT_FALSE(killed_at("prolog.after_claim", file_));
  EXPECT_EQ(slurp(file_), "prolog.after_create\n");  // untouched
}

TEST_F(CrashPointFile, ArmedPointKillsOnceAndConsumesTheFile) {
  arm("prolog.after_claim\n");
  EXPECT_TRUE(killed_at("prolog.after_claim", file_));
  EXPECT_FALSE(fs::exists(file_));
  EXPECT_FALSE(killed_at("prolog.after_claim", file_));  // one-shot
  const std::string hits = slurp(file_ + ".hits");
  EXPECT_TRUE(hits.starts_with("prolog.after_claim ")) << hits;
  EXPECT_EQ(std::count(hits.begin(), hits.end(), '\n'), 1);
  for (const auto& e : fs::directory_iterator(dir_))  // no claim or temporary left
    EXPECT_TRUE(e.path().filename() == "arm.hits") << e.path();
}

TEST_F(CrashPointFile, LinesAreAQueue) {
  arm("epilog.after_retire\nepilog.after_retire\nrelease.after_scrub\n");
  EXPECT_FALSE(killed_at("release.after_scrub", file_));  // not first in line
  EXPECT_TRUE(killed_at("epilog.after_retire", file_));
  EXPECT_TRUE(killed_at("epilog.after_retire", file_));
  EXPECT_EQ(slurp(file_), "release.after_scrub\n");
  EXPECT_TRUE(killed_at("release.after_scrub", file_));
  EXPECT_FALSE(fs::exists(file_));
}

TEST_F(CrashPointFile, ProgramQualifierMatchesTheShortProcessName) {
  arm("ledger.after_rename@some-other-program\n");
  EXPECT_FALSE(killed_at("ledger.after_rename", file_));
  arm(std::string("ledger.after_rename@") + program_invocation_short_name + "\n");
  EXPECT_TRUE(killed_at("ledger.after_rename", file_));
  EXPECT_FALSE(fs::exists(file_));
}
