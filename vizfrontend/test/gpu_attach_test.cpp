#include "gpu_attach.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "fake_sysfs.h"

namespace vgpu::viz {
namespace {

using testing::FakeSysfs;
constexpr const char* kGpu = "0000:3b:00.0";

// The double itself must behave like the kernel, or the backend tests prove nothing.
TEST(FakeSysfsKernelRules, CreateAndRemoveFollowTheKernel) {
  FakeSysfs fs;
  fs.add_mdev_parent(kGpu, {{"nvidia-700", 1}});
  const std::string create = std::string("sys/class/mdev_bus/") + kGpu + "/mdev_supported_types/nvidia-700/create";
  const std::string u = "0d7c3e4c-2b4a-4ad5-9a53-1c1b6e0a7f02";
  EXPECT_EQ(fs.write(create, "not-a-uuid").error(), EINVAL);
  ASSERT_TRUE(fs.write(create, u));
  EXPECT_TRUE(fs.exists("sys/bus/mdev/devices/" + u + "/mdev_type"));
  EXPECT_EQ(fs.available(kGpu, "nvidia-700"), 0);
  EXPECT_EQ(fs.write(create, u).error(), EEXIST);
  EXPECT_EQ(fs.write(create, "1d7c3e4c-2b4a-4ad5-9a53-1c1b6e0a7f02").error(), EUSERS);
  EXPECT_EQ(fs.write(std::string("sys/class/mdev_bus/") + kGpu + "/mdev_supported_types/nvidia-999/create", u).error(),
            ENOENT);
  ASSERT_TRUE(fs.write("sys/bus/mdev/devices/" + u + "/remove", "1"));
  EXPECT_EQ(fs.mdev_count(), 0U);
  EXPECT_EQ(fs.available(kGpu, "nvidia-700"), 1);
  EXPECT_EQ(fs.write("sys/bus/mdev/devices/" + u + "/remove", "1").error(), ENOENT);
}

TEST(FakeSysfsKernelRules, ReadOnlyAttributesRefuseWrites) {
  FakeSysfs fs;
  fs.add_mdev_parent(kGpu, {{"nvidia-700", 1}});
  EXPECT_EQ(
      fs.write(std::string("sys/class/mdev_bus/") + kGpu + "/mdev_supported_types/nvidia-700/available_instances", "9")
          .error(),
      EACCES);
}

TEST(MdevUuid, EncodesTheJobAndDecodesOnlyOurs) {
  EXPECT_EQ(mdev_uuid_for_job(42), "76677a00-7669-4a00-8000-00000000002a");
  EXPECT_TRUE(check_uuid(mdev_uuid_for_job(4294967295U)));
  EXPECT_EQ(job_of_mdev_uuid(mdev_uuid_for_job(4294967295U)).value(), 4294967295U);
  EXPECT_FALSE(job_of_mdev_uuid("0d7c3e4c-2b4a-4ad5-9a53-1c1b6e0a7f02"));
  EXPECT_FALSE(job_of_mdev_uuid("76677a00-7669-4a00-8000-000000000000"));
}

TEST(MdevAttach, CreatesTheJobsMdevAndReleasesIt) {
  FakeSysfs fs;
  fs.add_mdev_parent(kGpu, {{"nvidia-700", 2}});
  auto attacher = make_attacher(AttachKind::mdev, fs);
  auto a = attacher->acquire({42, "nvidia-700", "", ""});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->device, GpuDevice{MdevHostdev{mdev_uuid_for_job(42)}});
  EXPECT_EQ(a->parent, kGpu);
  EXPECT_EQ(fs.available(kGpu, "nvidia-700"), 1);
  EXPECT_EQ(attacher->orphan_candidates(), std::vector<std::uint32_t>{42});
  ASSERT_TRUE(attacher->release(*a));
  EXPECT_EQ(fs.mdev_count(), 0U);
  EXPECT_EQ(fs.available(kGpu, "nvidia-700"), 2);
  EXPECT_TRUE(attacher->release(*a)) << "release must be idempotent (ENOENT = already gone)";
}

TEST(MdevAttach, NodeWithoutMdevSupportSaysSo) {
  FakeSysfs fs;
  std::filesystem::remove_all(fs.root() + "/sys/class/mdev_bus");
  auto a = make_attacher(AttachKind::mdev, fs)->acquire({42, "nvidia-700", "", ""});
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, ErrorCode::unavailable);
  EXPECT_NE(a.error().message.find("mdev type nvidia-700: this node has no mediated-device parents"), std::string::npos)
      << a.error().message;
}

