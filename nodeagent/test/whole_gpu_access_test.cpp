// Device confinement of a whole GPU (MIG off) on the node: its device file /dev/nvidia<minor>
// belongs to the job's user (or its shares' users) while it runs and to root otherwise, and only
// where the driver leaves device files alone (ModifyDeviceFiles: 0); MIG instances go to the
// capability-file access.
// Run against a driver tree in a temporary directory; chown needs root, so the tests skip elsewhere.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "adapters.h"
#include "file_access_probe.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
using testing::opens_as;
using testing::owner_and_mode;

// GPU 0 (minor 4) runs with MIG off, GPU 1 (minor 5) with MIG on.
class OneWholeOneMig final : public GpuReader {
 public:
  std::string_view backend_name() const override { return "test"; }
  std::string unavailable_reason() const override { return ""; }
  Result<std::vector<GpuInfo>> discover() override {
    GpuInfo a, b;
    a.index = 0;
    a.minor = 4;
    a.mig_current = a.mig_pending = MigMode::disabled;
    b.index = 1;
    b.minor = 5;
    b.mig_current = b.mig_pending = MigMode::enabled;
    return std::vector<GpuInfo>{a, b};
  }
  Result<GpuModel> read_catalog(int) override { return fail(ErrorCode::unavailable, "not here"); }
  Result<std::vector<InstanceInfo>> list_instances(int) override { return std::vector<InstanceInfo>{}; }
};

// The MIG side, recorded: what reached it.
class RecordingMigAccess final : public InstanceAccess {
 public:
  Result<void> grant(const LedgerInstance& i, unsigned) override { return note("grant " + i.mig_uuid); }
  Result<void> grant_users(const LedgerInstance& i, const std::vector<std::string>&) override {
    return note("grant_users " + i.mig_uuid);
  }
  Result<void> revoke(const LedgerInstance& i) override { return note("revoke " + i.mig_uuid); }
  Result<int> secure_unheld(const Ledger&) override {
    calls->push_back("secure_unheld");
    return 0;
  }
  Result<void> note(std::string what) {
    calls->push_back(std::move(what));
    return {};
  }
  std::vector<std::string>* calls = nullptr;
};

class WholeGpuAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "changing a file's owner needs root";
    char tmpl[] = "/tmp/vgpu-whole-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root = tmpl;
    fs::permissions(root, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    fs::create_directories(root / "proc/driver/nvidia");
    fs::create_directories(root / "dev");
    params(0);
    // As the driver makes them: DeviceFileMode 438 (0666), root's.
    for (int minor : {4, 5}) {
      std::ofstream(gpu_file(minor)) << "";
      ::chmod(gpu_file(minor).c_str(), 0666);
    }
    auto mig = std::make_unique<RecordingMigAccess>();
    mig->calls = &mig_calls;
    access = agent::make_whole_gpu_access(root.string(), gpus, std::move(mig));
    whole.gpu = 0;
    whole.profile = "whole.80gb";
    whole.mig_uuid = "GPU-00000000-1111-2222-3333-444444444444";
    ledger.gpus.push_back({0, whole.mig_uuid, "H100-80GB", "00000000:01:00.0"});
    ledger.gpus.push_back({1, "GPU-00000000-1111-2222-3333-555555555555", "H100-80GB", "00000000:02:00.0"});
  }
  void TearDown() override {
    if (!root.empty()) fs::remove_all(root);
  }
  // /proc/driver/nvidia/params as the driver prints it (captured on the lent H200, which has 1).
  void params(int modify) const {
    std::ofstream(root / "proc/driver/nvidia/params") << "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: " << modify
                                                      << "\nDeviceFileUID: 0\nDeviceFileGID: 0\nDeviceFileMode: 438\n";
  }
  fs::path gpu_file(int minor) const { return root / fmt::format("dev/nvidia{}", minor); }
  fs::path root;
  OneWholeOneMig gpus;
  std::vector<std::string> mig_calls;
  std::unique_ptr<InstanceAccess> access;
  LedgerInstance whole;
  Ledger ledger;
};

TEST_F(WholeGpuAccess, GrantMakesTheGpuFileTheUsersAloneAndRevokeGivesItToRoot) {
  EXPECT_TRUE(opens_as(gpu_file(4), 1002, O_RDWR)) << "the driver's default: anyone";
  ASSERT_TRUE(access->grant(whole, 1001));
  EXPECT_EQ(owner_and_mode(gpu_file(4)), std::make_pair(1001U, 0600U));
  EXPECT_TRUE(opens_as(gpu_file(4), 1001, O_RDWR));
  EXPECT_FALSE(opens_as(gpu_file(4), 1002, O_RDWR));
  ASSERT_TRUE(access->revoke(whole));
  EXPECT_EQ(owner_and_mode(gpu_file(4)), std::make_pair(0U, 0600U));
  EXPECT_FALSE(opens_as(gpu_file(4), 1001, O_RDWR));
  EXPECT_TRUE(mig_calls.empty());
}

TEST_F(WholeGpuAccess, ADriverThatResetsDeviceFilesMakesWholeGpusUnconfinable) {
  EXPECT_EQ(access->whole_gpus_unconfinable(), "");
  params(1);  // with or without an nvidia-modprobe: NVML and CUDA reset the file themselves
  const std::string why = access->whole_gpus_unconfinable();
  EXPECT_NE(why.find("proc/driver/nvidia/params: ModifyDeviceFiles: 1, so NVML and CUDA"), std::string::npos) << why;
  auto granted = access->grant(whole, 1001);
  ASSERT_FALSE(granted);
  EXPECT_EQ(granted.error().code, ErrorCode::unavailable);
  EXPECT_EQ(owner_and_mode(gpu_file(4)), std::make_pair(0U, 0666U)) << "nothing changed";
}

