// Every field's bad values, wrong types, unknown fields and missing fields, one case at a time,
// each mutating a small valid document and asserting the error's field path and message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vgpu/policy/policy.h"

namespace vgpu {
namespace {

using nlohmann::json;

json valid_doc() {
  return json::parse(R"({
    "version": 1,
    "planner": {"period_s": 5, "starvation_s": 120},
    "images": {"tinyguest": {"kernel": "/img/vmlinuz", "initrd": "/img/initrd.gz"}},
    "partitions": {
      "p": {
        "profiles": ["1g.10gb", "3g.40gb", "7g.80gb"],
        "viz_pools": [{"name": "pool-a", "attach": "none", "image": "tinyguest",
                       "memory_mib": 256, "vcpus": 1, "max_sessions": 2}]
      }
    }
  })");
}

std::vector<PolicyDiagnostic> diagnostics_of(const json& doc) {
  return check_policy(doc.dump(2), "t.json").diagnostics;
}

std::string all_text(const std::vector<PolicyDiagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) out += d.to_string() + "\n";
  return out.empty() ? "(no errors)" : out;
}

// The document must fail with an error at `path` whose message contains `part`, and every error
// must carry a position.
void expect_error(const json& doc, std::string_view path, std::string_view part) {
  auto ds = diagnostics_of(doc);
  bool found = false;
  for (const auto& d : ds) {
    EXPECT_GT(d.line, 0) << d.to_string();
    EXPECT_GT(d.column, 0) << d.to_string();
    EXPECT_EQ(d.file, "t.json");
    if (d.path == path && d.message.find(part) != std::string::npos) found = true;
  }
  EXPECT_TRUE(found) << "wanted " << path << ": ..." << part << "...\ngot:\n" << all_text(ds);
}

TEST(PolicyFields, TheBaseDocumentIsValid) {
  auto ds = diagnostics_of(valid_doc());
  EXPECT_TRUE(ds.empty()) << all_text(ds);
}

struct BadValue {
  std::string pointer;  // where to put the value
  json value;
  std::string path;  // the path the error must name
  std::string message_part;
};

void PrintTo(const BadValue& c, std::ostream* os) { *os << c.pointer << " = " << c.value.dump(); }

class PolicyBadValue : public ::testing::TestWithParam<BadValue> {};

TEST_P(PolicyBadValue, IsReportedAtItsPath) {
  json doc = valid_doc();
  doc[json::json_pointer(GetParam().pointer)] = GetParam().value;
  expect_error(doc, GetParam().path, GetParam().message_part);
}

const char* const kPool = "/partitions/p/viz_pools/0";

std::string pool(const std::string& field) { return std::string(kPool) + "/" + field; }

