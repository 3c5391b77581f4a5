// The whole file: syntax (with positions from the source map), duplicate keys, the top level,
// planner knobs and images; partitions are read by policy_parse_partition.cpp. Checks that span
// partitions (pool names unique across the file) live here too.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>

#include "policy_reader.h"
#include "vgpu/core/shared_instance.h"
#include "vgpu/contract/file_system.h"
#include "vgpu/contract/guarded_read.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu {

using policy_detail::Diagnostics;
using policy_detail::FieldPath;
using policy_detail::Json;

std::string PolicyDiagnostic::to_string() const {
  std::string where = line > 0 ? fmt::format("{}:{}:{}: ", file, line, column) : fmt::format("{}: ", file);
  if (!path.empty()) where += path + ": ";
  return where + message;
}

std::string PolicyCheck::unlisted_line() const {
  if (unlisted == 0) return {};
  return fmt::format("... and {} more error{}", unlisted, unlisted == 1 ? "" : "s");
}

namespace policy_detail {

namespace {

// Slurm keeps a node's weight as a uint32 and shifts it left by 8 for scheduling; a weight in
// 1..2^31-1 is valid on every release.
std::optional<PlannerKnobs::NodeWeights> parse_node_weights(Diagnostics& d, const Json& value, const FieldPath& path) {
  if (!expect_object(d, value, path)) return std::nullopt;
  reject_unknown_fields(d, value, path, {"in_use", "idle", "base", "per_free_gpu", "comment"});
  if (const Json* v = member(value, "comment")) read_string(d, *v, path.key("comment"));
  const bool by_free = member(value, "base") || member(value, "per_free_gpu");
  const std::array by_use_fields{"in_use", "idle"}, by_free_fields{"base", "per_free_gpu"};
  for (const char* other : by_free ? by_use_fields : by_free_fields)
    if (member(value, other))
      d.at_value(path.key(other),
                 "not with {}: a node's weight follows either its use (in_use, idle) "
                 "or its free capacity (base, per_free_gpu)",
                 by_free ? "base and per_free_gpu" : "in_use and idle");
  std::optional<int> first, second;
  const auto& fields = by_free ? by_free_fields : by_use_fields;
  for (auto [field, target] : {std::pair{fields[0], &first}, std::pair{fields[1], &second}}) {
    if (const Json* v = member(value, field)) *target = read_int(d, *v, path.key(field), 1, 2147483647);
    else
      missing(d, path.key(field));
  }
  if (!first || !second) return std::nullopt;
  if (by_free) {
    const long long most = *first + static_cast<long long>(PlannerKnobs::kMaxGpusPerNode) * *second;
    if (most > 2147483647) {
      d.at_value(path.key("per_free_gpu"), "base + {} x per_free_gpu is {}, above Slurm's largest weight 2147483647",
                 PlannerKnobs::kMaxGpusPerNode, most);
      return std::nullopt;
    }
    PlannerKnobs::NodeWeights w;
    w.base = *first;
    w.per_free_gpu = *second;
    return w;
  }
  if (*first >= *second) {
    d.at_value(path.key("in_use"),
               "must be below idle ({}): Slurm fills the lightest nodes first, and "
               "nodes in use are the ones to fill",
               *second);
    return std::nullopt;
  }
  return PlannerKnobs::NodeWeights{*first, *second};
}

}  // namespace

PlannerKnobs parse_planner(Diagnostics& d, const Json& value, const FieldPath& path) {
  PlannerKnobs knobs;
  if (!expect_object(d, value, path)) return knobs;
  reject_unknown_fields(
      d, value, path,
      {"period_s", "starvation_s", "idle_return_s", "prepare_slots", "node_weights", "node_features", "comment"});
  std::optional<int> period, starvation;
  if (const Json* v = member(value, "period_s")) period = read_int(d, *v, path.key("period_s"), 1, 3600);
  if (const Json* v = member(value, "starvation_s")) starvation = read_int(d, *v, path.key("starvation_s"), 1, 86400);
  if (const Json* v = member(value, "idle_return_s"))
    if (auto n = read_int(d, *v, path.key("idle_return_s"), 0, 86400)) knobs.idle_return_s = *n;
  if (const Json* v = member(value, "prepare_slots"))
    if (auto b = read_bool(d, *v, path.key("prepare_slots"))) knobs.prepare_slots = *b;
  if (const Json* v = member(value, "node_weights"))
    knobs.node_weights = parse_node_weights(d, *v, path.key("node_weights"));
  if (const Json* v = member(value, "node_features"))
    if (auto b = read_bool(d, *v, path.key("node_features"))) knobs.node_features = *b;
  if (const Json* v = member(value, "comment")) read_string(d, *v, path.key("comment"));
  if (period) knobs.period_s = *period;
  if (starvation) knobs.starvation_s = *starvation;
  if (period && starvation && *starvation < *period)
    d.at_value(path.key("starvation_s"), "must be at least period_s ({}): starvation is judged once per period",
               *period);
  return knobs;
}

std::map<std::string, VmImage> parse_images(Diagnostics& d, const Json& value, const FieldPath& path) {
  std::map<std::string, VmImage> images;
  if (!expect_object(d, value, path)) return images;
  for (const auto& [name, spec] : value.items()) {
    FieldPath at = path.key(name);
    bool name_ok = check_key_name(d, name, at, "image");
    if (!expect_object(d, spec, at)) continue;
    reject_unknown_fields(d, spec, at, {"kernel", "initrd", "cmdline", "disk", "comment"});
    std::size_t before = d.count();
    VmImage image;
    image.name = name;
    for (auto [field, target] : {std::pair{"kernel", &image.kernel}, std::pair{"initrd", &image.initrd}}) {
      if (const Json* v = member(spec, field)) {
        if (auto p = read_abs_path(d, *v, at.key(field))) *target = *p;
      } else {
        missing(d, at.key(field));
      }
    }
    if (const Json* v = member(spec, "disk")) image.disk = read_abs_path(d, *v, at.key("disk"));
    if (const Json* v = member(spec, "cmdline")) {
      image.cmdline = read_string(d, *v, at.key("cmdline"));
      if (image.cmdline && (image.cmdline->size() > 4096 || std::ranges::any_of(*image.cmdline, [](char c) {
                              return static_cast<unsigned char>(c) < 0x20;
                            })))
        d.at_value(at.key("cmdline"), "must be one line of at most 4096 bytes");
    }
    if (const Json* v = member(spec, "comment")) read_string(d, *v, at.key("comment"));
    if (name_ok && d.count() == before) images.emplace(name, std::move(image));
  }
  return images;
}

namespace {

// A pool name is what users type as the gres type, so it must be unique in the whole file.
void check_pool_names_unique(Diagnostics& d, const Json& partitions) {
  std::map<std::string, FieldPath> first_use;
  for (const auto& [part_name, part] : partitions.items()) {
    const Json* pools = member(part, "viz_pools");
    if (!pools || !pools->is_array()) continue;
    for (std::size_t i = 0; i < pools->size(); ++i) {
      const Json* name = member((*pools)[i], "name");
      if (!name || !name->is_string()) continue;
      FieldPath at = FieldPath{}.key("partitions").key(part_name).key("viz_pools").index(i).key("name");
      auto [it, inserted] = first_use.emplace(name->get<std::string>(), at);
      if (!inserted)
        d.at_value(at, [&] {
          return fmt::format("viz pool name \"{}\" is already used by {}", name->get<std::string>(),
                             it->second.display());
        });
    }
  }
}

// A GRES type the file defines is named like a profile's type (the contract's alphabet, not a
// reserved word) but never spelled like a profile, which would make a request ambiguous.
bool check_site_type_name(Diagnostics& d, const std::string& name, const FieldPath& at, std::string_view what,
                          std::string_view naming_hint) {
  if (!contract::is_valid_type_name(name) || contract::is_reserved_type(name)) {
    d.at_key(at, "{} name must be {}", what, contract::type_name_rule());
    return false;
  }
  if (parse_profile_name(name)) {
    d.at_key(at, "{} name is spelled like a profile: {}", what, naming_hint);
    return false;
  }
  return true;
}

// "classes": {"<name>": {"min_memory_gb": N, "min_compute_fraction": F}}: a class is a GRES type
// like a profile, so its name follows the type alphabet, must not be spelled like a profile, and
// some known model must be able to realize it.
std::vector<GpuClass> parse_classes(Diagnostics& d, const Json& value, const FieldPath& path) {
  std::vector<GpuClass> out;
  if (!expect_object(d, value, path)) return out;
  for (const auto& [name, spec] : value.items()) {
    FieldPath at = path.key(name);
    if (!check_site_type_name(d, name, at, "class", "name classes by need (\"small\", \"train-large\")")) continue;
    if (!expect_object(d, spec, at)) continue;
    reject_unknown_fields(d, spec, at, {"min_memory_gb", "min_compute_fraction", "comment"});
    GpuClass c{name, 0, 0.0, "", 0};
    if (const Json* v = member(spec, "min_memory_gb"))
      if (auto gb = read_int(d, *v, at.key("min_memory_gb"), 0, 100000)) c.min_memory_gb = *gb;
    if (const Json* v = member(spec, "min_compute_fraction")) {
      if (!v->is_number() || v->get<double>() <= 0.0 || v->get<double>() > 1.0)
        d.at_value(at.key("min_compute_fraction"), "must be a number above 0 and at most 1, {}", got(*v));
      else
        c.min_compute_fraction = v->get<double>();
    }
    if (const Json* v = member(spec, "comment")) read_string(d, *v, at.key("comment"));
    const bool somewhere =
        std::ranges::any_of(Catalog::builtin().models(), [&](const GpuModel& m) { return realize(m, c) != nullptr; });
    if (!somewhere) {
      d.at_value(at, "no known GPU model has a profile with {} GB and {} of its compute", c.min_memory_gb,
                 c.min_compute_fraction);
      continue;
    }
    out.push_back(std::move(c));
  }
  std::ranges::sort(out, {}, &GpuClass::name);
  return out;
}

// "share_types": {"<name>": {"instance": "<profile or class>", "shares": N}}: one of N equal
// parts of an instance, run through CUDA MPS. A GRES type like a class (same alphabet, not spelled
// like a profile, not a class's name); the instance splits into N shares on every model that has
// it (share_limits), or the admin learns now which model and why not.
std::vector<GpuClass> parse_share_types(Diagnostics& d, const Json& value, const FieldPath& path,
                                        const std::vector<GpuClass>& classes) {
  std::vector<GpuClass> out;
  if (!expect_object(d, value, path)) return out;
  for (const auto& [name, spec] : value.items()) {
    FieldPath at = path.key(name);
    if (!check_site_type_name(d, name, at, "share type", "name it by what it is (\"quarter\", \"infer-share\")"))
      continue;
    if (std::ranges::find(classes, name, &GpuClass::name) != classes.end()) {
      d.at_key(at, "\"{}\" is already a class: a GRES type has one meaning", name);
      continue;
    }
    if (!expect_object(d, spec, at)) continue;
    reject_unknown_fields(d, spec, at, {"instance", "shares", "comment"});
    std::size_t before = d.count();
    GpuClass t;
    t.name = name;
    if (const Json* v = member(spec, "instance")) {
      if (auto instance = read_string(d, *v, at.key("instance"))) {
        auto cls = std::ranges::find(classes, *instance, &GpuClass::name);
        if (cls != classes.end()) {
          t.min_memory_gb = cls->min_memory_gb;
          t.min_compute_fraction = cls->min_compute_fraction;
        } else if (auto spelled = parse_profile_name(*instance); !spelled) {
          d.at_value(at.key("instance"), "\"{}\" is neither a class of this file nor a profile: {}", *instance,
                     spelled.error().message);
        } else if (instance->find('+') != std::string::npos) {
          d.at_value(at.key("instance"), "{}: a media or graphics variant is not shared", *instance);
        } else {
          t.profile = *instance;
        }
      }
    } else {
      missing(d, at.key("instance"));
    }
    if (const Json* v = member(spec, "shares")) {
      if (auto n = read_int(d, *v, at.key("shares"), 2, kMaxSharesPerInstance)) t.shares = *n;
    } else {
      missing(d, at.key("shares"));
    }
    if (const Json* v = member(spec, "comment")) read_string(d, *v, at.key("comment"));
    if (d.count() != before) continue;
    // Where the instance exists it must split into the shares; it must exist somewhere.
    GpuClass whole = t;
    whole.shares = 0;
    bool somewhere = false;
    for (const auto& m : Catalog::builtin().models()) {
      const Profile* instance = realize(m, whole);
      if (!instance) continue;
      somewhere = true;
      if (auto limits = share_limits(*instance, t.shares); !limits)
        d.at_value(at.key("shares"), "on {}: {}", m.name, limits.error().message);
    }
    if (!somewhere)
      d.at_value(at.key("instance"), "no known GPU model has {}",
                 t.profile.empty() ? "a profile that meets the class" : t.profile);
    if (d.count() == before) out.push_back(std::move(t));
  }
  std::ranges::sort(out, {}, &GpuClass::name);
  return out;
}

void parse_document(Diagnostics& d, const Json& doc, PolicyFile& out, std::optional<Catalog>& with_classes) {
  FieldPath root;
  if (!expect_object(d, doc, root)) return;
  reject_unknown_fields(d, doc, root,
                        {"version", "planner", "images", "classes", "share_types", "partitions", "comment"});
  if (const Json* v = member(doc, "version")) {
    // A file for another version may mean different things by the same fields: check nothing more.
    if (!v->is_number_integer() || *v != kPolicyVersion) {
      d.at_value(root.key("version"), "unsupported policy version, {} (this reader understands version {})", got(*v),
                 kPolicyVersion);
      return;
    }
  } else {
    d.at_value(root.key("version"), "{} (write \"version\": {})", contract::kMissingFieldMessage, kPolicyVersion);
  }
  if (const Json* v = member(doc, "comment")) read_string(d, *v, root.key("comment"));
  if (const Json* v = member(doc, "planner")) out.planner = parse_planner(d, *v, root.key("planner"));
  const Json* images = member(doc, "images");
  if (images) out.images = parse_images(d, *images, root.key("images"));
  if (images && !images->is_object()) images = nullptr;

  // Partitions may name classes and share types as they name profiles: checked against the
  // catalog with them.
  if (const Json* v = member(doc, "classes")) out.classes = parse_classes(d, *v, root.key("classes"));
  if (const Json* v = member(doc, "share_types"))
    out.share_types = parse_share_types(d, *v, root.key("share_types"), out.classes);
  if (!out.classes.empty() || !out.share_types.empty()) {
    with_classes.emplace(Catalog::with_classes(Catalog::builtin(), out.site_types()));
    d.use_catalog(*with_classes);
  }
  const Json* partitions = member(doc, "partitions");
  FieldPath parts_path = root.key("partitions");
  if (!partitions) {
    missing(d, parts_path);
    return;
  }
  if (!expect_object(d, *partitions, parts_path)) return;
  if (partitions->empty()) d.at_value(parts_path, "must name at least one partition");
  for (const auto& [name, spec] : partitions->items()) {
    FieldPath at = parts_path.key(name);
    check_key_name(d, name, at, "partition");
    out.partitions.push_back(parse_partition(d, spec, at, name, images));
  }
  check_pool_names_unique(d, *partitions);
}

}  // namespace
}  // namespace policy_detail

