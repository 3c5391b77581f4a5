#include "vgpu/ledger/ledger_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <ostream>
#include <nlohmann/json.hpp>

#include "sample_ledger.h"

namespace vgpu {
namespace {

using nlohmann::ordered_json;
using testing::sample_ledger;

TEST(LedgerJson, DocumentedExampleIsAValidLedger) {
  auto docs = std::filesystem::path(__FILE__).parent_path() / "../../../docs/ledger.md";
  std::string text = testing::read_file(docs.string());
  auto start = text.find("```json\n");
  ASSERT_NE(start, std::string::npos) << docs;
  start += 8;
  auto end = text.find("```", start);
  auto parsed = parse_ledger(text.substr(start, end - start));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, sample_ledger());
}

TEST(LedgerJson, RoundTripPreservesEveryField) {
  Ledger original = sample_ledger();
  auto text = serialize_ledger(original);
  auto parsed = parse_ledger(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, original);
  EXPECT_EQ(serialize_ledger(*parsed), text);  // stable bytes: no spurious rewrites in diffs
}

// A node upgraded from an older build keeps its ledger: read as is, written back as version 3.
TEST(LedgerJson, OlderLedgerVersionsAreReadAndWrittenBackAsVersionThree) {
  for (const char* old : {"\"version\": 1", "\"version\": 2"}) {
    auto text = serialize_ledger(sample_ledger());
    auto at = text.find("\"version\": 3");
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, 12, old);
    auto parsed = parse_ledger(text);
    ASSERT_TRUE(parsed) << old << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, sample_ledger());
    EXPECT_NE(serialize_ledger(*parsed).find("\"version\": 3"), std::string::npos);
  }
}

TEST(LedgerJson, IdleInstanceRoundTrips) {
  Ledger l = sample_ledger();
  l.instances[1].state = InstanceState::idle;
  l.plan.slots.push_back({0, "1g.10gb", {4, 1}, std::nullopt});
  auto text = serialize_ledger(l);
  EXPECT_NE(text.find("\"state\": \"idle\""), std::string::npos) << text;
  auto parsed = parse_ledger(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, l);
}

// An instance a running job of the earlier layout used when the ledger was made: version 6, and
// only where a node has one.
TEST(LedgerJson, AdoptedInstanceRoundTripsAsVersionSixAndAnOlderVersionCannotSayIt) {
  Ledger l = sample_ledger();
  l.instances[1].job = 77;
  l.instances[1].user = "alice";
  l.instances[1].state = InstanceState::ready;
  l.instances[1].adopted = true;
  auto text = serialize_ledger(l);
  EXPECT_NE(text.find("\"version\": 6"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"adopted\": false"), std::string::npos) << "written only when true";
  auto parsed = parse_ledger(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, l);
  text.replace(text.find("\"version\": 6"), 12, "\"version\": 5");
  auto old = parse_ledger(text);
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().message, "instances[1].adopted: a version 5 ledger has no adopted instances");
}