INSTANTIATE_TEST_SUITE_P(
    TopLevelPlannerImages, PolicyBadValue,
    ::testing::Values(
        BadValue{"/version", "1", "version", "unsupported policy version, got \"1\""},
        BadValue{"/version", 2, "version", "this reader understands version 1"},
        BadValue{"/version", 1.0, "version", "unsupported policy version"},
        BadValue{"/extra", true, "extra", "unknown field (known here: version, planner"},
        BadValue{"/comment", 5, "comment", "must be a string"},
        BadValue{"/planner", json::array(), "planner", "must be an object, got an array"},
        BadValue{"/planner/period_s", 0, "planner.period_s", "must be an integer in 1..3600, got 0"},
        BadValue{"/planner/period_s", 3601, "planner.period_s", "1..3600"},
        BadValue{"/planner/period_s", 2.5, "planner.period_s", "got 2.5"},
        BadValue{"/planner/period_s", "5", "planner.period_s", "got \"5\""},
        BadValue{"/planner/starvation_s", 86401, "planner.starvation_s", "1..86400"},
        BadValue{"/planner/starvation_s", 3, "planner.starvation_s", "must be at least period_s (5)"},
        BadValue{"/planner/idle_return_s", -1, "planner.idle_return_s", "must be an integer in 0..86400, got -1"},
        BadValue{"/planner/idle_return_s", "60", "planner.idle_return_s", "got \"60\""},
        BadValue{"/planner/prepare_slots", "yes", "planner.prepare_slots", "must be true or false, got \"yes\""},
        BadValue{"/planner/prepare_slots", 1, "planner.prepare_slots", "must be true or false, got 1"},
        BadValue{"/planner/node_features", "on", "planner.node_features", "must be true or false, got \"on\""},
        BadValue{"/planner/tick", 1, "planner.tick", "unknown field"},
        BadValue{"/planner/node_weights", 5, "planner.node_weights", "must be an object, got 5"},
        BadValue{"/planner/node_weights", json::object({{"in_use", 1}}), "planner.node_weights.idle", "missing"},
        BadValue{"/planner/node_weights", json::object({{"in_use", 0}, {"idle", 10}}), "planner.node_weights.in_use",
                 "must be an integer >= 1, got 0"},
        BadValue{"/planner/node_weights", json::object({{"in_use", 10}, {"idle", 10}}), "planner.node_weights.in_use",
                 "must be below idle (10)"},
        BadValue{"/planner/node_weights", json::object({{"in_use", 1}, {"idle", 2}, {"busy", 1}}),
                 "planner.node_weights.busy", "unknown field (known here: in_use, idle, base, per_free_gpu, comment)"},
        BadValue{"/planner/node_weights", json::object({{"base", 100}}), "planner.node_weights.per_free_gpu",
                 "missing"},
        BadValue{"/planner/node_weights", json::object({{"base", 100}, {"per_free_gpu", 10}, {"idle", 20}}),
                 "planner.node_weights.idle", "not with base and per_free_gpu: a node's weight follows either"},
        BadValue{"/planner/node_weights", json::object({{"in_use", 1}, {"idle", 2}, {"per_free_gpu", 10}}),
                 "planner.node_weights.in_use", "not with base and per_free_gpu"},
        BadValue{"/planner/node_weights", json::object({{"base", 1}, {"per_free_gpu", 0}}),
                 "planner.node_weights.per_free_gpu", "must be an integer >= 1, got 0"},
        BadValue{"/planner/node_weights", json::object({{"base", 1000}, {"per_free_gpu", 40000000}}),
                 "planner.node_weights.per_free_gpu",
                 "base + 64 x per_free_gpu is 2560001000, above Slurm's largest weight 2147483647"},
        BadValue{"/images", json::array(), "images", "must be an object"},
        BadValue{"/images/bad name", json::object({{"kernel", "/k"}, {"initrd", "/i"}}), "images[\"bad name\"]",
                 "image name must be 1 to 64 letters"},
        BadValue{"/images/tinyguest/kernel", "vmlinuz", "images.tinyguest.kernel", "not absolute"},
        BadValue{"/images/tinyguest/kernel", "/img/../etc/shadow", "images.tinyguest.kernel", "has '..'"},
        BadValue{"/images/tinyguest/initrd", 5, "images.tinyguest.initrd", "must be a string, got 5"},
        BadValue{"/images/tinyguest/disk", "disk.img", "images.tinyguest.disk", "not absolute"},
        BadValue{"/images/tinyguest/cmdline", "a\nb", "images.tinyguest.cmdline", "one line"},
        BadValue{"/images/tinyguest/root", "/dev/vda", "images.tinyguest.root", "unknown field"},
        BadValue{"/partitions", json::array(), "partitions", "must be an object"},
        BadValue{"/partitions", json::object(), "partitions", "at least one partition"},
        BadValue{"/partitions/bad!name", json::object(), "partitions[\"bad!name\"]", "partition name must be"},
        BadValue{"/partitions/q", 3, "partitions.q", "must be an object, got 3"}));