TEST(MdevAttach, TypeNotOfferedIsNotFound) {
  FakeSysfs fs;
  fs.add_mdev_parent(kGpu, {{"nvidia-700", 2}});
  auto a = make_attacher(AttachKind::mdev, fs)->acquire({42, "nvidia-999", "", ""});
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, ErrorCode::not_found);
  EXPECT_EQ(fs.writes(), 0U);
}

TEST(MdevAttach, NoInstanceLeftIsNoCapacityAndWritesNothing) {
  FakeSysfs fs;
  fs.add_mdev_parent(kGpu, {{"nvidia-700", 0}});
  auto a = make_attacher(AttachKind::mdev, fs)->acquire({42, "nvidia-700", "", ""});
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, ErrorCode::no_capacity);
  EXPECT_EQ(fs.writes(), 0U);
}

TEST(MdevAttach, RestrictsToTheParentTheSchedulerChose) {
  FakeSysfs fs;
  fs.add_mdev_parent(kGpu, {{"nvidia-700", 2}});
  fs.add_mdev_parent("0000:af:00.0", {{"nvidia-700", 2}});
  auto a = make_attacher(AttachKind::mdev, fs)->acquire({42, "nvidia-700", "0000:af:00.0", ""});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parent, "0000:af:00.0");
  EXPECT_EQ(fs.available(kGpu, "nvidia-700"), 2);
}

TEST(MdevAttach, StaleMdevOfTheSameJobIsAConflictWithAHint) {
  FakeSysfs fs;
  fs.add_mdev_parent(kGpu, {{"nvidia-700", 2}});
  auto attacher = make_attacher(AttachKind::mdev, fs);
  ASSERT_TRUE(attacher->acquire({42, "nvidia-700", "", ""}));
  auto again = attacher->acquire({42, "nvidia-700", "", ""});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::conflict);
  EXPECT_NE(again.error().message.find("EEXIST"), std::string::npos);
  EXPECT_NE(again.error().message.find("vgpu-viz reap"), std::string::npos);
  EXPECT_EQ(fs.mdev_count(), 1U);
}

TEST(MdevAttach, KernelRefusalsMapToErrorCodes) {
  const std::pair<int, ErrorCode> cases[] = {{EUSERS, ErrorCode::no_capacity},
                                             {ENOENT, ErrorCode::not_found},
                                             {EINVAL, ErrorCode::invalid_argument},
                                             {EIO, ErrorCode::io}};
  for (const auto& [err, code] : cases) {
    FakeSysfs fs;
    fs.add_mdev_parent(kGpu, {{"nvidia-700", 2}});
    fs.fail_next_write("/create", err);
    auto a = make_attacher(AttachKind::mdev, fs)->acquire({42, "nvidia-700", "", ""});
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, code) << err;
    EXPECT_EQ(fs.mdev_count(), 0U);
  }
}

// A driver that accepts the create but does not make the device must not leave anything.
class SwallowingSysfs final : public Sysfs {
 public:
  explicit SwallowingSysfs(FakeSysfs& inner) : inner_(inner) {}
  Result<std::string> read(std::string_view p) const override { return inner_.read(p); }
  std::expected<void, int> write(std::string_view p, std::string_view v) override {
    ++writes;
    if (p.ends_with("/create")) return {};
    return inner_.write(p, v);
  }
  Result<std::vector<std::string>> list(std::string_view d) const override { return inner_.list(d); }
  bool exists(std::string_view p) const override { return inner_.exists(p); }
  Result<std::string> link_name(std::string_view p) const override { return inner_.link_name(p); }
  int writes = 0;