TEST(LedgerJson, NewHistoryIsNotWrittenIntoTheLedgerFile) {
  Ledger l = sample_ledger();
  retire_job(l, 42, 1'700'001'000, "completed");
  ASSERT_EQ(l.new_history.size(), 1u);
  auto parsed = parse_ledger(serialize_ledger(l));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(parsed->new_history.empty());
  EXPECT_EQ(serialize_ledger(l).find("history"), std::string::npos);
}

TEST(LedgerJson, EveryTruncationOfAValidLedgerFailsCleanly) {
  std::string text = serialize_ledger(sample_ledger());
  for (std::size_t n = 0; n < text.size(); ++n) {
    auto r = parse_ledger(std::string_view(text).substr(0, n));
    // Only the trailing newline and whitespace may go without losing content.
    if (r) {
      EXPECT_EQ(*r, sample_ledger()) << "prefix of " << n << " bytes parsed to something else";
      continue;
    }
    EXPECT_EQ(r.error().code, ErrorCode::corrupt) << n;
    EXPECT_FALSE(r.error().message.empty()) << n;
  }
}

TEST(LedgerJson, EverySingleByteCorruptionFailsCleanlyOrStaysValid) {
  std::string text = serialize_ledger(sample_ledger());
  for (std::size_t n = 0; n < text.size(); ++n) {
    std::string bad = text;
    bad[n] = static_cast<char>(bad[n] ^ 0x5a);
    auto r = parse_ledger(bad);
    if (r) {
      EXPECT_TRUE(validate(*r)) << n;  // whatever parses is still a valid ledger
    } else {
      EXPECT_EQ(r.error().code, ErrorCode::corrupt) << n;
    }
  }
}

TEST(LedgerJson, EmptyAndNonJsonTextAreCorrupt) {
  for (std::string_view text :
       {"", "   ", "\0\0\0\0", "{", "[]", "null", "\"ledger\"", "{}x", "{\"format\":\"slurm-vgpu-ledger\"} trailing"}) {
    auto r = parse_ledger(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code, ErrorCode::corrupt);
  }
}

struct Corruption {
  const char* name;
  std::function<void(ordered_json&)> edit;
  const char* expected;  // substring of the error, naming the field and value
};

// Names the case in test output instead of dumping the struct's bytes.
void PrintTo(const Corruption& c, std::ostream* os) { *os << c.name; }

class LedgerJsonCorruption : public ::testing::TestWithParam<Corruption> {};

TEST_P(LedgerJsonCorruption, IsRejectedWithTheFieldPathAndValue) {
  auto doc = ordered_json::parse(serialize_ledger(sample_ledger()));
  GetParam().edit(doc);
  auto r = parse_ledger(doc.dump(2));
  ASSERT_FALSE(r) << "accepted: " << doc.dump();
  EXPECT_EQ(r.error().code, ErrorCode::corrupt);
  EXPECT_NE(r.error().message.find(GetParam().expected), std::string::npos)
      << "message: " << r.error().message << "\nwanted: " << GetParam().expected;
}

const Corruption kCorruptions[] = {
    {"wrong_format", [](auto& j) { j["format"] = "slurm-vgpu-policy"; },
     "format: \"slurm-vgpu-policy\": expected \"slurm-vgpu-ledger\""},
    {"future_version", [](auto& j) { j["version"] = 7; }, "version: 7: this build reads versions 1 to 6"},
    {"version_zero", [](auto& j) { j["version"] = 0; }, "version: 0: this build reads versions 1 to 6"},
    {"version_as_string", [](auto& j) { j["version"] = "1"; }, "version: \"1\""},
    {"missing_version", [](auto& j) { j.erase("version"); }, "version: required field missing"},
    {"unknown_top_field", [](auto& j) { j["extra"] = 1; }, "extra: unknown field"},
    {"unknown_nested_field", [](auto& j) { j["instances"][1]["colour"] = "red"; },
     "instances[1].colour: unknown field"},
    {"missing_nested_field", [](auto& j) { j["gpus"][0].erase("uuid"); }, "gpus[0].uuid: required field missing"},
    {"gpus_not_array", [](auto& j) { j["gpus"] = ordered_json::object(); }, "gpus: {}: expected an array, got object"},
    {"index_as_float", [](auto& j) { j["gpus"][1]["index"] = 1.5; }, "gpus[1].index: 1.5: expected an integer"},
    {"negative_gi_id", [](auto& j) { j["instances"][0]["gpu_instance_id"] = -3; },
     "instances[0].gpu_instance_id: -3: must be between 0 and 4095"},
    {"job_zero", [](auto& j) { j["instances"][0]["job"] = 0; }, "instances[0].job: 0: must be between 1"},
    {"job_too_big", [](auto& j) { j["instances"][0]["job"] = 4294967296ull; }, "instances[0].job: 4294967296"},
    {"huge_unsigned", [](auto& j) { j["plan"]["generation"] = 18446744073709551615ull; },
     "plan.generation: 18446744073709551615"},
    {"bad_state", [](auto& j) { j["instances"][2]["state"] = "borrowed"; },
     "instances[2].state: \"borrowed\": not one of"},
    {"bad_vm_state", [](auto& j) { j["vms"][0]["state"] = "paused"; }, "vms[0].state: \"paused\""},
    {"orphaned_not_bool", [](auto& j) { j["instances"][0]["orphaned"] = 0; },
     "instances[0].orphaned: 0: expected true or false"},
    {"bad_bus_id", [](auto& j) { j["gpus"][0]["pci_bus_id"] = "00:06.0"; },
     "gpus[0].pci_bus_id: \"00:06.0\": not a PCI bus id"},
    {"gpu_uuid_prefix", [](auto& j) { j["gpus"][0]["uuid"] = "11111111"; },
     "gpus[0].uuid: \"11111111\": must start with \"GPU-\""},
    {"instance_uuid_neither_mig_nor_amd", [](auto& j) { j["instances"][0]["mig_uuid"] = "GPU-12345"; },
     "instances[0].mig_uuid: \"GPU-12345\": must start with \"MIG-\", be a whole NVIDIA GPU's GPU-<8-4-4-4-12 hex "
     "digits> or an AMD partition's GPU-<16 hex digits>"},
    {"empty_node", [](auto& j) { j["node"] = ""; }, "node: must not be empty"},
    {"control_char", [](auto& j) { j["node"] = "a\nb"; }, "node: \"a\\nb\": contains a control"},
    {"placement_size_zero", [](auto& j) { j["instances"][0]["placement"]["size"] = 0; },
     "instances[0].placement.size: 0"},
    {"duplicate_gpu_index", [](auto& j) { j["gpus"][1]["index"] = 0; }, "gpus[1].index: 0: duplicate GPU index"},
    {"unknown_model", [](auto& j) { j["gpus"][1]["model"] = "V100-32GB"; }, "gpus[1].model: V100-32GB: unknown model"},
    {"unknown_gpu_reference", [](auto& j) { j["instances"][1]["gpu"] = 5; }, "instances[1].gpu: 5: no such GPU"},
    {"slot_on_unknown_gpu", [](auto& j) { j["plan"]["slots"][1]["gpu"] = 9; }, "plan.slots[1].gpu: 9: no such GPU"},
    {"profile_of_other_model", [](auto& j) { j["instances"][1]["profile"] = "1g.5gb"; },
     "instances[1].profile: 1g.5gb: not a profile of H100-80GB"},
    {"illegal_placement", [](auto& j) { j["instances"][0]["placement"]["start"] = 2; },
     "instances[0].placement: {2,4} on GPU 0: {2,4} is not a legal placement of 3g.40gb"},
    {"overlapping_instances", [](auto& j) { j["instances"][1]["placement"]["start"] = 3; },
     "instances[1].placement: {3,1} on GPU 0: memory slices 3-3 overlap"},
    {"slot_overlaps_instance", [](auto& j) { j["plan"]["slots"][0]["placement"]["start"] = 3; },
     "plan.slots[0].placement: {3,1} on GPU 0: memory slices 3-3 overlap"},
    // A slot exactly where a released instance is, is a backed slot; over a running one it is not.
    {"slot_over_a_running_instance",
     [](auto& j) {
       j["plan"]["slots"][1]["placement"]["start"] = 4;
       j["instances"][1]["state"] = "ready";
     },
     "plan.slots[1].placement: {4,1} on GPU 0: memory slices 4-4 overlap"},
    {"duplicate_mig_uuid", [](auto& j) { j["instances"][2]["mig_uuid"] = j["instances"][0]["mig_uuid"]; },
     "instances[2].mig_uuid: MIG-0a0a0a0a-0000-0000-0000-000000000001: duplicate instance"},
    {"duplicate_gi_id", [](auto& j) { j["instances"][1]["gpu_instance_id"] = 2; },
     "instances[1].gpu_instance_id: 2: duplicate instance on GPU 0"},
    {"duplicate_instance_entry", [](auto& j) { j["instances"].push_back(j["instances"][0]); },
     "instances[3].placement: {0,4} on GPU 0: memory slices 0-3 overlap"},
    {"user_without_job", [](auto& j) { j["instances"][1]["user"] = "mallory"; },
     "instances[1].user: mallory: set but the instance has no job"},
    {"duplicate_domain", [](auto& j) { j["vms"].push_back(j["vms"][0]); }, "vms[1].domain: viz-job-42: duplicate"},
};

INSTANTIATE_TEST_SUITE_P(Every, LedgerJsonCorruption, ::testing::ValuesIn(kCorruptions),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(LedgerJson, DuplicateKeysAreCorruptNotSilentlyMerged) {
  std::string text = serialize_ledger(sample_ledger());
  auto pos = text.find("\"node\"");
  text.insert(pos, "\"node\": \"other\",\n  ");
  auto r = parse_ledger(text);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("duplicate key \"node\""), std::string::npos) << r.error().message;
}

TEST(LedgerJson, SyntaxErrorNamesLineAndColumn) {
  auto r = parse_ledger("{\"format\": \"slurm-vgpu-ledger\",, }");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not valid JSON"), std::string::npos);
  EXPECT_NE(r.error().message.find("line 1, column 32"), std::string::npos) << r.error().message;
}

HistoryRecord sample_record() {
  return {42,
          "alice",
          0,
          "3g.40gb",
          {0, 4},
          "MIG-0a0a0a0a-0000-0000-0000-000000000001",
          1'700'000'000,
          1'700'003'600,
          "completed"};
}

TEST(HistoryJson, RecordRoundTripsOnOneLine) {
  auto line = serialize_history_record(sample_record());
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto r = parse_history_record(std::string_view(line).substr(0, line.size() - 1));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, sample_record());
}

TEST(HistoryJson, EndBeforeStartIsCorrupt) {
  auto rec = sample_record();
  rec.end_time = rec.start_time - 1;
  auto r = parse_history_record(serialize_history_record(rec));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("end_time: 1699999999: before start_time"), std::string::npos) << r.error().message;
}

TEST(HistoryJson, UnknownFieldAndWrongFormatAreCorrupt) {
  auto doc = ordered_json::parse(serialize_history_record(sample_record()));
  doc["cost"] = 3;
  auto r = parse_history_record(doc.dump());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cost: unknown field"), std::string::npos);
  auto ledger_line = parse_history_record(serialize_ledger(sample_ledger()));
  ASSERT_FALSE(ledger_line);
  EXPECT_EQ(ledger_line.error().code, ErrorCode::corrupt);
}

}  // namespace
}  // namespace vgpu
