// atomic_replace, the one replacement every state file goes through, under injected syscall
// failures and crashes: the target is always the old or the new content, whole, and no temporary
// is left behind by a failure it reports.
#include "vgpu/contract/atomic_file.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fault_file_system.h"

namespace vgpu::contract {
namespace {

namespace fs = std::filesystem;
using testing::FaultFileSystem;
using testing::Op;

class AtomicReplace : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("vgpu-atomic-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name()))
              .string();
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir + "/state.json") << "old\n";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string content() {
    std::ifstream in(dir + "/state.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool temporaries_left() {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
    return false;
  }
  std::string dir;
  FaultFileSystem faults;
};

TEST_F(AtomicReplace, ReplacesTheContentWithTheModeAskedForWhateverTheUmask) {
  const mode_t old_umask = ::umask(077);
  auto ok = atomic_replace(faults, dir, "state.json", "new\n", ReplaceOptions::durable_file(0644));
  ::umask(old_umask);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(content(), "new\n");
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/state.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_FALSE(temporaries_left());
}

TEST_F(AtomicReplace, DurableSyncsFileAndDirectoryAndNonDurableSyncsNothing) {
  ASSERT_TRUE(atomic_replace(faults, dir, "state.json", "a\n", ReplaceOptions::durable_file(0600)));
  auto syncs = [&] {
    int n = 0;
    for (const auto& c : faults.calls()) n += c.starts_with("fsync ");
    return n;
  };
  EXPECT_EQ(syncs(), 2);
  ASSERT_TRUE(atomic_replace(faults, dir, "state.json", "b\n", ReplaceOptions::rebuildable_file(0600)));
  EXPECT_EQ(syncs(), 2);
  EXPECT_EQ(content(), "b\n");
}

TEST_F(AtomicReplace, NoSpaceKeepsTheOldContentAndNamesTheSyscallAndPath) {
  faults.add({.op = Op::write, .path_contains = "state.json.tmp.", .error = ENOSPC});
  auto r = atomic_replace(faults, dir, "state.json", "new\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::io);
  const std::string temp = dir + "/state.json.tmp." + std::to_string(::getpid());
  EXPECT_NE(
      r.error().message.find(dir + "/state.json not changed: write " + temp + ": No space left on device (errno 28)"),
      std::string::npos)
      << r.error().message;
  EXPECT_EQ(content(), "old\n");
  EXPECT_FALSE(temporaries_left());
}

TEST_F(AtomicReplace, EveryFailureBeforeTheRenameKeepsTheOldContent) {
  for (Op op : {Op::open, Op::fchmod, Op::write, Op::fsync, Op::close, Op::rename}) {
    faults.clear();
    faults.add({.op = op, .path_contains = ".tmp.", .error = EIO});
    if (op == Op::rename) faults.add({.op = op, .error = EIO});
    auto r = atomic_replace(faults, dir, "state.json", "new\n");
    EXPECT_FALSE(r) << testing::op_name(op);
    EXPECT_EQ(content(), "old\n") << testing::op_name(op);
    EXPECT_FALSE(temporaries_left()) << testing::op_name(op);
  }
}

TEST_F(AtomicReplace, DirectoryFsyncFailureSaysTheNewContentIsInPlace) {
  faults.add({.op = Op::fsync, .nth = 2, .error = EIO});  // the temporary, then the directory
  auto r = atomic_replace(faults, dir, "state.json", "new\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(dir + "/state.json replaced but may not survive a power loss: fsync " + dir),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(content(), "new\n");
}

TEST_F(AtomicReplace, ACrashAtAnySyscallLeavesTheOldOrTheNewContentWhole) {
  for (Op op : {Op::open, Op::write, Op::fsync, Op::close, Op::rename}) {
    for (bool short_write : {false, true}) {
      if (short_write && op != Op::write) continue;
      std::ofstream(dir + "/state.json") << "old\n";
      pid_t child = ::fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        FaultFileSystem crashing;
        testing::Fault f{.op = op, .crash = true};
        if (short_write) f.short_write = 2;
        crashing.add(f);
        (void)atomic_replace(crashing, dir, "state.json", std::string(4096, 'n'));
        ::_exit(0);
      }
      int status = 0;
      ASSERT_EQ(::waitpid(child, &status, 0), child);
      ASSERT_TRUE(WIFEXITED(status));
      EXPECT_EQ(WEXITSTATUS(status), testing::kCrashExitCode) << testing::op_name(op);
      const std::string now = content();
      EXPECT_TRUE(now == "old\n" || now == std::string(4096, 'n')) << testing::op_name(op) << ": " << now.size();
    }
  }
}

TEST_F(AtomicReplace, TheTemporaryGoesWhereReadersDoNotScan) {
  fs::create_directories(dir + "/tmp");
  faults.add({.op = Op::rename, .error = EXDEV});
  auto r = atomic_replace(faults, dir, "state.json", "new\n",
                          ReplaceOptions::durable_file(0600).with_temp_dir(dir + "/tmp"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(dir + "/tmp/state.json.tmp."), std::string::npos) << r.error().message;
  EXPECT_FALSE(temporaries_left());
  faults.clear();
  ASSERT_TRUE(atomic_replace(faults, dir, "state.json", "new\n",
                             ReplaceOptions::durable_file(0600).with_temp_dir(dir + "/tmp")));
  EXPECT_EQ(content(), "new\n");
  EXPECT_TRUE(fs::is_empty(dir + "/tmp"));
}

}  // namespace
}  // namespace vgpu::contract
