// Private to vgpu_policy: the pieces every part of the policy parser shares. A FieldPath names
// where a value sits; Diagnostics collects errors against the source map; the typed readers each
// report their own error and return nullopt, so a parser can keep going and find every error.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <climits>
#include <concepts>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vgpu/policy/json_source_map.h"
#include "vgpu/policy/policy.h"

namespace vgpu::policy_detail {

using Json = nlohmann::json;

class FieldPath {
 public:
  [[nodiscard]] FieldPath key(std::string_view name) const;
  [[nodiscard]] FieldPath index(std::size_t i) const;
  [[nodiscard]] std::string pointer() const;  // RFC 6901, for the source map
  // What admins read: partitions.infer.nodes[1]; a key that is not a plain word is quoted,
  // partitions["my part"], so the path stays unambiguous.
  [[nodiscard]] std::string display() const;

 private:
  struct Token {
    std::string key;
    std::size_t index = 0;
    bool is_index = false;
  };
  std::vector<Token> tokens_;
};

// Collects errors against the source map, keeping the first kMaxPolicyDiagnostics and counting
// the rest. Past the cap an error costs a count only: neither its position nor its text is worked
// out, so a file with a million errors is checked in about the time a valid one takes.
class Diagnostics {
 public:
  Diagnostics(const JsonSourceMap& map, std::string file) : map_(map), file_(std::move(file)) {}

  // The catalog names are checked against: the built-in one until the file's classes are read,
  // then the built-in one with those classes (owned by the caller, alive for the whole parse).
  [[nodiscard]] const Catalog& catalog() const { return catalog_ ? *catalog_ : Catalog::builtin(); }
  void use_catalog(const Catalog& catalog) { catalog_ = &catalog; }

  // An error at the value `path` names; at_key reports at the key instead (unknown or duplicate
  // fields). The message is plain text, a format string with its arguments (formatted only when
  // the error is kept), or a function returning it, for a message whose arguments take work to
  // build (a list of every valid name): the function runs only when the error is kept.
  void at_value(const FieldPath& path, std::string_view message) {
    at_value(path, [message] { return std::string(message); });
  }
  template <class... Args>
  requires(sizeof...(Args) > 0) void at_value(const FieldPath& path, fmt::format_string<Args...> format,
                                              Args&&... args) {
    at_value(path, [&] { return fmt::format(format, std::forward<Args>(args)...); });
  }
  template <std::invocable Make>
  void at_value(const FieldPath& path, Make&& make) {
    if (counted_only()) return;
    keep(map_.value_position(path.pointer()), path.display(), std::forward<Make>(make)());
  }

  void at_key(const FieldPath& path, std::string_view message) {
    at_key(path, [message] { return std::string(message); });
  }
  template <class... Args>
  requires(sizeof...(Args) > 0) void at_key(const FieldPath& path, fmt::format_string<Args...> format, Args&&... args) {
    at_key(path, [&] { return fmt::format(format, std::forward<Args>(args)...); });
  }
  template <std::invocable Make>
  void at_key(const FieldPath& path, Make&& make) {
    if (counted_only()) return;
    keep(map_.key_position(path.pointer()), path.display(), std::forward<Make>(make)());
  }

  // An error about the text at `pos` rather than about a field (a duplicate key).
  template <std::invocable Make>
  void at_position(SourcePos pos, Make&& make) {
    if (counted_only()) return;
    keep(pos, {}, std::forward<Make>(make)());
  }

  // Every error found, kept or only counted: what a parser compares to tell whether a part was good.
  [[nodiscard]] std::size_t count() const { return items_.size() + unlisted_; }
  [[nodiscard]] std::size_t unlisted() const { return unlisted_; }
  [[nodiscard]] std::vector<PolicyDiagnostic> take_sorted();

 private:
  // True, and the error counted, once the cap is reached.
  bool counted_only() {
    if (items_.size() < kMaxPolicyDiagnostics) return false;
    ++unlisted_;
    return true;
  }
  void keep(SourcePos pos, std::string path, std::string message);

  const JsonSourceMap& map_;
  std::string file_;
  const Catalog* catalog_ = nullptr;
  std::vector<PolicyDiagnostic> items_;
  std::size_t unlisted_ = 0;
};

// "got \"four\"", "got 4.5", "got an array": how a bad value is shown in a message. Formatted
// (fmt) where it is used, so a message that is only counted never renders the value.
struct Got {
  const Json& value;
};
inline Got got(const Json& value) { return Got{value}; }

const Json* member(const Json& object, std::string_view key);
bool expect_object(Diagnostics& d, const Json& value, const FieldPath& path);
bool expect_array(Diagnostics& d, const Json& value, const FieldPath& path);
void reject_unknown_fields(Diagnostics& d, const Json& object, const FieldPath& path,
                           std::initializer_list<std::string_view> known);
// Reports a missing required field at the object that should hold it.
void missing(Diagnostics& d, const FieldPath& field);

std::optional<int> read_int(Diagnostics& d, const Json& value, const FieldPath& path, int min, int max = INT_MAX);
std::optional<std::string> read_string(Diagnostics& d, const Json& value, const FieldPath& path);
std::optional<bool> read_bool(Diagnostics& d, const Json& value, const FieldPath& path);
std::optional<std::string> read_choice(Diagnostics& d, const Json& value, const FieldPath& path,
                                       std::initializer_list<std::string_view> choices);

// Names of partitions, pools and images: [A-Za-z0-9_.-]{1,64}.
bool is_valid_name(std::string_view name);
std::string_view name_rule();
// Checks a name used as an object key, reporting at the key.
bool check_key_name(Diagnostics& d, std::string_view name, const FieldPath& path, std::string_view what);

// Absolute path without "..": the VM image files are opened by root.
std::optional<std::string> read_abs_path(Diagnostics& d, const Json& value, const FieldPath& path);

// Reads a list of profile names that must exist on at least one of `models`; lists valid names
// otherwise. `where` says which models in messages ("any known GPU model", "H100-80GB").
std::optional<std::vector<std::string>> read_profile_list(Diagnostics& d, const Json& value, const FieldPath& path,
                                                          const std::vector<const GpuModel*>& models,
                                                          std::string_view where);

// Every catalog profile name once, in catalog order.
std::vector<std::string> all_profile_names(const std::vector<const GpuModel*>& models);
std::vector<const GpuModel*> all_models(const Catalog& catalog);

// The idle layout placed as the planner does, with each entry that fails and why.
struct IdleProblem {
  std::size_t index = 0;
  std::string message;
};
struct IdlePlacement {
  GpuLayout layout;
  std::vector<IdleProblem> problems;
};
IdlePlacement place_idle(const PartitionPolicy& partition, const GpuModel& model);

// Parts of the file, each in its own source file.
PlannerKnobs parse_planner(Diagnostics& d, const Json& value, const FieldPath& path);
std::map<std::string, VmImage> parse_images(Diagnostics& d, const Json& value, const FieldPath& path);
PartitionPolicy parse_partition(Diagnostics& d, const Json& value, const FieldPath& path, std::string name,
                                const Json* images);
std::optional<VizPool> parse_viz_pool(Diagnostics& d, const Json& value, const FieldPath& path,
                                      const PartitionPolicy& partition, const Json* images);

}  // namespace vgpu::policy_detail

template <>
struct fmt::formatter<vgpu::policy_detail::Got> : fmt::formatter<std::string_view> {
  format_context::iterator format(const vgpu::policy_detail::Got& got, format_context& ctx) const;
};