INSTANTIATE_TEST_SUITE_P(
    PartitionFields, PolicyBadValue,
    ::testing::Values(
        BadValue{"/partitions/p/gpu_count", 1, "partitions.p.gpu_count", "unknown field"},
        BadValue{"/partitions/p/profiles", "1g.10gb", "partitions.p.profiles",
                 "must be a list of profile names, or an object mapping GPU model names"},
        BadValue{"/partitions/p/profiles", json::array(), "partitions.p.profiles", "at least one profile"},
        BadValue{"/partitions/p/profiles",
                 {"9g.99gb"},
                 "partitions.p.profiles[0]",
                 "profile 9g.99gb does not exist on any known GPU model (valid: 1g.5gb, "},
        BadValue{"/partitions/p/profiles",
                 {"big"},
                 "partitions.p.profiles[0]",
                 "profile 'big': must start with a compute slice count"},
        BadValue{"/partitions/p/profiles", {1}, "partitions.p.profiles[0]", "must be a string"},
        BadValue{"/partitions/p/profiles", {"1g.10gb", "1g.10gb"}, "partitions.p.profiles[1]", "listed twice"},
        BadValue{"/partitions/p/profiles", json::object(), "partitions.p.profiles",
                 "must name at least one GPU model (known: A100-40GB"},
        BadValue{"/partitions/p/profiles", json::object({{"Z100", {"1g.10gb"}}}), "partitions.p.profiles.Z100",
                 "unknown GPU model (known: A100-40GB, A100-80GB"},
        BadValue{"/partitions/p/profiles", json::object({{"H100-80GB", {"1g.5gb"}}}),
                 "partitions.p.profiles.H100-80GB[0]",
                 "profile 1g.5gb does not exist on H100-80GB (valid: 1g.10gb, 1g.10gb+me, 1g.20gb"},
        BadValue{"/partitions/p/profiles", json::object({{"H100-80GB", "7g.80gb"}}), "partitions.p.profiles.H100-80GB",
                 "must be a list"},
        BadValue{"/partitions/p/max_instances_per_job", "four", "partitions.p.max_instances_per_job",
                 "must be an integer >= 1, got \"four\""},
        BadValue{"/partitions/p/max_instances_per_job", 0, "partitions.p.max_instances_per_job",
                 "must be an integer >= 1, got 0"},
        BadValue{"/partitions/p/max_instances_per_job", -3, "partitions.p.max_instances_per_job", "got -3"},
        BadValue{"/partitions/p/max_instances_per_job", 2.0, "partitions.p.max_instances_per_job",
                 "must be an integer"},
        BadValue{"/partitions/p/max_instances_per_job", true, "partitions.p.max_instances_per_job", "got true"},
        BadValue{"/partitions/p/max_instances_per_job", 4294967296LL, "partitions.p.max_instances_per_job",
                 "got 4294967296"},
        BadValue{"/partitions/p/max_instances_per_user", nullptr, "partitions.p.max_instances_per_user",
                 "must be an integer >= 1, got null"},
        BadValue{"/partitions/p/nodes", "n1", "partitions.p.nodes", "must be a list, got \"n1\""},
        BadValue{"/partitions/p/nodes", json::array(), "partitions.p.nodes", "at least one hostlist"},
        BadValue{"/partitions/p/nodes",
                 {"n1", "n[3-1]"},
                 "partitions.p.nodes[1]",
                 "hostlist 'n[3-1]': range '3-1' runs backwards"},
        BadValue{"/partitions/p/nodes", {7}, "partitions.p.nodes[0]", "must be a string, got 7"},
        BadValue{"/partitions/p/gpus", "some", "partitions.p.gpus",
                 "must be \"all\" or a non-empty list of GPU indices 0..63, got \"some\""},
        BadValue{"/partitions/p/gpus", json::array(), "partitions.p.gpus", "non-empty list"},
        BadValue{"/partitions/p/gpus", {0, 64}, "partitions.p.gpus[1]", "must be an integer in 0..63, got 64"},
        BadValue{"/partitions/p/gpus", {-1}, "partitions.p.gpus[0]", "0..63"},
        BadValue{"/partitions/p/gpus", {2, 2}, "partitions.p.gpus[1]", "GPU 2 is listed twice"},
        BadValue{"/partitions/p/idle_layout", "7g.80gb", "partitions.p.idle_layout", "must be a list"},
        BadValue{"/partitions/p/idle_layout", {"huge"}, "partitions.p.idle_layout[0]", "profile 'huge'"},
        BadValue{"/partitions/p/idle_layout",
                 {"7g.80gb", "1g.10gb"},
                 "partitions.p.idle_layout[1]",
                 "1g.10gb does not fit on an empty H100-80GB after the entries before it "
                 "[7g.80gb@0]"},
        BadValue{"/partitions/p/idle_layout",
                 {"2g.20gb"},
                 "partitions.p.idle_layout[0]",
                 "2g.20gb is not allowed on any GPU model this partition uses (allowed: "
                 "A100-40GB: 1g.10gb; A100-80GB: 1g.10gb, 3g.40gb, 7g.80gb"},
        BadValue{"/partitions/p/scrub", "maybe", "partitions.p.scrub",
                 "must be one of \"required\", \"optional\", got \"maybe\""},
        BadValue{"/partitions/p/scrub", false, "partitions.p.scrub", "got false"},
        BadValue{"/partitions/p/mig_mode", "sometimes", "partitions.p.mig_mode",
                 "must be one of \"as_found\", \"partitioned\", \"whole\", \"on_demand\", got \"sometimes\""},
        BadValue{"/partitions/p/viz_pools", json::object(), "partitions.p.viz_pools",
                 "must be a list, got an object"}));

