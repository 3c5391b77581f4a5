#include "slurm_conf_check.h"

#include <gtest/gtest.h>

#include <string>

namespace vgpuctl {
namespace {

// Shortened from a 22.05.8 test cluster (tests/e2e/lib.sh): the keys the check reads, as
// scontrol prints them.
const std::string kConfig = R"(Configuration data as of 2026-11-29T15:20:11
AccountingStorageTRES   = cpu,mem,energy,node,billing,fs/disk,vmem,pages
AccountingStorageType   = accounting_storage/none
Epilog                  = /usr/sbin/vgpu-epilog
GresTypes               = vgpu
JobSubmitPlugins        = lua
Prolog                  = /usr/sbin/vgpu-prolog
PrologFlags             = Alloc,Contain
SLURM_VERSION           = 22.05.8
)";

const std::string kPartitions =
    "PartitionName=infer AllowGroups=ALL Default=NO Nodes=future,n[1-2] State=UP TotalNodes=3\n"
    "PartitionName=train AllowGroups=ALL Default=NO Nodes=future,n[1-2] State=UP TotalNodes=3\n";

const std::string kRealNodes =
    "NodeName=n1 Arch=x86_64 CoresPerSocket=1 AvailableFeatures=(null) ActiveFeatures=(null) "
    "Gres=vgpu:never:0,vgpu:free:4,vgpu:1g.10gb:6,vgpu:2g.20gb:4 NodeAddr=localhost State=IDLE "
    "OS=Linux 6.1.0-27-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.115-1 (2024-11-01) Weight=1\n"
    "NodeName=n2 Arch=x86_64 CoresPerSocket=1 AvailableFeatures=(null) ActiveFeatures=(null) "
    "Gres=vgpu:never:0,vgpu:free:14 NodeAddr=localhost State=MIXED Weight=1\n";

std::string anchor(const std::string& gres, const std::string& features = "(null)") {
  return "NodeName=future CoresPerSocket=1 CPUAlloc=0 CPULoad=N/A AvailableFeatures=" + features +
         " ActiveFeatures=" + features + " Gres=" + gres + " NodeAddr=localhost State=FUTURE Weight=1\n";
}

const std::string kFullAnchor =
    anchor("vgpu:never:0,vgpu:free:14,vgpu:1g.10gb:14,vgpu:2g.20gb:14,vgpu:3g.40gb:14,vgpu:7g.80gb:14");

vgpu::PolicyFile policy(const std::string& planner = "{}") {
  auto p = vgpu::parse_policy(R"({"version": 1, "planner": )" + planner + R"(, "partitions": {
      "infer": {"profiles": ["1g.10gb", "2g.20gb"]},
      "train": {"profiles": ["3g.40gb", "7g.80gb"]}}})",
                              "policy.json");
  EXPECT_TRUE(p) << p.error().message;
  return *p;
}

SlurmConfCheck check(const vgpu::PolicyFile& p, const SlurmViews& views) {
  return check_slurm_conf(p, vgpu::Catalog::builtin(), views);
}

std::string all(const SlurmConfCheck& c) {
  std::string out;
  for (const auto& f : c.findings) out += (f.error ? "error: " : "warning: ") + f.message + "\n";
  return out;
}

TEST(SlurmConfCheck, TheDocumentedConfigurationPasses) {
  auto c = check(policy(), {kConfig, kPartitions, kRealNodes + kFullAnchor});
  EXPECT_TRUE(c.findings.empty()) << all(c);
  EXPECT_EQ(c.slurm_version, "22.05.8");
  EXPECT_EQ(c.partitions_checked, 2);
}

TEST(SlurmConfCheck, GresTypesWithoutVgpuIsAnError) {
  std::string config = kConfig;
  config.replace(config.find("GresTypes               = vgpu"), 30, "GresTypes               = gpu");
  auto c = check(policy(), {config, kPartitions, kRealNodes + kFullAnchor});
  ASSERT_EQ(c.errors(), 1) << all(c);
  EXPECT_NE(c.findings[0].message.find("GresTypes = 'gpu' lacks vgpu"), std::string::npos) << all(c);
}

