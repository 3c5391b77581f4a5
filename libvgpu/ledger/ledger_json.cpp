#include "vgpu/ledger/ledger_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "vgpu/contract/job_record.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"
#include "vgpu/core/shared_instance.h"

namespace vgpu {
namespace {

using json = nlohmann::ordered_json;

// Thrown inside this file only, caught by the two parse entry points: it keeps the field-by-field
// reader readable without threading a Result through every line.
struct Malformed {
  std::string path;
  std::string message;
};

[[noreturn]] void bad(const std::string& path, std::string message) { throw Malformed{path, std::move(message)}; }

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string brief(const json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

std::string_view type_name(const json& value) {
  if (value.is_number_integer()) return "integer";
  return value.type_name();
}

// Checks that `value` is an object with exactly the `required` keys plus any `optional` ones.
void expect_fields(const json& value, const std::string& path, std::initializer_list<std::string_view> required,
                   std::initializer_list<std::string_view> optional = {}) {
  if (!value.is_object())
    bad(path.empty() ? "(top level)" : path,
        fmt::format("{}: expected an object, got {}", brief(value), type_name(value)));
  auto problems = contract::key_problems(value, required, optional);
  if (!problems.empty()) bad(join(path, contract::printable(problems.front().key)), problems.front().message);
}

std::int64_t read_int(const json& obj, std::string_view key, const std::string& path, std::int64_t min,
                      std::int64_t max) {
  const json& v = obj.at(key);
  std::string field = join(path, key);
  if (!v.is_number_integer()) bad(field, fmt::format("{}: expected an integer, got {}", brief(v), type_name(v)));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    bad(field, fmt::format("{}: must be between {} and {}", brief(v), min, max));
  auto n = v.get<std::int64_t>();
  if (n < min || n > max) bad(field, fmt::format("{}: must be between {} and {}", n, min, max));
  return n;
}

int read_small_int(const json& obj, std::string_view key, const std::string& path, int min, int max) {
  return static_cast<int>(read_int(obj, key, path, min, max));
}

std::string read_string(const json& obj, std::string_view key, const std::string& path, bool allow_empty = false) {
  const json& v = obj.at(key);
  std::string field = join(path, key);
  if (!v.is_string()) bad(field, fmt::format("{}: expected a string, got {}", brief(v), type_name(v)));
  const auto& s = v.get_ref<const std::string&>();
  if (s.empty() && !allow_empty) bad(field, "must not be empty");
  // The rule every writer checks first (contract/names.h), so nothing a job brings is refused here.
  if (auto problem = contract::record_text_problem(s); !problem.empty())
    bad(field, fmt::format("{}: {}", brief(v), problem));
  return s;
}

std::string read_prefixed(const json& obj, std::string_view key, const std::string& path, std::string_view prefix) {
  std::string s = read_string(obj, key, path);
  if (!s.starts_with(prefix) || s.size() == prefix.size())
    bad(join(path, key), fmt::format("\"{}\": must start with \"{}\"", s, prefix));
  return s;
}

// An instance's device: a MIG instance's "MIG-...", a whole NVIDIA GPU's "GPU-<8-4-4-4-12 hex>"
// or an AMD partition's "GPU-<16 hex>".
std::string read_device_uuid(const json& obj, std::string_view key, const std::string& path) {
  std::string s = read_string(obj, key, path);
  if (contract::is_amd_partition_uuid(s) || contract::is_nvidia_gpu_uuid(s)) return s;
  if (!s.starts_with("MIG-") || s.size() == 4)
    bad(join(path, key), fmt::format("\"{}\": must start with \"MIG-\", be a whole NVIDIA GPU's "
                                     "GPU-<8-4-4-4-12 hex digits> or an AMD partition's GPU-<16 hex digits>",
                                     s));
  return s;
}

bool read_bool(const json& obj, std::string_view key, const std::string& path) {
  const json& v = obj.at(key);
  if (!v.is_boolean()) bad(join(path, key), fmt::format("{}: expected true or false, got {}", brief(v), type_name(v)));
  return v.get<bool>();
}

constexpr std::int64_t kMaxTime = std::int64_t{1} << 40;  // ~year 36812: rejects garbage
constexpr std::int64_t kMaxJob = std::numeric_limits<JobId>::max();
constexpr int kMaxIndex = 1023;

JobId read_job(const json& obj, std::string_view key, const std::string& path) {
  return static_cast<JobId>(read_int(obj, key, path, 1, kMaxJob));
}

std::optional<JobId> read_optional_job(const json& obj, std::string_view key, const std::string& path) {
  if (obj.at(key).is_null()) return std::nullopt;
  return read_job(obj, key, path);
}

// "0000:00:06.0" or NVML's 8-digit-domain "00000000:00:06.0".
bool is_pci_bus_id(std::string_view s) {
  auto colon = s.find(':');
  if (colon != 4 && colon != 8) return false;
  std::string_view rest = s.substr(colon);
  if (rest.size() != 8 || rest[0] != ':' || rest[3] != ':' || rest[6] != '.') return false;
  auto hex = [](std::string_view part) {
    return std::ranges::all_of(part, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  };
  return hex(s.substr(0, colon)) && hex(rest.substr(1, 2)) && hex(rest.substr(4, 2)) && rest[7] >= '0' &&
         rest[7] <= '7';
}

Placement read_placement(const json& obj, const std::string& path) {
  std::string field = join(path, "placement");
  const json& p = obj.at("placement");
  expect_fields(p, field, {"start", "size"});
  return {read_small_int(p, "start", field, 0, 15), read_small_int(p, "size", field, 1, 16)};
}

json placement_json(Placement p) { return json{{"start", p.start}, {"size", p.size}}; }

json job_json(const std::optional<JobId>& job) { return job ? json(*job) : json(nullptr); }

const json& read_array(const json& obj, std::string_view key, const std::string& path) {
  const json& v = obj.at(key);
  if (!v.is_array()) bad(join(path, key), fmt::format("{}: expected an array, got {}", brief(v), type_name(v)));
  return v;
}

LedgerGpu read_gpu(const json& j, const std::string& path) {
  expect_fields(j, path, {"index", "uuid", "model", "pci_bus_id"});
  LedgerGpu g;
  g.index = read_small_int(j, "index", path, 0, kMaxIndex);
  g.uuid = read_prefixed(j, "uuid", path, "GPU-");
  g.model = read_string(j, "model", path);
  g.pci_bus_id = read_string(j, "pci_bus_id", path);
  if (!is_pci_bus_id(g.pci_bus_id))
    bad(join(path, "pci_bus_id"), fmt::format("\"{}\": not a PCI bus id like 0000:00:06.0", g.pci_bus_id));
  return g;
}

LedgerInstance read_instance(const json& j, const std::string& path) {
  expect_fields(j, path,
                {"gpu", "profile", "placement", "gpu_instance_id", "compute_instance_id", "mig_uuid", "job", "user",
                 "state", "created_at", "orphaned"},
                {"adopted"});
  LedgerInstance i;
  i.gpu = read_small_int(j, "gpu", path, 0, kMaxIndex);
  i.profile = read_string(j, "profile", path);
  i.placement = read_placement(j, path);
  i.gpu_instance_id = read_small_int(j, "gpu_instance_id", path, 0, 4095);
  i.compute_instance_id = read_small_int(j, "compute_instance_id", path, 0, 4095);
  i.mig_uuid = read_device_uuid(j, "mig_uuid", path);
  i.job = read_optional_job(j, "job", path);
  i.user = read_string(j, "user", path, /*allow_empty=*/true);
  std::string state = read_string(j, "state", path);
  auto parsed = parse_instance_state(state);
  if (!parsed)
    bad(join(path, "state"), fmt::format("\"{}\": not one of creating, ready, scrubbing, "
                                         "quarantined, destroying, idle",
                                         state));
  i.state = *parsed;
  i.created_at = read_int(j, "created_at", path, 0, kMaxTime);
  i.orphaned = read_bool(j, "orphaned", path);
  if (j.contains("adopted")) i.adopted = read_bool(j, "adopted", path);
  return i;
}

VizVm read_vm(const json& j, const std::string& path) {
  expect_fields(j, path, {"job", "domain", "device", "state"});
  VizVm vm;
  vm.job = read_job(j, "job", path);
  vm.domain = read_string(j, "domain", path);
  vm.device = read_string(j, "device", path, /*allow_empty=*/true);  // not known until the VM started
  std::string state = read_string(j, "state", path);
  auto parsed = parse_vm_state(state);
  if (!parsed) bad(join(path, "state"), fmt::format("\"{}\": not one of starting, running, stopping", state));
  vm.state = *parsed;
  return vm;
}

PlanSlot read_slot(const json& j, const std::string& path) {
  expect_fields(j, path, {"gpu", "profile", "placement", "claimed_by_job"});
  PlanSlot s;
  s.gpu = read_small_int(j, "gpu", path, 0, kMaxIndex);
  s.profile = read_string(j, "profile", path);
  s.placement = read_placement(j, path);
  s.claimed_by_job = read_optional_job(j, "claimed_by_job", path);
  return s;
}

ShareGroup read_share_group(const json& j, const std::string& path) {
  expect_fields(j, path, {"gpu", "placement", "type", "holders"});
  ShareGroup g;
  g.gpu = read_small_int(j, "gpu", path, 0, kMaxIndex);
  g.placement = read_placement(j, path);
  g.type = read_string(j, "type", path);
  const json& holders = read_array(j, "holders", path);
  for (std::size_t i = 0; i < holders.size(); ++i) {
    const std::string at = fmt::format("{}.holders[{}]", path, i);
    expect_fields(holders[i], at, {"job", "user", "since"});
    g.holders.push_back(ShareHolder{read_job(holders[i], "job", at), read_string(holders[i], "user", at),
                                    read_int(holders[i], "since", at, 0, kMaxTime)});
  }
  return g;
}

void check_header(const json& j, std::string_view format, int oldest, int newest) {
  const json& f = j.at("format");
  if (!f.is_string() || f.get_ref<const std::string&>() != format)
    bad("format", fmt::format("{}: expected \"{}\"", brief(f), format));
  const json& v = j.at("version");
  if (!v.is_number_integer() || v.get<std::int64_t>() < oldest || v.get<std::int64_t>() > newest)
    bad("version", oldest == newest ? fmt::format("{}: this build reads version {} only", brief(v), newest)
                                    : fmt::format("{}: this build reads versions {} to {}", brief(v), oldest, newest));
}

// nlohmann keeps the last of duplicate keys silently; a strict format must not, so the parser
// callback tracks the keys of every open object.
Result<json> parse_json(std::string_view text) {
  std::vector<std::set<std::string>> open_objects;
  std::optional<std::string> duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && !duplicate) duplicate = key;
    }
    return true;
  };
  try {
    json j = json::parse(text.begin(), text.end(), callback);
    if (duplicate) return fail(ErrorCode::corrupt, fmt::format("duplicate key \"{}\"", *duplicate));
    return j;
  } catch (const json::exception& e) {
    return fail(ErrorCode::corrupt, fmt::format("not valid JSON: {}", e.what()));
  }
}

}  // namespace

