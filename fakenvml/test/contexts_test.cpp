// The fake driver's compute contexts: any user's process records its own, and one whose process
// has exited is no context.
#include "contexts.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace fakenvml {
namespace {

namespace fs = std::filesystem;

class FakeContexts : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("fake-contexts-" + std::to_string(::getpid()));
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(FakeContexts, AProcessContextIsListedWhileItRunsAndGoneOnceItExits) {
  fs::create_directories(dir);
  const std::string records = (dir / ".state.json.contexts").string();
  ASSERT_EQ(contexts_dir_for((dir / "state.json").string()), records);
  Contexts contexts(records);
  const ContextScope instance{"GPU-a", 3u, 7};
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  std::string error;
  ASSERT_TRUE(contexts.open(child, instance, error)) << error;
  ASSERT_TRUE(contexts.open(::getpid(), {"GPU-b", std::nullopt, 0}, error)) << error;
  EXPECT_TRUE(contexts.held(instance));
  EXPECT_FALSE(contexts.held({"GPU-a", 3u, 8})) << "a re-created instance is another one";
  EXPECT_EQ(contexts.live().size(), 2u);
  struct stat st {};
  ASSERT_EQ(::stat(records.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u) << "every user's process records its own";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(contexts.held(instance));
  EXPECT_TRUE(contexts.held({"GPU-b", std::nullopt, 0}));
}

TEST_F(FakeContexts, AStateKeptInMemoryKeepsItsContextsThere) {
  Contexts contexts("");
  std::string error;
  ASSERT_TRUE(contexts.open(::getpid(), {"GPU-a", std::nullopt, 0}, error));
  EXPECT_TRUE(contexts.held({"GPU-a", std::nullopt, 0}));
  EXPECT_FALSE(contexts.held({"GPU-a", 0u, 0}));
}

}  // namespace
}  // namespace fakenvml
