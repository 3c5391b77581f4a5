// The fake's shared instance state (state.h): every process that loads the fake sees the others'
// changes at once, as it would with the real driver, although each keeps its last parse.
#include "state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fakenvml {
namespace {

class FakeNvmlState : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fakenvml-state-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "state.json").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static nvmlReturn_t add_instance(StateStore& store, const std::string& gpu, unsigned id) {
    return store.with(true, [&](State& s) {
      GiState gi;
      gi.id = id;
      gi.serial = s.next_serial++;
      s.gpus[gpu].push_back(gi);
      return NVML_SUCCESS;
    });
  }
  static std::size_t instances(StateStore& store, const std::string& gpu) {
    std::size_t n = 0;
    store.with(false, [&](State& s) {
      n = s.gpus.count(gpu) ? s.gpus[gpu].size() : 0;
      return NVML_SUCCESS;
    });
    return n;
  }
  std::string file_text() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(FakeNvmlState, AChangeByAnotherProcessIsSeenAtOnceDespiteTheCachedParse) {
  StateStore prolog(path_), planner(path_);  // two processes' views of one driver
  ASSERT_EQ(add_instance(prolog, "GPU-a", 1), NVML_SUCCESS);
  EXPECT_EQ(instances(planner, "GPU-a"), 1u);
  EXPECT_EQ(instances(planner, "GPU-a"), 1u);  // now from its cache: the file did not change
  ASSERT_EQ(add_instance(prolog, "GPU-a", 2), NVML_SUCCESS);
  EXPECT_EQ(instances(planner, "GPU-a"), 2u);
  ASSERT_EQ(add_instance(planner, "GPU-a", 3), NVML_SUCCESS);
  EXPECT_EQ(instances(prolog, "GPU-a"), 3u);
}

TEST_F(FakeNvmlState, AShorterStateLeavesNothingOfTheLongerOneBehind) {
  StateStore store(path_);
  for (unsigned id = 1; id <= 5; ++id) ASSERT_EQ(add_instance(store, "GPU-a", id), NVML_SUCCESS);
  const std::size_t longer = file_text().size();
  ASSERT_EQ(store.with(true,
                       [](State& s) {
                         s.gpus.clear();
                         return NVML_SUCCESS;
                       }),
            NVML_SUCCESS);
  const std::string text = file_text();
  EXPECT_LT(text.size(), longer);
  StateStore fresh(path_);
  EXPECT_EQ(instances(fresh, "GPU-a"), 0u) << text;
}

TEST_F(FakeNvmlState, AFailedChangeIsNeitherWrittenNorCached) {
  StateStore store(path_);
  ASSERT_EQ(add_instance(store, "GPU-a", 1), NVML_SUCCESS);
  EXPECT_EQ(store.with(true,
                       [](State& s) {
                         s.gpus.clear();
                         return NVML_ERROR_INSUFFICIENT_RESOURCES;
                       }),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(instances(store, "GPU-a"), 1u);
  StateStore fresh(path_);
  EXPECT_EQ(instances(fresh, "GPU-a"), 1u);
}

}  // namespace
}  // namespace fakenvml