INSTANTIATE_TEST_SUITE_P(
    VizPoolFields, PolicyBadValue,
    ::testing::Values(
        BadValue{kPool, "pool", "partitions.p.viz_pools[0]", "must be an object"},
        BadValue{pool("gpus"), 1, "partitions.p.viz_pools[0].gpus", "unknown field"},
        BadValue{pool("name"), "1g.10gb", "partitions.p.viz_pools[0].name",
                 "\"1g.10gb\" is spelled like a MIG profile"},
        BadValue{pool("name"), "3g.999gb", "partitions.p.viz_pools[0].name", "spelled like a MIG profile"},
        BadValue{pool("name"), "my pool", "partitions.p.viz_pools[0].name",
                 "must be a vgpu type name (1 to 32 of [A-Za-z0-9._+-]"},
        // 33 characters: once accepted here, then refused by the plugin and the job records.
        BadValue{pool("name"), std::string(33, 'a'), "partitions.p.viz_pools[0].name", "must be a vgpu type name"},
        BadValue{pool("attach"), "vfio", "partitions.p.viz_pools[0].attach",
                 "must be one of \"mdev\", \"sriov-vf\", \"mig-vgpu\", \"passthrough\", \"none\""},
        BadValue{pool("gpu_type"), "nvidia-558", "partitions.p.viz_pools[0].gpu_type",
                 "must be absent when attach is \"none\""},
        BadValue{pool("image"), "fatguest", "partitions.p.viz_pools[0].image",
                 "no image named \"fatguest\" (images: tinyguest)"},
        BadValue{pool("image"), 1, "partitions.p.viz_pools[0].image", "must be a string"},
        BadValue{pool("memory_mib"), 64, "partitions.p.viz_pools[0].memory_mib",
                 "must be an integer in 128..1048576, got 64"},
        BadValue{pool("memory_mib"), 1048577, "partitions.p.viz_pools[0].memory_mib", "128..1048576"},
        BadValue{pool("vcpus"), 0, "partitions.p.viz_pools[0].vcpus", "1..256, got 0"},
        BadValue{pool("vcpus"), 257, "partitions.p.viz_pools[0].vcpus", "1..256"},
        BadValue{pool("max_sessions"), 0, "partitions.p.viz_pools[0].max_sessions", "must be an integer >= 1"},
        BadValue{pool("display"), "rdp", "partitions.p.viz_pools[0].display",
                 "must be one of \"vnc\", \"spice\", got \"rdp\""},
        BadValue{pool("max_geometry"), "big", "partitions.p.viz_pools[0].max_geometry", "must be \"<width>x<height>\""},
        BadValue{pool("max_geometry"), "0x100", "partitions.p.viz_pools[0].max_geometry", "<width>x<height>"},
        BadValue{pool("max_geometry"), "1920x99999", "partitions.p.viz_pools[0].max_geometry", "<width>x<height>"},
        BadValue{pool("max_geometry"), 1920, "partitions.p.viz_pools[0].max_geometry", "must be a string"}));

void set_attach(json& doc, const std::string& attach, const json& gpu_type) {
  doc[json::json_pointer(pool("attach"))] = attach;
  if (!gpu_type.is_null()) doc[json::json_pointer(pool("gpu_type"))] = gpu_type;
}