TEST(SlurmConfCheck, PrologFlagsWithoutAllocAndUnsetHooksAreErrors) {
  std::string config = kConfig;
  config.replace(config.find("Alloc,Contain"), 13, "Contain");
  config.replace(config.find("/usr/sbin/vgpu-prolog"), 21, "(null)");
  auto c = check(policy(), {config, kPartitions, kRealNodes + kFullAnchor});
  ASSERT_EQ(c.errors(), 2) << all(c);
  EXPECT_NE(all(c).find("PrologFlags = 'Contain' lacks Alloc"), std::string::npos) << all(c);
  EXPECT_NE(all(c).find("Prolog is not set: no job gets its instances"), std::string::npos) << all(c);
}

TEST(SlurmConfCheck, HooksAsLaterReleasesListThemCount) {
  // 23.02 and later: "Prolog[0]", one key per prolog.
  std::string config = kConfig;
  config.replace(config.find("Prolog   "), 9, "Prolog[0]");
  config.replace(config.find("Epilog   "), 9, "Epilog[0]");
  auto c = check(policy(), {config, kPartitions, kRealNodes + kFullAnchor});
  EXPECT_TRUE(c.findings.empty()) << all(c);
  // PrologSlurmctld is not the node's prolog.
  config.replace(config.find("Prolog[0]         "), 18, "PrologSlurmctld[0]");
  c = check(policy(), {config, kPartitions, kRealNodes + kFullAnchor});
  ASSERT_EQ(c.errors(), 1) << all(c);
  EXPECT_NE(c.findings[0].message.find("Prolog is not set"), std::string::npos) << all(c);
}

TEST(SlurmConfCheck, NoSubmitFilterIsAWarningOnly) {
  std::string config = kConfig;
  config.replace(config.find("= lua"), 5, "= (null)");
  auto c = check(policy(), {config, kPartitions, kRealNodes + kFullAnchor});
  EXPECT_EQ(c.errors(), 0) << all(c);
  ASSERT_EQ(c.findings.size(), 1U) << all(c);
  EXPECT_NE(c.findings[0].message.find("JobSubmitPlugins = '(null)' lacks lua"), std::string::npos);
}

TEST(SlurmConfCheck, ATypeNoFutureNodeDeclaresIsAnErrorNamingPartitionAndType) {
  auto c = check(policy(), {kConfig, kPartitions,
                            kRealNodes + anchor("vgpu:never:0,vgpu:free:14,vgpu:1g.10gb:14,vgpu:2g.20gb:14")});
  ASSERT_EQ(c.errors(), 1) << all(c);
  EXPECT_NE(c.findings[0].message.find("partition train: no FUTURE node of it declares vgpu:3g.40gb, vgpu:7g.80gb "
                                       "(its FUTURE nodes: future)"),
            std::string::npos)
      << all(c);
}

TEST(SlurmConfCheck, AFutureNodeOutsideThePartitionDoesNotCount) {
  const std::string partitions =
      "PartitionName=infer Nodes=n[1-2] State=UP\nPartitionName=train Nodes=future,n[1-2] State=UP\n";
  auto c = check(policy(), {kConfig, partitions, kRealNodes + kFullAnchor});
  ASSERT_EQ(c.errors(), 1) << all(c);
  EXPECT_NE(c.findings[0].message.find("partition infer: no FUTURE node of it declares vgpu:1g.10gb, vgpu:2g.20gb "
                                       "(it has none)"),
            std::string::npos)
      << all(c);
}

TEST(SlurmConfCheck, AFutureNodeDeclaringFewerThanANodeTotalIsAWarning) {
  auto c = check(policy(), {kConfig, kPartitions,
                            kRealNodes + anchor("vgpu:1g.10gb:14,vgpu:2g.20gb:7,vgpu:3g.40gb:14,vgpu:7g.80gb:14")});
  EXPECT_EQ(c.errors(), 0) << all(c);
  ASSERT_EQ(c.findings.size(), 1U) << all(c);
  EXPECT_NE(c.findings[0].message.find("partition infer: its FUTURE nodes declare vgpu:2g.20gb:7, below node n1's "
                                       "total of 14"),
            std::string::npos)
      << all(c);
}