 private:
  FakeSysfs& inner_;
};

TEST(MdevAttach, DeviceThatNeverAppearsIsAnError) {
  FakeSysfs fs;
  fs.add_mdev_parent(kGpu, {{"nvidia-700", 2}});
  SwallowingSysfs swallowing(fs);
  auto a = make_attacher(AttachKind::mdev, swallowing)->acquire({42, "nvidia-700", "", ""});
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("did not appear"), std::string::npos);
  EXPECT_EQ(fs.mdev_count(), 0U);
}

TEST(CreatableVgpuTypes, ParsesNvidiaFormat) {
  auto t = parse_creatable_vgpu_types("ID    : vGPU Name\n557   : NVIDIA H100-4C\n558   : NVIDIA H100-8C\n", "f");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->size(), 2U);
  EXPECT_EQ((*t)[1].id, "558");
  EXPECT_EQ((*t)[1].name, "NVIDIA H100-8C");
  EXPECT_FALSE(parse_creatable_vgpu_types("garbage line\n", "f"));
  EXPECT_FALSE(parse_creatable_vgpu_types("x1 : name\n", "f"));
}

TEST(SriovVfAttach, WritesTheTypeIdToAFreeVfAndClearsIt) {
  FakeSysfs fs;
  fs.add_pci_device(kGpu, "0x030200", true);
  fs.add_vgpu_vf("0000:3b:00.4", kGpu, {{"557", "NVIDIA H100-4C"}});
  fs.add_vgpu_vf("0000:3b:00.5", kGpu, {{"557", "NVIDIA H100-4C"}});
  auto attacher = make_attacher(AttachKind::sriov_vf, fs);
  auto a = attacher->acquire({42, "NVIDIA H100-4C", "", ""});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->device, GpuDevice{PciHostdev{"0000:3b:00.4"}});
  EXPECT_EQ(fs.read("sys/bus/pci/devices/0000:3b:00.4/nvidia/current_vgpu_type").value(), "557");
  auto b = attacher->acquire({43, "NVIDIA H100-4C", "", ""});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->parent, "0000:3b:00.5");
  auto c = attacher->acquire({44, "NVIDIA H100-4C", "", ""});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::no_capacity);
  ASSERT_TRUE(attacher->release(*a));
  EXPECT_EQ(fs.read("sys/bus/pci/devices/0000:3b:00.4/nvidia/current_vgpu_type").value(), "0");
}

TEST(SriovVfAttach, UnknownTypeAndMissingVfsAreDistinguished) {
  FakeSysfs fs;
  auto none = make_attacher(AttachKind::sriov_vf, fs)->acquire({42, "NVIDIA H100-4C", "", ""});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::unavailable);
  fs.add_vgpu_vf("0000:3b:00.4", kGpu, {{"557", "NVIDIA H100-4C"}});
  auto unknown = make_attacher(AttachKind::sriov_vf, fs)->acquire({42, "NVIDIA H100-80C", "", ""});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::not_found);
}

TEST(SriovVfAttach, OnlyVfsOfTheChosenGpu) {
  FakeSysfs fs;
  fs.add_vgpu_vf("0000:3b:00.4", kGpu, {{"557", "NVIDIA H100-4C"}});
  fs.add_vgpu_vf("0000:af:00.4", "0000:af:00.0", {{"557", "NVIDIA H100-4C"}});
  auto a = make_attacher(AttachKind::sriov_vf, fs)->acquire({42, "NVIDIA H100-4C", "0000:af:00.0", ""});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parent, "0000:af:00.4");
}

