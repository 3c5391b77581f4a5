// Device confinement on the node: an instance's two capability files (the driver's gate to a MIG
// instance) belong to the job's user while it runs and to root otherwise, found through the
// driver's mig-minors and the GPU's device minor. Run against a driver tree in a temporary
// directory; chown needs root, so the tests skip elsewhere.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
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

// GPU index 0 is device minor 3: mig-minors names GPUs by minor, the ledger by index.
class TwoGpus final : public GpuReader {
 public:
  std::string_view backend_name() const override { return "test"; }
  std::string unavailable_reason() const override { return ""; }
  Result<std::vector<GpuInfo>> discover() override {
    GpuInfo a, b;
    a.index = 0;
    a.minor = 3;
    b.index = 1;
    b.minor = 0;
    return std::vector<GpuInfo>{a, b};
  }
  Result<GpuModel> read_catalog(int) override { return fail(ErrorCode::unavailable, "not here"); }
  Result<std::vector<InstanceInfo>> list_instances(int) override { return std::vector<InstanceInfo>{}; }
};

class CapabilityFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "changing a file's owner needs root";
    char tmpl[] = "/tmp/vgpu-caps-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root = tmpl;
    fs::create_directories(root / "proc/driver/nvidia-caps");
    fs::create_directories(root / "dev/nvidia-caps");
    std::ofstream(root / "proc/driver/nvidia-caps/mig-minors")
        << "config 1\nmonitor 2\ngpu0/gi7/access 66\ngpu0/gi7/ci0/access 67\ngpu3/gi7/access 300\n"
           "gpu3/gi7/ci0/access 301\ngpu3/gi8/access 310\ngpu3/gi8/ci0/access 311\n";
    std::ofstream(root / "proc/devices")
        << "Character devices:\n  1 mem\n195 nvidia\n241 nvidia-caps\n\nBlock devices:\n  8 sd\n";
    // What the driver shows while GPU instance 7 and its compute instance 0 exist on both GPUs.
    for (int gpu : {0, 3}) {
      fs::create_directories(root / fmt::format("proc/driver/nvidia/capabilities/gpu{}/mig/gi7/ci0", gpu));
      std::ofstream(gi_access(gpu)) << "DeviceFileMinor: 300\nDeviceFileMode: 292\nDeviceFileModify: 1\n";
      std::ofstream(ci_access(gpu)) << "DeviceFileMinor: 301\nDeviceFileMode: 292\nDeviceFileModify: 1\n";
    }
    access = agent::make_capability_file_access(root.string(), gpus);
    instance.gpu = 0;
    instance.gpu_instance_id = 7;
    instance.compute_instance_id = 0;
    instance.mig_uuid = "MIG-test";
  }
  void TearDown() override {
    if (!root.empty()) fs::remove_all(root);
  }
  fs::path cap(int minor) const { return root / fmt::format("dev/nvidia-caps/nvidia-cap{}", minor); }
  fs::path gi_access(int gpu) const {
    return root / fmt::format("proc/driver/nvidia/capabilities/gpu{}/mig/gi7/access", gpu);
  }
  fs::path ci_access(int gpu) const {
    return root / fmt::format("proc/driver/nvidia/capabilities/gpu{}/mig/gi7/ci0/access", gpu);
  }
  static std::string text(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // As nvidia-modprobe leaves a GI/CI file with the driver's default mode: anyone can open it.
  void world_readable(int minor) const {
    std::ofstream(cap(minor)) << "";
    ::chmod(cap(minor).c_str(), 0444);
  }
  fs::path root;
  TwoGpus gpus;
  std::unique_ptr<InstanceAccess> access;
  LedgerInstance instance;
};

TEST_F(CapabilityFiles, GrantMakesBothFilesTheUsersAloneAndRevokeGivesThemToRoot) {
  world_readable(300);
  world_readable(301);
  ASSERT_TRUE(access->grant(instance, 1001));
  EXPECT_EQ(owner_and_mode(cap(300)), std::make_pair(1001u, 0400u));
  EXPECT_EQ(owner_and_mode(cap(301)), std::make_pair(1001u, 0400u));
  EXPECT_FALSE(fs::exists(cap(66))) << "GPU index 0 is device minor 3, not gpu0";
  ASSERT_TRUE(access->revoke(instance));
  EXPECT_EQ(owner_and_mode(cap(300)), std::make_pair(0u, 0400u));
  EXPECT_EQ(owner_and_mode(cap(301)), std::make_pair(0u, 0400u));
}