namespace {

// The last key of a JSON pointer, unescaped (RFC 6901), for a message.
std::string last_key(std::string_view pointer) {
  std::string_view token = pointer.substr(pointer.rfind('/') + 1);
  std::string key;
  for (std::size_t k = 0; k < token.size(); ++k) {
    if (token[k] == '~' && k + 1 < token.size()) {
      key += token[k + 1] == '1' ? '/' : '~';
      ++k;
    } else {
      key += token[k];
    }
  }
  return key;
}

// read_guarded's errors start by naming the file ("policy /etc/x.json: refused: ...", or
// "policy: open /etc/x.json: ..."); the diagnostic names it already, as its file.
std::string without_file_prefix(const Error& error, const std::string& path) {
  std::string_view message = error.message;
  for (const std::string& prefix : {"policy " + path + ": ", std::string("policy: ")})
    if (message.starts_with(prefix)) return std::string(message.substr(prefix.size()));
  return error.message;
}

}  // namespace

PolicyCheck check_policy(std::string_view text, std::string_view file_label) {
  PolicyCheck check;
  std::string file(file_label);
  auto syntax = [&](SourcePos pos, std::string message) {
    check.diagnostics.push_back(PolicyDiagnostic{file, pos.line, pos.column, "", std::move(message)});
    return check;
  };
  auto map = JsonSourceMap::scan(text);
  if (!map) return syntax(map.error().pos, "invalid JSON: " + map.error().message);
  Json doc;
  try {
    doc = Json::parse(text, nullptr, true, false);
  } catch (const Json::parse_error& e) {
    // The scanner accepts exactly RFC 8259 JSON, so this means the two disagree: still say where.
    std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    return syntax(position_at_offset(text, offset), fmt::format("invalid JSON: {}", e.what()));
  } catch (const Json::exception& e) {
    // The scanner refuses what nlohmann cannot hold (a number like 1e400) where it stands, so
    // this too means the two disagree; nlohmann gives no offset for it.
    return syntax(SourcePos{}, fmt::format("invalid JSON: {}", e.what()));
  }

  Diagnostics d(*map, file);
  for (const auto& dup : map->duplicate_keys())
    d.at_position(dup.again, [&] {
      return fmt::format("duplicate key \"{}\" (first at line {}, column {})", last_key(dup.pointer), dup.first.line,
                         dup.first.column);
    });
  PolicyFile policy;
  policy.source = file;
  std::optional<Catalog> with_classes;  // outlives every check that names a class
  policy_detail::parse_document(d, doc, policy, with_classes);
  check.unlisted = d.unlisted();
  check.diagnostics = d.take_sorted();
  if (check.diagnostics.empty()) check.policy = std::move(policy);
  return check;
}

