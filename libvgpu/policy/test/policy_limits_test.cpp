// A policy file at any size and of any kind, careless or hostile: the errors are capped (and the
// work with them), the file is read only when it is a small regular file nobody else can write,
// and every error, a number out of range included, says where it is.
#include <fcntl.h>
#include <gtest/gtest.h>

#include "read_text.h"
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vgpu/policy/json_source_map.h"
#include "vgpu/policy/policy.h"

namespace {

namespace fs = std::filesystem;
using vgpu::check_policy;
using vgpu::check_policy_file;
using vgpu::kMaxPolicyBytes;
using vgpu::kMaxPolicyDiagnostics;
using vgpu::load_policy_file;
// The fixture takes the name the tests are known by (PolicyCheck.*); the result type is Check.
using Check = vgpu::PolicyCheck;

const std::string kExample = std::string(VGPU_SOURCE_DIR) + "/examples/policy.json";

using vgpu::testing::read_text;

std::string all_text(const Check& check) {
  std::string out;
  for (const auto& d : check.diagnostics) out += d.to_string() + "\n";
  return out.empty() ? "(no errors)" : out;
}

class PolicyCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "vgpu-policy-limits-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Written with an explicit mode, whatever the umask, so the test means the same everywhere.
  std::string write(const std::string& name, std::string_view text, mode_t mode = 0644) const {
    std::string path = (dir_ / name).string();
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0) << path;
    for (std::string_view left = text; !left.empty();) {
      ssize_t n = ::write(fd, left.data(), left.size());
      EXPECT_GT(n, 0) << path;
      if (n <= 0) break;
      left.remove_prefix(static_cast<std::size_t>(n));
    }
    EXPECT_EQ(::fchmod(fd, mode), 0);
    ::close(fd);
    return path;
  }

  // A refusal to read: one io_error diagnostic, at line 0, naming the file.
  static void expect_refused(const Check& check, const std::string& path, std::string_view why) {
    EXPECT_TRUE(check.io_error) << all_text(check);
    ASSERT_EQ(check.diagnostics.size(), 1u) << all_text(check);
    const auto& d = check.diagnostics[0];
    EXPECT_EQ(d.file, path);
    EXPECT_EQ(d.line, 0);
    EXPECT_TRUE(d.to_string().starts_with(path + ": cannot read: ")) << d.to_string();
    EXPECT_NE(d.message.find(why), std::string::npos) << "wanted \"" << why << "\" in: " << d.message;
    EXPECT_FALSE(check.policy);
  }

  fs::path dir_;
};

// The example with partitions.infer.gpus holding `count` copies of 64 (each one out of 0..63).
std::string example_with_bad_gpus(std::size_t count) {
  auto doc = nlohmann::json::parse(read_text(kExample));
  doc["partitions"]["infer"]["gpus"] = nlohmann::json(std::vector<int>(count, 64));
  return doc.dump();  // compact: a million elements stay under the size cap
}

TEST_F(PolicyCheck, CapsErrorsOnAMillionElementArray) {
  constexpr std::size_t kCount = 1'000'000;
  const std::string text = example_with_bad_gpus(kCount);
  ASSERT_LE(text.size(), kMaxPolicyBytes) << "the test file itself must be under the size cap";
  const std::string path = write("huge.json", text);

  auto check = check_policy_file(path);
  EXPECT_FALSE(check.io_error);
  ASSERT_EQ(check.diagnostics.size(), kMaxPolicyDiagnostics);
  EXPECT_EQ(check.unlisted, kCount - kMaxPolicyDiagnostics);
  EXPECT_EQ(check.error_count(), kCount);
  EXPECT_EQ(check.unlisted_line(), "... and 999980 more errors");
  // The ones kept are the first ones, in file order, each with its position.
  for (std::size_t i = 0; i < check.diagnostics.size(); ++i) {
    const auto& d = check.diagnostics[i];
    EXPECT_EQ(d.path, "partitions.infer.gpus[" + std::to_string(i) + "]") << d.to_string();
    EXPECT_EQ(d.message, "must be an integer in 0..63, got 64");
    EXPECT_EQ(d.line, 1);
    if (i > 0) {
      EXPECT_EQ(d.column, check.diagnostics[i - 1].column + 3);  // "64,"
    }
  }

  // The Result form joins the listed errors, then says how many more there are.
  auto loaded = load_policy_file(path);
  ASSERT_FALSE(loaded);
  const std::string& message = loaded.error().message;
  EXPECT_EQ(std::ranges::count(message, '\n'), static_cast<long>(kMaxPolicyDiagnostics));
  EXPECT_TRUE(message.ends_with("\n... and 999980 more errors")) << message.substr(message.size() - 100);
}