std::string serialize_ledger(const Ledger& ledger) {
  json gpus = json::array();
  for (const auto& g : ledger.gpus)
    gpus.push_back({{"index", g.index}, {"uuid", g.uuid}, {"model", g.model}, {"pci_bus_id", g.pci_bus_id}});
  json instances = json::array();
  for (const auto& i : ledger.instances) {
    instances.push_back({{"gpu", i.gpu},
                         {"profile", i.profile},
                         {"placement", placement_json(i.placement)},
                         {"gpu_instance_id", i.gpu_instance_id},
                         {"compute_instance_id", i.compute_instance_id},
                         {"mig_uuid", i.mig_uuid},
                         {"job", job_json(i.job)},
                         {"user", i.user},
                         {"state", to_string(i.state)},
                         {"created_at", i.created_at},
                         {"orphaned", i.orphaned}});
    if (i.adopted) instances.back()["adopted"] = true;
  }
  json vms = json::array();
  for (const auto& vm : ledger.vms)
    vms.push_back({{"job", vm.job}, {"domain", vm.domain}, {"device", vm.device}, {"state", to_string(vm.state)}});
  json slots = json::array();
  for (const auto& s : ledger.plan.slots)
    slots.push_back({{"gpu", s.gpu},
                     {"profile", s.profile},
                     {"placement", placement_json(s.placement)},
                     {"claimed_by_job", job_json(s.claimed_by_job)}});
  // The oldest version that can say it: classes need version 4, share types 5, adopted instances 6.
  const bool share_types = !ledger.share_groups.empty() ||
                           std::ranges::any_of(ledger.classes, [](const GpuClass& c) { return c.shares > 0; });
  const bool adopted = std::ranges::any_of(ledger.instances, &LedgerInstance::adopted);
  const int version = adopted ? 6 : share_types ? 5 : ledger.classes.empty() ? 3 : 4;
  json doc = {{"format", kLedgerFormat},
              {"version", version},
              {"node", ledger.node},
              {"gpus", gpus},
              {"instances", instances},
              {"vms", vms},
              {"plan", {{"generation", ledger.plan.generation}, {"slots", slots}}}};
  if (!ledger.classes.empty()) {
    json classes = json::array();
    for (const auto& c : ledger.classes) {
      json entry = {
          {"name", c.name}, {"min_memory_gb", c.min_memory_gb}, {"min_compute_fraction", c.min_compute_fraction}};
      if (c.shares > 0) {
        entry["profile"] = c.profile;
        entry["shares"] = c.shares;
      }
      classes.push_back(std::move(entry));
    }
    doc["classes"] = std::move(classes);
  }
  if (!ledger.share_groups.empty()) {
    json groups = json::array();
    for (const auto& g : ledger.share_groups) {
      json holders = json::array();
      for (const auto& h : g.holders) holders.push_back({{"job", h.job}, {"user", h.user}, {"since", h.since}});
      groups.push_back({{"gpu", g.gpu},
                        {"placement", placement_json(g.placement)},
                        {"type", g.type},
                        {"holders", std::move(holders)}});
    }
    doc["share_groups"] = std::move(groups);
  }
  return doc.dump(2) + "\n";
}