TEST_F(WholeGpuAccess, ANodeWithoutTheDriversParamsSaysWhich) {
  fs::remove(root / "proc/driver/nvidia/params");
  EXPECT_EQ(access->whole_gpus_unconfinable(), (root / "proc/driver/nvidia/params").string() + ": cannot open");
}

TEST_F(WholeGpuAccess, UnheldWholeGpusAreLockedAndAGpuBackInMigModeGetsTheDriversMode) {
  ::chmod(gpu_file(5).c_str(), 0600);  // locked while GPU 1 was whole
  auto changed = access->secure_unheld(ledger);
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_EQ(*changed, 2);
  EXPECT_EQ(owner_and_mode(gpu_file(4)), std::make_pair(0U, 0600U));
  EXPECT_EQ(owner_and_mode(gpu_file(5)), std::make_pair(0U, 0666U)) << "MIG jobs open the GPU's file too";
  EXPECT_EQ(mig_calls, std::vector<std::string>{"secure_unheld"});
  changed = access->secure_unheld(ledger);
  ASSERT_TRUE(changed);
  EXPECT_EQ(*changed, 0);
}

TEST_F(WholeGpuAccess, AHeldWholeGpuStaysItsUsers) {
  ASSERT_TRUE(access->grant(whole, 1001));
  whole.job = 42;
  whole.user = "alice";
  whole.state = InstanceState::ready;
  ledger.instances.push_back(whole);
  ASSERT_TRUE(access->secure_unheld(ledger));
  EXPECT_EQ(owner_and_mode(gpu_file(4)), std::make_pair(1001U, 0600U));
}

TEST_F(WholeGpuAccess, ASymbolicLinkWhereTheGpuFileBelongsIsRefused) {
  fs::remove(gpu_file(4));
  fs::create_symlink("/etc/passwd", gpu_file(4));
  auto granted = access->grant(whole, 1001);
  ASSERT_FALSE(granted);
  EXPECT_EQ(granted.error().message, gpu_file(4).string() + ": not a character device");
}

TEST_F(WholeGpuAccess, MigInstancesGoToTheCapabilityFiles) {
  LedgerInstance mig;
  mig.gpu = 1;
  mig.profile = "1g.10gb";
  mig.mig_uuid = "MIG-a";
  ASSERT_TRUE(access->grant(mig, 1001));
  ASSERT_TRUE(access->revoke(mig));
  ASSERT_TRUE(access->grant_users(mig, {"daemon"}));
  EXPECT_EQ(mig_calls, (std::vector<std::string>{"grant MIG-a", "revoke MIG-a", "grant_users MIG-a"}));
}

// Shares of a whole GPU (MPS) held by two users' jobs: both open the GPU read-write, a third user
// cannot; once one user is left the file is that user's alone, and revoked it is root's, no ACL.
TEST_F(WholeGpuAccess, SharesOfAWholeGpuOpenItToEachHolderAndNobodyElse) {
  const unsigned daemon_uid = 1, nobody_uid = 65534, bin_uid = 2;
  LedgerInstance half = whole;  // named after its share type, not whole.<M>gb
  half.profile = "half";
  auto shared = access->grant_users(half, {"daemon", "nobody"});
  ASSERT_TRUE(shared) << shared.error().message;
  EXPECT_TRUE(opens_as(gpu_file(4), daemon_uid, O_RDWR));
  EXPECT_TRUE(opens_as(gpu_file(4), nobody_uid, O_RDWR));
  EXPECT_FALSE(opens_as(gpu_file(4), bin_uid, O_RDWR));
  EXPECT_FALSE(opens_as(gpu_file(4), bin_uid, O_RDONLY));
  ASSERT_TRUE(access->grant_users(half, {"nobody"}));
  EXPECT_EQ(owner_and_mode(gpu_file(4)), std::make_pair(nobody_uid, 0600U));
  EXPECT_FALSE(opens_as(gpu_file(4), daemon_uid, O_RDWR)) << "the ACL went with the other user";
  ASSERT_TRUE(access->grant_users(half, {"daemon", "nobody"}));
  ASSERT_TRUE(access->revoke(half));
  EXPECT_EQ(owner_and_mode(gpu_file(4)), std::make_pair(0U, 0600U));
  EXPECT_FALSE(opens_as(gpu_file(4), nobody_uid, O_RDWR));
  EXPECT_TRUE(mig_calls.empty());
}

TEST_F(WholeGpuAccess, SharesOfAWholeGpuFollowTheSameDriverRule) {
  params(1);
  auto shared = access->grant_users(whole, {"daemon", "nobody"});
  ASSERT_FALSE(shared);
  EXPECT_EQ(shared.error().code, ErrorCode::unavailable);
  EXPECT_EQ(owner_and_mode(gpu_file(4)), std::make_pair(0U, 0666U)) << "nothing changed";
  params(0);
  auto unknown = access->grant_users(whole, {"nobody", "no-such-user-vgpu"});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("no-such-user-vgpu"), std::string::npos) << unknown.error().message;
}

}  // namespace
}  // namespace vgpu