TEST_F(PolicyCheck, ListsEveryErrorUpToTheCap) {
  auto check = check_policy(example_with_bad_gpus(kMaxPolicyDiagnostics), "t.json");
  EXPECT_EQ(check.diagnostics.size(), kMaxPolicyDiagnostics);
  EXPECT_EQ(check.unlisted, 0u);
  EXPECT_EQ(check.unlisted_line(), "");
  check = check_policy(example_with_bad_gpus(kMaxPolicyDiagnostics + 1), "t.json");
  EXPECT_EQ(check.diagnostics.size(), kMaxPolicyDiagnostics);
  EXPECT_EQ(check.unlisted_line(), "... and 1 more error");
}

TEST_F(PolicyCheck, CapsDuplicateKeyErrors) {
  std::string text = R"({"version": 1, "partitions": {"p": {}})";
  for (int i = 0; i < 1000; ++i) text += R"(, "comment": "")";
  text += "}";
  auto check = check_policy(text, "t.json");
  ASSERT_EQ(check.diagnostics.size(), kMaxPolicyDiagnostics) << all_text(check);
  EXPECT_EQ(check.unlisted, 999u - kMaxPolicyDiagnostics);
  EXPECT_NE(check.diagnostics[0].message.find("duplicate key \"comment\""), std::string::npos);
}

