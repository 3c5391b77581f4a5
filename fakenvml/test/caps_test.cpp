// The fake driver's capability files behave as the driver and nvidia-modprobe do (caps.h): an
// instance's files appear world-readable, nvidia-modprobe puts back any file whose capability
// allows it, and a capability told "DeviceFileModify: 0" keeps the owner and mode it was given;
// GPU device files follow the module's ModifyDeviceFiles, NVML and CUDA's own reset included.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "caps.h"

namespace fakenvml {
namespace {

namespace fs = std::filesystem;

class FakeCapFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "changing a file's owner needs root";
    char tmpl[] = "/tmp/fakenvml-caps-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root = tmpl;
    fs::create_directories(root / "proc/driver/nvidia-caps");
    std::ofstream(root / "proc/driver/nvidia-caps/mig-minors")
        << "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngpu0/gi2/access 21\ngpu0/gi2/ci0/access "
           "22\n";
    ::setenv("VGPU_FAKE_NVML_DEVICE_ROOT", root.c_str(), 1);
    std::string error;
    auto loaded = CapFiles::from_env(error);
    ASSERT_TRUE(loaded) << error;
    caps = std::move(*loaded);
  }
  void TearDown() override {
    ::unsetenv("VGPU_FAKE_NVML_DEVICE_ROOT");
    if (!root.empty()) fs::remove_all(root);
  }
  fs::path dev(int minor) const { return root / ("dev/nvidia-caps/nvidia-cap" + std::to_string(minor)); }
  static std::pair<unsigned, unsigned> owner_and_mode(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return {st.st_uid, st.st_mode & 07777};
  }
  void give(int minor, unsigned uid) const {
    ASSERT_EQ(::chmod(dev(minor).c_str(), 0400), 0);
    ASSERT_EQ(::chown(dev(minor).c_str(), uid, 0), 0);
  }

  fs::path root;
  CapFiles caps;
};

TEST_F(FakeCapFiles, NewInstanceFilesAreWorldReadableAsTheDriverDefaultAllows) {
  caps.registered(0, 1, std::nullopt);
  caps.registered(0, 1, 0);
  EXPECT_EQ(owner_and_mode(dev(12)), std::make_pair(0u, 0444u));
  EXPECT_EQ(owner_and_mode(dev(13)), std::make_pair(0u, 0444u));
  EXPECT_TRUE(fs::exists(root / "proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci0/access"));
  auto paths = caps.paths(0, 1, 0);
  ASSERT_TRUE(paths);
  EXPECT_EQ(paths->first, dev(12).string());
  EXPECT_EQ(paths->second, dev(13).string());
}

TEST_F(FakeCapFiles, NvidiaModprobeResetsEveryFileExceptThoseOfCapabilitiesToldNotTo) {
  for (unsigned gi : {1u, 2u}) {
    caps.registered(0, gi, std::nullopt);
    caps.registered(0, gi, 0);
  }
  give(12, 65534);
  give(13, 65534);
  give(21, 65534);
  give(22, 65534);
  std::ofstream(root / "proc/driver/nvidia/capabilities/gpu0/mig/gi1/access") << "DeviceFileModify: 0\n";
  std::ofstream(root / "proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci0/access") << "DeviceFileModify: 0\n";
  auto changed = caps.modprobe_all();
  EXPECT_EQ(changed.size(), 2u);
  EXPECT_EQ(owner_and_mode(dev(12)), std::make_pair(65534u, 0400u));
  EXPECT_EQ(owner_and_mode(dev(13)), std::make_pair(65534u, 0400u));
  EXPECT_EQ(owner_and_mode(dev(21)), std::make_pair(0u, 0444u));
  EXPECT_EQ(owner_and_mode(dev(22)), std::make_pair(0u, 0444u));
}

TEST_F(FakeCapFiles, DestroyedInstanceLeavesNoDriverEntryButItsDeviceFiles) {
  caps.registered(0, 1, std::nullopt);
  caps.registered(0, 1, 0);
  caps.unregistered(0, 1, 0);
  EXPECT_FALSE(fs::exists(root / "proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci0/access"));
  EXPECT_TRUE(fs::exists(root / "proc/driver/nvidia/capabilities/gpu0/mig/gi1/access"));
  caps.unregistered(0, 1, std::nullopt);
  EXPECT_FALSE(fs::exists(root / "proc/driver/nvidia/capabilities/gpu0/mig/gi1"));
  EXPECT_TRUE(fs::exists(dev(12)));  // device nodes outlive the instance, as under /dev
}

// NVML and CUDA's own reset of a GPU's device file (caps.h, measured on a real H100): as root,
// owner and mode go back to the stated ones; as the file's owner, the mode; as anyone else, and
// with "ModifyDeviceFiles: 0", nothing.
TEST_F(FakeCapFiles, TheLibrariesResetAGpuFileInAnyProcessAllowedTo) {
  fs::create_directories(root / "proc/driver/nvidia");
  auto params = [&](int modify) {
    std::ofstream(root / "proc/driver/nvidia/params")
        << "ModifyDeviceFiles: " << modify << "\nDeviceFileUID: 0\nDeviceFileGID: 0\nDeviceFileMode: 438\n";
  };
  const fs::path gpu = caps.gpu_device_path(0);
  auto lock_to_nobody = [&] {
    caps.ensure_gpu_device(0);
    ASSERT_EQ(::chmod(gpu.c_str(), 0600), 0);
    ASSERT_EQ(::chown(gpu.c_str(), 65534, 0), 0);
  };
  params(1);
  lock_to_nobody();
  EXPECT_TRUE(caps.libraries_reset(1001).empty()) << "another user's process cannot change it";
  EXPECT_EQ(owner_and_mode(gpu), std::make_pair(65534u, 0600u));
  EXPECT_EQ(caps.libraries_reset(65534).size(), 1u);
  EXPECT_EQ(owner_and_mode(gpu), std::make_pair(65534u, 0666u)) << "the owner's process: the mode";
  lock_to_nobody();
  EXPECT_EQ(caps.libraries_reset(0).size(), 1u);
  EXPECT_EQ(owner_and_mode(gpu), std::make_pair(0u, 0666u)) << "root's process: owner and mode";
  params(0);
  lock_to_nobody();
  EXPECT_TRUE(caps.libraries_reset(0).empty());
  EXPECT_TRUE(caps.libraries_reset(65534).empty());
  EXPECT_EQ(owner_and_mode(gpu), std::make_pair(65534u, 0600u));
}

}  // namespace
}  // namespace fakenvml