TEST(SlurmConfCheck, NodeFeaturesNeedEveryFeatureOnAFutureNodeOfEachPartition) {
  const std::string gres = "vgpu:free:14,vgpu:1g.10gb:14,vgpu:2g.20gb:14,vgpu:3g.40gb:14,vgpu:7g.80gb:14";
  auto ok =
      check(policy(R"({"node_features": true})"),
            {kConfig, kPartitions, kRealNodes + anchor(gres, "vgpu_in_use,vgpu_no_idle_gpu,vgpu_partly_used_gpu")});
  EXPECT_TRUE(ok.findings.empty()) << all(ok);

  // An anchor from before the third feature (docs/admin.md, the upgrade order).
  auto old = check(policy(R"({"node_features": true})"),
                   {kConfig, kPartitions, kRealNodes + anchor(gres, "vgpu_in_use,vgpu_no_idle_gpu")});
  ASSERT_EQ(old.errors(), 2) << all(old);  // one per partition
  EXPECT_NE(old.findings[0].message.find("partition infer: no FUTURE node of it has the feature(s) "
                                         "vgpu_partly_used_gpu (its FUTURE nodes: future)"),
            std::string::npos)
      << all(old);

  // Without the knob the features are nobody's business.
  auto off = check(policy(), {kConfig, kPartitions, kRealNodes + anchor(gres)});
  EXPECT_TRUE(off.findings.empty()) << all(off);
}

TEST(SlurmConfCheck, APolicyPartitionSlurmLacksIsAWarning) {
  auto c = check(policy(), {kConfig, "PartitionName=infer Nodes=future,n[1-2] State=UP\n", kRealNodes + kFullAnchor});
  EXPECT_EQ(c.errors(), 0) << all(c);
  ASSERT_EQ(c.findings.size(), 1U) << all(c);
  EXPECT_NE(c.findings[0].message.find("partition train: in the policy, not in slurmctld's partitions"),
            std::string::npos);
}

TEST(SlurmConfCheck, AccountingWithoutTheVgpuTresIsAWarningNamingThem) {
  std::string config = kConfig;
  config.replace(config.find("accounting_storage/none"), 23, "accounting_storage/slurmdbd");
  config.replace(config.find("fs/disk,vmem,pages"), 18, "fs/disk,vmem,pages,gres/vgpu,gres/vgpu:1g.10gb");
  auto c = check(policy(), {config, kPartitions, kRealNodes + kFullAnchor});
  EXPECT_EQ(c.errors(), 0) << all(c);
  ASSERT_EQ(c.findings.size(), 1U) << all(c);
  EXPECT_NE(c.findings[0].message.find("AccountingStorageTRES lacks gres/vgpu:2g.20gb, gres/vgpu:3g.40gb, "
                                       "gres/vgpu:7g.80gb"),
            std::string::npos)
      << all(c);
}

TEST(SlurmConfCheck, AnUnreadableGresIsAnErrorNamingTheNode) {
  auto c = check(policy(),
                 {kConfig, kPartitions, kRealNodes + kFullAnchor + "NodeName=n9 Gres=vgpu:free:lots State=IDLE\n"});
  ASSERT_EQ(c.errors(), 1) << all(c);
  EXPECT_NE(c.findings[0].message.find("node n9: cannot read its Gres = 'vgpu:free:lots'"), std::string::npos)
      << all(c);
}

TEST(SlurmConfCheck, GresGpuBesideVgpuOnANodeIsAnErrorNamingTheNodes) {
  auto nodes = kRealNodes + kFullAnchor +
               "NodeName=n3 Gres=gpu:h100:8(S:0-1),vgpu:never:0,vgpu:free:56 State=IDLE\n"
               "NodeName=n4 Gres=vgpu:free:14,gpu:2 State=IDLE\n"
               "NodeName=cpu1 Gres=gpu:l40s:4 State=IDLE\n";
  auto c = check(policy(), {kConfig, kPartitions, nodes});
  ASSERT_EQ(c.errors(), 1) << all(c);
  EXPECT_NE(c.findings[0].message.find("node(s) n3, n4: Gres has gpu beside vgpu"), std::string::npos) << all(c);
}

TEST(SlurmConfCheck, EmptyOutputsFindEveryRequirementMissing) {
  auto c = check(policy(), {"", "", ""});
  EXPECT_EQ(c.slurm_version, "");
  // GresTypes, PrologFlags, Prolog, Epilog; the filter a warning; both partitions missing.
  EXPECT_EQ(c.errors(), 4) << all(c);
  EXPECT_EQ(c.findings.size(), 7U) << all(c);
}

}  // namespace
}  // namespace vgpuctl