TEST(PolicyFields, GpuTypeIsRequiredForEveryAttachButNone) {
  for (auto attach : {"mdev", "sriov-vf", "mig-vgpu", "passthrough"}) {
    json doc = valid_doc();
    set_attach(doc, attach, nullptr);
    expect_error(doc, "partitions.p.viz_pools[0].gpu_type",
                 std::string("required field missing when attach is \"") + attach + "\"");
  }
}

TEST(PolicyFields, GpuTypeIsCheckedPerAttachKind) {
  json doc = valid_doc();
  set_attach(doc, "mdev", "nvidia");
  expect_error(doc, "partitions.p.viz_pools[0].gpu_type", "mdev type id like \"nvidia-558\"");

  doc = valid_doc();
  set_attach(doc, "mig-vgpu", "2g.20gb");
  expect_error(doc, "partitions.p.viz_pools[0].gpu_type",
               "MIG profile 2g.20gb is not allowed in partition p (allowed: 1g.10gb, 3g.40gb, "
               "7g.80gb)");

  doc = valid_doc();
  set_attach(doc, "sriov-vf", std::string(65, 'Q'));
  expect_error(doc, "partitions.p.viz_pools[0].gpu_type", "1 to 64 printable characters");

  using Case = std::pair<const char*, const char*>;
  for (auto [attach, type] : {Case{"mdev", "nvidia-558"}, Case{"mig-vgpu", "1g.10gb"},
                              Case{"sriov-vf", "NVIDIA A16-2Q"}, Case{"passthrough", "H100-80GB"}}) {
    doc = valid_doc();
    set_attach(doc, attach, type);
    EXPECT_TRUE(diagnostics_of(doc).empty()) << attach << ":\n" << all_text(diagnostics_of(doc));
  }
}

TEST(PolicyFields, MissingRequiredFieldsAreReportedAtTheirObject) {
  struct Missing {
    std::string object_pointer, field, path;
  };
  for (const auto& m : std::vector<Missing>{
           {"", "version", "version"},
           {"", "partitions", "partitions"},
           {"/images/tinyguest", "kernel", "images.tinyguest.kernel"},
           {"/images/tinyguest", "initrd", "images.tinyguest.initrd"},
           {kPool, "name", "partitions.p.viz_pools[0].name"},
           {kPool, "attach", "partitions.p.viz_pools[0].attach"},
           {kPool, "image", "partitions.p.viz_pools[0].image"},
           {kPool, "memory_mib", "partitions.p.viz_pools[0].memory_mib"},
           {kPool, "vcpus", "partitions.p.viz_pools[0].vcpus"},
           {kPool, "max_sessions", "partitions.p.viz_pools[0].max_sessions"},
       }) {
    json doc = valid_doc();
    doc[json::json_pointer(m.object_pointer)].erase(m.field);
    expect_error(doc, m.path, "required field missing");
  }
}

TEST(PolicyFields, MigModeIsAsFoundUnlessThePartitionAsksForPartitioned) {
  json doc = valid_doc();
  auto found = check_policy(doc.dump(2), "t.json");
  ASSERT_TRUE(found.policy) << all_text(found.diagnostics);
  EXPECT_EQ(found.policy->partition("p")->mig_mode, MigModePolicy::as_found);
  doc["partitions"]["p"]["mig_mode"] = "partitioned";
  auto asked = check_policy(doc.dump(2), "t.json");
  ASSERT_TRUE(asked.policy) << all_text(asked.diagnostics);
  EXPECT_EQ(asked.policy->partition("p")->mig_mode, MigModePolicy::partitioned);
  doc["partitions"]["p"]["mig_mode"] = "whole";
  auto whole = check_policy(doc.dump(2), "t.json");
  ASSERT_TRUE(whole.policy) << all_text(whole.diagnostics);
  EXPECT_EQ(whole.policy->partition("p")->mig_mode, MigModePolicy::whole);
  doc["partitions"]["p"]["mig_mode"] = "on_demand";
  doc["partitions"]["p"]["profiles"] = {"1g.10gb", "whole.80gb"};
  auto on_demand = check_policy(doc.dump(2), "t.json");
  ASSERT_TRUE(on_demand.policy) << all_text(on_demand.diagnostics);
  EXPECT_EQ(on_demand.policy->partition("p")->mig_mode, MigModePolicy::on_demand);
}