// A shared instance of several users (share_across_users): each user's MPS server opens it, so the
// first user owns the files and the others read them through the access ACL; nobody else can, and
// a later grant to one user or a revoke leaves no ACL behind. Checked by opening the file as each
// user, as the driver's gate is the open itself.
TEST_F(CapabilityFiles, InstanceOfSeveralUsersOpensForEachOfThemAndNobodyElse) {
  world_readable(300);
  world_readable(301);
  fs::permissions(root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  auto shared = access->grant_users(instance, {"daemon", "nobody"});
  if (!shared && shared.error().message.find("takes no ACLs") != std::string::npos)
    GTEST_SKIP() << shared.error().message;
  ASSERT_TRUE(shared) << shared.error().message;
  const unsigned daemon_uid = 1, nobody_uid = 65534, bin_uid = 2;
  for (int minor : {300, 301}) {
    EXPECT_EQ(owner_and_mode(cap(minor)), std::make_pair(daemon_uid, 0440u)) << "the mask shows as group bits";
    EXPECT_TRUE(opens_as(cap(minor), daemon_uid));
    EXPECT_TRUE(opens_as(cap(minor), nobody_uid));
    EXPECT_FALSE(opens_as(cap(minor), bin_uid)) << "a user who holds no share";
  }
  ASSERT_TRUE(access->grant_users(instance, {"nobody"}));
  EXPECT_EQ(owner_and_mode(cap(300)), std::make_pair(nobody_uid, 0400u));
  EXPECT_FALSE(opens_as(cap(300), daemon_uid)) << "the user who left";
  EXPECT_EQ(::getxattr(cap(300).c_str(), "system.posix_acl_access", nullptr, 0), -1) << "no ACL left";
  ASSERT_TRUE(access->grant_users(instance, {"daemon", "nobody"}));
  ASSERT_TRUE(access->revoke(instance));
  EXPECT_EQ(owner_and_mode(cap(301)), std::make_pair(0u, 0400u));
  EXPECT_FALSE(opens_as(cap(301), nobody_uid));
  EXPECT_EQ(::getxattr(cap(301).c_str(), "system.posix_acl_access", nullptr, 0), -1) << "no ACL left";
}

TEST_F(CapabilityFiles, UserUnknownOnTheNodeIsNamedAndNothingChanges) {
  world_readable(300);
  world_readable(301);
  auto r = access->grant_users(instance, {"nobody", "no-such-user-vgpu"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("user 'no-such-user-vgpu': not known on this node"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(owner_and_mode(cap(300)), std::make_pair(0u, 0444u));
}

// nvidia-modprobe, which any user's CUDA program runs setuid root, would otherwise put the files
// back to the driver's mode: the driver's per-capability setting says not to.
TEST_F(CapabilityFiles, BothCapabilitiesAreToldNotToLetNvidiaModprobeResetTheirFiles) {
  world_readable(300);
  world_readable(301);
  ASSERT_TRUE(access->grant(instance, 1001));
  EXPECT_EQ(text(gi_access(3)), "DeviceFileModify: 0\n");
  EXPECT_EQ(text(ci_access(3)), "DeviceFileModify: 0\n");
  EXPECT_EQ(text(gi_access(0)).find("DeviceFileModify: 0"), std::string::npos) << "another GPU's capability";
}

TEST_F(CapabilityFiles, InstanceWhoseDriverEntryIsGoneIsRefusedBeforeAnyFileChanges) {
  world_readable(300);
  world_readable(301);
  fs::remove_all(root / "proc/driver/nvidia/capabilities/gpu3/mig/gi7");
  auto granted = access->grant(instance, 1001);
  ASSERT_FALSE(granted);
  EXPECT_NE(granted.error().message.find("gpu3/mig/gi7/access: No such file or directory"), std::string::npos)
      << granted.error().message;
  EXPECT_EQ(owner_and_mode(cap(300)), std::make_pair(0u, 0444u));
}

// The planner's sweep on a node where the driver's defaults left files open to all: every file no
// job's instance holds becomes root's alone; a running job's stay its user's.
TEST_F(CapabilityFiles, SweepMakesEveryFileNoJobHoldsRootsAlone) {
  for (int minor : {300, 301, 310, 311}) world_readable(minor);
  ASSERT_TRUE(access->grant(instance, 1001));
  Ledger ledger;
  ledger.gpus.push_back({0, "GPU-0", "H100-80GB", "0000:00:06.0"});
  LedgerInstance held = instance;
  held.job = 42;
  ledger.instances.push_back(held);
  auto secured = access->secure_unheld(ledger);
  ASSERT_TRUE(secured) << secured.error().message;
  EXPECT_EQ(*secured, 2);
  EXPECT_EQ(owner_and_mode(cap(310)), std::make_pair(0u, 0400u));
  EXPECT_EQ(owner_and_mode(cap(311)), std::make_pair(0u, 0400u));
  EXPECT_EQ(owner_and_mode(cap(300)), std::make_pair(1001u, 0400u));
  EXPECT_EQ(owner_and_mode(cap(301)), std::make_pair(1001u, 0400u));
  EXPECT_FALSE(fs::exists(cap(66))) << "a missing file is left for the prolog";
  auto again = access->secure_unheld(ledger);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0);
}

TEST_F(CapabilityFiles, MissingFileIsCreatedAsTheDriversCharacterDevice) {
  instance.gpu = 1;  // device minor 0: gpu0/gi7 -> 66, 67 (no file: NVreg_ModifyDeviceFiles=0)
  auto granted = access->grant(instance, 1001);
  if (!granted && granted.error().message.find("mknod") != std::string::npos &&
      granted.error().message.find("Operation not permitted") != std::string::npos)
    GTEST_SKIP() << "no CAP_MKNOD here: " << granted.error().message;
  ASSERT_TRUE(granted) << granted.error().message;
  for (int minor : {66, 67}) {
    struct stat st {};
    ASSERT_EQ(::lstat(cap(minor).c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(major(st.st_rdev), 241u);
    EXPECT_EQ(minor(st.st_rdev), static_cast<unsigned>(minor));
    EXPECT_EQ(owner_and_mode(cap(minor)), std::make_pair(1001u, 0400u));
  }
}

TEST_F(CapabilityFiles, SymbolicLinkWhereACapabilityFileBelongsIsRefusedNotFollowed) {
  const fs::path target = root / "elsewhere";
  std::ofstream(target) << "x";
  ::chmod(target.c_str(), 0644);
  fs::create_symlink(target, cap(300));
  auto granted = access->grant(instance, 1001);
  ASSERT_FALSE(granted);
  EXPECT_NE(granted.error().message.find("nvidia-cap300: not a character device"), std::string::npos)
      << granted.error().message;
  EXPECT_EQ(owner_and_mode(target), std::make_pair(0u, 0644u));
}

TEST_F(CapabilityFiles, NodeWithoutTheDriversMinorsSaysWhatItCannotDo) {
  fs::remove(root / "proc/driver/nvidia-caps/mig-minors");
  auto granted = access->grant(instance, 1001);
  ASSERT_FALSE(granted);
  EXPECT_NE(granted.error().message.find("cannot confine MIG instances"), std::string::npos) << granted.error().message;
  EXPECT_NE(granted.error().message.find("mig-minors: cannot open"), std::string::npos) << granted.error().message;
  // Each planner round sweeps: a node without a MIG GPU has nothing to sweep, and says nothing.
  auto swept = access->secure_unheld(Ledger{});
  ASSERT_TRUE(swept) << swept.error().message;
  EXPECT_EQ(*swept, 0);
  Ledger with_gpu;
  with_gpu.gpus.push_back({0, "GPU-0", "H100-80GB", "0000:00:06.0"});
  EXPECT_FALSE(access->secure_unheld(with_gpu));
}

TEST_F(CapabilityFiles, InstanceTheDriverHasNoMinorsForIsAnErrorNamingIt) {
  instance.gpu_instance_id = 9;
  auto granted = access->grant(instance, 1001);
  ASSERT_FALSE(granted);
  EXPECT_NE(granted.error().message.find("no gpu3/gi9/ci0/access entry"), std::string::npos) << granted.error().message;
}

}  // namespace
}  // namespace vgpu