PolicyCheck check_policy_file(const std::string& path) {
  // Owners left empty: root and the reading process's own user (vgpuctl run by an admin on a draft).
  auto text =
      contract::read_guarded(posix_file_system(), path, {.what = "policy", .max_bytes = kMaxPolicyBytes, .owners = {}});
  if (!text) {
    PolicyCheck check;
    check.io_error = true;
    check.diagnostics.push_back(
        PolicyDiagnostic{path, 0, 0, "", "cannot read: " + without_file_prefix(text.error(), path)});
    return check;
  }
  return check_policy(text->text, path);
}

namespace {

Result<PolicyFile> to_result(PolicyCheck check) {
  if (check.policy) return std::move(*check.policy);
  std::string message;
  for (const auto& diag : check.diagnostics) {
    if (!message.empty()) message += '\n';
    message += diag.to_string();
  }
  if (check.unlisted > 0) message += '\n' + check.unlisted_line();
  return fail(check.io_error ? ErrorCode::io : ErrorCode::invalid_argument, std::move(message));
}

}  // namespace

Result<PolicyFile> parse_policy(std::string_view text, std::string_view file_label) {
  return to_result(check_policy(text, file_label));
}

Result<PolicyFile> load_policy_file(const std::string& path) { return to_result(check_policy_file(path)); }

}  // namespace vgpu