TEST(SriovVfAttach, KernelBusyIsAConflict) {
  FakeSysfs fs;
  fs.add_vgpu_vf("0000:3b:00.4", kGpu, {{"557", "NVIDIA H100-4C"}});
  fs.fail_next_write("current_vgpu_type", EBUSY);
  auto a = make_attacher(AttachKind::sriov_vf, fs)->acquire({42, "557", "", ""});
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, ErrorCode::conflict);
  EXPECT_NE(a.error().message.find("EBUSY"), std::string::npos);
}

TEST(MigVgpuAttach, NeedsTheJobsGpuInstance) {
  FakeSysfs fs;
  fs.add_vgpu_vf("0000:3b:00.4", kGpu, {{"601", "NVIDIA A100-3-20C"}}, true);
  auto a = make_attacher(AttachKind::mig_vgpu, fs)->acquire({42, "NVIDIA A100-3-20C", kGpu, ""});
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(fs.writes(), 0U);
}

TEST(MigVgpuAttach, SelectsTheInstanceThenTheType) {
  FakeSysfs fs;
  fs.add_vgpu_vf("0000:3b:00.4", kGpu, {{"601", "NVIDIA A100-3-20C"}}, true);
  auto a = make_attacher(AttachKind::mig_vgpu, fs)->acquire({42, "NVIDIA A100-3-20C", kGpu, "2"});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(fs.read("sys/bus/pci/devices/0000:3b:00.4/nvidia/current_gpu_instance_id").value(), "2");
  EXPECT_EQ(fs.read("sys/bus/pci/devices/0000:3b:00.4/nvidia/current_vgpu_type").value(), "601");
  EXPECT_EQ(a->gpu_instance, "2");
}

TEST(MigVgpuAttach, TypeFailureRestoresTheInstanceSelection) {
  FakeSysfs fs;
  fs.add_vgpu_vf("0000:3b:00.4", kGpu, {{"601", "NVIDIA A100-3-20C"}}, true);
  fs.fail_next_write("current_vgpu_type", EINVAL);
  auto a = make_attacher(AttachKind::mig_vgpu, fs)->acquire({42, "NVIDIA A100-3-20C", kGpu, "2"});
  ASSERT_FALSE(a);
  EXPECT_EQ(fs.read("sys/bus/pci/devices/0000:3b:00.4/nvidia/current_gpu_instance_id").value(), "-1");
  EXPECT_EQ(fs.read("sys/bus/pci/devices/0000:3b:00.4/nvidia/current_vgpu_type").value(), "0");
}

TEST(PassthroughAttach, NeedsADisplayDeviceInAnIommuGroup) {
  FakeSysfs fs;
  fs.add_pci_device(kGpu, "0x030200", true);
  fs.add_pci_device("0000:3c:00.0", "0x020000", true);  // a NIC
  fs.add_pci_device("0000:3d:00.0", "0x030000", false);
  auto attacher = make_attacher(AttachKind::passthrough, fs);
  auto a = attacher->acquire({42, "", kGpu, ""});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->device, GpuDevice{PciHostdev{kGpu}});
  EXPECT_EQ(attacher->acquire({42, "", "0000:3c:00.0", ""}).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(attacher->acquire({42, "", "0000:3d:00.0", ""}).error().code, ErrorCode::unavailable);
  EXPECT_EQ(attacher->acquire({42, "", "0000:99:00.0", ""}).error().code, ErrorCode::not_found);
  EXPECT_EQ(attacher->acquire({42, "", "../../etc", ""}).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(attacher->acquire({42, "", "", ""}).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(fs.writes(), 0U);
}

TEST(NoneAttach, GivesNoDeviceAndTouchesNothing) {
  FakeSysfs fs;
  auto a = make_attacher(AttachKind::none, fs)->acquire({42, "", "", ""});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->device, GpuDevice{NoGpu{}});
  EXPECT_EQ(fs.writes(), 0U);
}

}  // namespace
}  // namespace vgpu::viz