TEST_F(PolicyCheck, RefusesAnIdleLayoutLongerThanEveryGpuCouldHoldAsAWhole) {
  // Placed entry by entry, 100000 entries would cost as many placements (and as many errors).
  auto doc = nlohmann::json::parse(read_text(kExample));
  doc["partitions"]["infer"]["idle_layout"] = nlohmann::json(std::vector<std::string>(100'000, "1g.10gb"));
  auto check = check_policy(doc.dump(), "t.json");
  ASSERT_EQ(check.diagnostics.size(), 1u) << all_text(check);
  EXPECT_EQ(check.diagnostics[0].path, "partitions.infer.idle_layout");
  EXPECT_TRUE(check.diagnostics[0].message.starts_with("lists 100000 instances, more than fit")) << all_text(check);
}

TEST_F(PolicyCheck, RefusesFileOverSizeCap) {
  // A valid policy padded with whitespace: only its size is wrong.
  std::string text = read_text(kExample);
  text.resize(kMaxPolicyBytes + 1, ' ');
  const std::string path = write("big.json", text);
  auto check = check_policy_file(path);
  expect_refused(
      check, path,
      std::to_string(kMaxPolicyBytes + 1) + " bytes, over the " + std::to_string(kMaxPolicyBytes) + " byte limit");
}

TEST_F(PolicyCheck, ReadsAFileOfExactlyTheSizeCap) {
  std::string text = read_text(kExample);
  text.resize(kMaxPolicyBytes, ' ');
  auto check = check_policy_file(write("at-cap.json", text));
  EXPECT_TRUE(check.ok()) << all_text(check);
}

TEST_F(PolicyCheck, LocatesOutOfRangeNumber) {
  // Numbers nlohmann::json cannot hold (beyond a double's range, as a 400-digit integer is too):
  // each reported where it stands, as any other error.
  for (const std::string& number :
       std::vector<std::string>{"1e400", "-1e400", "1" + std::string(400, '0'), "123.0e999999999999999999"}) {
    const std::string text =
        "{\"version\": 1,\n  \"partitions\": {\"p\": {\"max_instances_per_job\": " + number + "}}}";
    auto check = check_policy(text, "t.json");
    ASSERT_EQ(check.diagnostics.size(), 1u) << number << ":\n" << all_text(check);
    const auto& d = check.diagnostics[0];
    EXPECT_EQ(std::pair(d.line, d.column), std::pair(2, 49)) << d.to_string();
    EXPECT_NE(d.message.find("out of range"), std::string::npos) << d.to_string();
    EXPECT_TRUE(d.to_string().starts_with("t.json:2:49: invalid JSON: ")) << d.to_string();
  }
}

TEST_F(PolicyCheck, TakesATinyNumberAsZeroAsNlohmannDoes) {
  // 1e-400 underflows to 0: a number nlohmann holds, so the schema judges it, at its position.
  auto check =
      check_policy("{\"version\": 1,\n  \"partitions\": {\"p\": {\"max_instances_per_job\": 1e-400}}}", "t.json");
  ASSERT_EQ(check.diagnostics.size(), 1u) << all_text(check);
  EXPECT_EQ(check.diagnostics[0].to_string(),
            "t.json:2:49: partitions.p.max_instances_per_job: must be an integer >= 1, got 0.0");
}

TEST(JsonSourceMapLimits, RefusesANumberBeyondADoubleAtItsPosition) {
  for (const std::string& number : std::vector<std::string>{"1e400", "-1e400", "1" + std::string(400, '0'),
                                                            "0.000e99999999999999999999", "1.8e308"}) {
    auto map = vgpu::JsonSourceMap::scan("[0,\n " + number + "]");
    if (number.starts_with("0.000")) {  // zero, whatever its exponent
      EXPECT_TRUE(map) << number;
      continue;
    }
    ASSERT_FALSE(map) << number;
    EXPECT_EQ(std::pair(map.error().pos.line, map.error().pos.column), std::pair(2, 2)) << number;
    EXPECT_NE(map.error().message.find("out of range"), std::string::npos) << map.error().message;
  }
  // Within a double's range, or too small for one (nlohmann reads that as 0): accepted.
  for (std::string_view number : {"1.7976931348623157e308", "-2.2e-308", "1e-400", "18446744073709551616", "4.9e-324"})
    EXPECT_TRUE(vgpu::JsonSourceMap::scan("[" + std::string(number) + "]")) << number;
}

TEST(JsonSourceMapLimits, ARepeatedKeyMapsToItsLastValueOnly) {
  // nlohmann keeps the last of a repeated key, members and all: so do the positions.
  auto map = vgpu::JsonSourceMap::scan("{\"a\": {\"x\": 1},\n \"a\": {\"y\": 2}}");
  ASSERT_TRUE(map);
  ASSERT_NE(map->find("/a/y"), nullptr);
  EXPECT_EQ(map->find("/a/y")->value.line, 2);
  EXPECT_EQ(map->find("/a/x"), nullptr);
  ASSERT_EQ(map->duplicate_keys().size(), 1u);
  EXPECT_EQ(map->duplicate_keys()[0].pointer, "/a");
}

TEST(JsonSourceMapLimits, MapsEveryElementOfAMillionElementList) {
  std::string text = "[";
  for (int i = 0; i < 1'000'000; ++i) text += i ? ",0" : "0";
  text += "]";
  auto map = vgpu::JsonSourceMap::scan(text);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->size(), 1'000'001u);
  ASSERT_NE(map->find("/999999"), nullptr);
  EXPECT_EQ(map->find("/999999")->value.column, 2 * 999999 + 2);
  EXPECT_EQ(map->find("/1000000"), nullptr);
  EXPECT_EQ(map->find("/01"), nullptr) << "an index has no leading zero";
}

TEST_F(PolicyCheck, RefusesSymlink) {
  const std::string target = write("real.json", read_text(kExample));
  const std::string link = (dir_ / "policy.json").string();
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  expect_refused(check_policy_file(link), link, "refused: a symbolic link (never followed)");
  EXPECT_TRUE(check_policy_file(target).ok()) << "the file itself is fine";
}

TEST_F(PolicyCheck, RefusesFifoWithoutBlocking) {
  const std::string path = (dir_ / "policy.json").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // No writer ever comes: a reader that opens the FIFO plainly would wait forever. If it still
  // waits after the grace period, a writer opens and closes the FIFO to release it.
  auto pending = std::async(std::launch::async, [&] { return check_policy_file(path); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
    ADD_FAILURE() << "check_policy_file blocked on a FIFO";
  }
  expect_refused(pending.get(), path, "refused: not a regular file");
}

TEST_F(PolicyCheck, RefusesGroupOrOtherWritableFile) {
  const std::string text = read_text(kExample);
  const std::string group = write("group.json", text, 0664);
  expect_refused(check_policy_file(group), group, "refused: mode 0664 lets its group write it");
  const std::string other = write("other.json", text, 0606);
  expect_refused(check_policy_file(other), other, "refused: mode 0606 lets everyone write it");
}

TEST_F(PolicyCheck, RefusesFileOwnedByAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a file away";
  const std::string path = write("theirs.json", read_text(kExample));
  ASSERT_EQ(::chown(path.c_str(), 4242, 4242), 0);
  expect_refused(check_policy_file(path), path, "refused: owned by uid 4242 (trusted: uid 0)");
}

TEST_F(PolicyCheck, RefusesDirectory) {
  expect_refused(check_policy_file(dir_.string()), dir_.string(), "refused: a directory, not a regular file");
}

TEST_F(PolicyCheck, MissingFileIsAnIoErrorNamingIt) {
  const std::string path = (dir_ / "absent.json").string();
  expect_refused(check_policy_file(path), path, "no such file");
  auto loaded = load_policy_file(path);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code, vgpu::ErrorCode::io);
  EXPECT_EQ(loaded.error().message, path + ": cannot read: no such file");
}

}  // namespace