Result<Ledger> parse_ledger(std::string_view text, const Catalog& catalog) {
  auto doc = parse_json(text);
  if (!doc) return std::unexpected(doc.error());
  Ledger ledger;
  try {
    const json& j = *doc;
    expect_fields(j, "", {"format", "version", "node", "gpus", "instances", "vms", "plan"},
                  {"classes", "share_groups"});
    check_header(j, kLedgerFormat, kLedgerOldestReadableVersion, kLedgerVersion);
    if (j.contains("classes")) {
      const json& version = j.at("version");
      if (version < 4) bad("classes", fmt::format("a version {} ledger has no classes", brief(version)));
      const json& classes = read_array(j, "classes", "");
      for (std::size_t i = 0; i < classes.size(); ++i) {
        const std::string path = fmt::format("classes[{}]", i);
        const json& c = classes[i];
        expect_fields(c, path, {"name", "min_memory_gb", "min_compute_fraction"}, {"profile", "shares"});
        if (c.contains("shares") != c.contains("profile"))
          bad(path, "a share type has both \"profile\" and \"shares\"; a class neither");
        if (c.contains("shares") && version < 5)
          bad(join(path, "shares"), fmt::format("a version {} ledger has no share types", brief(version)));
        GpuClass gc;
        gc.name = read_string(c, "name", path);
        if (!contract::is_valid_type_name(gc.name))
          bad(join(path, "name"), fmt::format("\"{}\": {}", gc.name, contract::type_name_rule()));
        gc.min_memory_gb = static_cast<int>(read_int(c, "min_memory_gb", path, 0, 100000));
        const json& f = c.at("min_compute_fraction");
        if (!f.is_number() || f.get<double>() < 0.0 || f.get<double>() > 1.0)
          bad(join(path, "min_compute_fraction"), fmt::format("{}: expected a number from 0 to 1", brief(f)));
        gc.min_compute_fraction = f.get<double>();
        if (c.contains("shares")) {
          gc.profile = read_string(c, "profile", path);
          if (!gc.profile.empty() && !parse_profile_name(gc.profile))
            bad(join(path, "profile"), fmt::format("\"{}\": not a profile name", contract::printable(gc.profile)));
          gc.shares = static_cast<int>(read_int(c, "shares", path, 2, kMaxSharesPerInstance));
        }
        ledger.classes.push_back(std::move(gc));
      }
    }
    if (j.contains("share_groups")) {
      if (j.at("version") < 5)
        bad("share_groups", fmt::format("a version {} ledger has no share groups", brief(j.at("version"))));
      const json& groups = read_array(j, "share_groups", "");
      for (std::size_t i = 0; i < groups.size(); ++i)
        ledger.share_groups.push_back(read_share_group(groups[i], fmt::format("share_groups[{}]", i)));
    }
    ledger.node = read_string(j, "node", "");
    const json& gpus = read_array(j, "gpus", "");
    for (std::size_t i = 0; i < gpus.size(); ++i) ledger.gpus.push_back(read_gpu(gpus[i], fmt::format("gpus[{}]", i)));
    const json& instances = read_array(j, "instances", "");
    for (std::size_t i = 0; i < instances.size(); ++i) {
      const std::string at = fmt::format("instances[{}]", i);
      ledger.instances.push_back(read_instance(instances[i], at));
      if (instances[i].contains("adopted") && j.at("version") < 6)
        bad(join(at, "adopted"), fmt::format("a version {} ledger has no adopted instances", brief(j.at("version"))));
    }
    const json& vms = read_array(j, "vms", "");
    for (std::size_t i = 0; i < vms.size(); ++i) ledger.vms.push_back(read_vm(vms[i], fmt::format("vms[{}]", i)));
    const json& plan = j.at("plan");
    expect_fields(plan, "plan", {"generation", "slots"});
    ledger.plan.generation = static_cast<std::uint64_t>(read_int(plan, "generation", "plan", 0, kMaxTime));
    const json& slots = read_array(plan, "slots", "plan");
    for (std::size_t i = 0; i < slots.size(); ++i)
      ledger.plan.slots.push_back(read_slot(slots[i], fmt::format("plan.slots[{}]", i)));
  } catch (const Malformed& m) {
    return fail(ErrorCode::corrupt, m.path + ": " + m.message);
  }
  if (auto r = validate(ledger, catalog); !r) return std::unexpected(r.error());
  return ledger;
}