TEST(PolicyFields, OnDemandNeedsAModelWithBothItsWholeGpuAndAMigProfile) {
  json doc = valid_doc();
  doc["partitions"]["p"]["mig_mode"] = "on_demand";
  doc["partitions"]["p"]["profiles"] = {"1g.10gb", "3g.40gb"};
  expect_error(doc, "partitions.p.mig_mode",
               "\"on_demand\" switches GPUs between whole and MIG mode, but \"profiles\" offers no NVIDIA model "
               "both its whole GPU (whole.<M>gb) and a MIG profile");
  // Both, but on different models: H100's whole GPU, A100's MIG profile.
  doc["partitions"]["p"]["profiles"] = {{"H100-80GB", {"whole.80gb"}}, {"A100-80GB", {"1g.10gb"}}};
  expect_error(doc, "partitions.p.mig_mode", "offers no NVIDIA model both");
}

TEST(PolicyFields, AWrongVersionStopsFurtherChecks) {
  json doc = valid_doc();
  doc["version"] = 2;
  doc["partitions"]["p"]["scrub"] = "maybe";
  auto ds = diagnostics_of(doc);
  ASSERT_EQ(ds.size(), 1u) << all_text(ds);
  EXPECT_EQ(ds[0].path, "version");
}

TEST(PolicyFields, AMissingVersionStillChecksTheRest) {
  json doc = valid_doc();
  doc.erase("version");
  doc["partitions"]["p"]["scrub"] = "maybe";
  auto ds = diagnostics_of(doc);
  EXPECT_EQ(ds.size(), 2u) << all_text(ds);
}

TEST(PolicyFields, PoolNamesMustBeUniqueAcrossTheFile) {
  json doc = valid_doc();
  doc["partitions"]["q"] = doc["partitions"]["p"];
  expect_error(doc, "partitions.q.viz_pools[0].name",
               "viz pool name \"pool-a\" is already used by partitions.p.viz_pools[0].name");
}

TEST(PolicyFields, JobLimitMayNotExceedUserLimit) {
  json doc = valid_doc();
  doc["partitions"]["p"]["max_instances_per_job"] = 5;
  doc["partitions"]["p"]["max_instances_per_user"] = 2;
  expect_error(doc, "partitions.p.max_instances_per_job", "must not exceed max_instances_per_user (2)");
}

TEST(PolicyFields, TheRootMustBeAnObject) {
  auto ds = check_policy("[1, 2]", "t.json").diagnostics;
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].to_string(), "t.json:1:1: (top level): must be an object, got an array");
}

TEST(PolicyFields, DuplicateKeysAreErrors) {
  auto ds = check_policy("{\"version\": 1,\n \"version\": 1, \"partitions\": {\"p\": {}}}", "t.json").diagnostics;
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].to_string(), "t.json:2:2: duplicate key \"version\" (first at line 1, column 2)");
}

TEST(PolicyFields, PartitionKeysWithOddCharactersAreQuotedInPaths) {
  json doc = valid_doc();
  doc["partitions"]["a.b"] = json::object({{"scrub", "x"}});
  expect_error(doc, "partitions[\"a.b\"].scrub", "must be one of");
}

TEST(PolicyFields, ReportsEveryErrorAtOnceInFileOrder) {
  json doc = valid_doc();
  doc["planner"]["period_s"] = 0;
  doc["partitions"]["p"]["max_instances_per_job"] = "four";
  doc["partitions"]["p"]["gpus"] = {99};
  doc["partitions"]["p"]["nodes"] = {"n[2-1]"};
  doc["partitions"]["p"]["viz_pools"][0]["vcpus"] = 0;
  doc["partitions"]["p"]["bogus"] = 1;
  auto ds = diagnostics_of(doc);
  ASSERT_EQ(ds.size(), 6u) << all_text(ds);
  for (std::size_t i = 1; i < ds.size(); ++i)
    EXPECT_LT(std::pair(ds[i - 1].line, ds[i - 1].column), std::pair(ds[i].line, ds[i].column));
  auto result = parse_policy(doc.dump(2), "t.json");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(result.error().message, all_text(ds).substr(0, all_text(ds).size() - 1));
}

}  // namespace
}  // namespace vgpu