std::string serialize_history_record(const HistoryRecord& r) {
  json doc = {{"format", kHistoryFormat},
              {"version", kHistoryVersion},
              {"job", r.job},
              {"user", r.user},
              {"gpu", r.gpu},
              {"profile", r.profile},
              {"placement", placement_json(r.placement)},
              {"mig_uuid", r.mig_uuid},
              {"start_time", r.start_time},
              {"end_time", r.end_time},
              {"end_reason", r.end_reason}};
  return doc.dump() + "\n";
}

Result<HistoryRecord> parse_history_record(std::string_view line) {
  auto doc = parse_json(line);
  if (!doc) return std::unexpected(doc.error());
  try {
    const json& j = *doc;
    expect_fields(j, "",
                  {"format", "version", "job", "user", "gpu", "profile", "placement", "mig_uuid", "start_time",
                   "end_time", "end_reason"});
    check_header(j, kHistoryFormat, kHistoryVersion, kHistoryVersion);
    HistoryRecord r;
    r.job = read_job(j, "job", "");
    r.user = read_string(j, "user", "", /*allow_empty=*/true);
    r.gpu = read_small_int(j, "gpu", "", 0, kMaxIndex);
    r.profile = read_string(j, "profile", "");
    r.placement = read_placement(j, "");
    r.mig_uuid = read_device_uuid(j, "mig_uuid", "");
    r.start_time = read_int(j, "start_time", "", 0, kMaxTime);
    r.end_time = read_int(j, "end_time", "", 0, kMaxTime);
    r.end_reason = read_string(j, "end_reason", "");
    if (r.end_time < r.start_time) bad("end_time", fmt::format("{}: before start_time {}", r.end_time, r.start_time));
    return r;
  } catch (const Malformed& m) {
    return fail(ErrorCode::corrupt, m.path + ": " + m.message);
  }
}

}  // namespace vgpu
