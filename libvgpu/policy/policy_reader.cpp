#include "policy_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "vgpu/contract/strict_json.h"

namespace vgpu::policy_detail {
namespace {

bool is_plain_word(std::string_view key) {
  return !key.empty() && std::ranges::all_of(key, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

std::string quoted_list(std::initializer_list<std::string_view> items) {
  std::vector<std::string> out;
  for (auto item : items) out.push_back(fmt::format("\"{}\"", item));
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

FieldPath FieldPath::key(std::string_view name) const {
  FieldPath p = *this;
  p.tokens_.push_back(Token{std::string(name), 0, false});
  return p;
}

FieldPath FieldPath::index(std::size_t i) const {
  FieldPath p = *this;
  p.tokens_.push_back(Token{{}, i, true});
  return p;
}

std::string FieldPath::pointer() const {
  std::string out;
  for (const auto& t : tokens_) {
    out += '/';
    out += t.is_index ? std::to_string(t.index) : json_pointer_token(t.key);
  }
  return out;
}

std::string FieldPath::display() const {
  std::string out;
  for (const auto& t : tokens_) {
    if (t.is_index) {
      out += fmt::format("[{}]", t.index);
    } else if (is_plain_word(t.key)) {
      if (!out.empty()) out += '.';
      out += t.key;
    } else {
      out += "[" + Json(t.key).dump(-1, ' ', false, Json::error_handler_t::replace) + "]";
    }
  }
  return out.empty() ? std::string("(top level)") : out;
}

void Diagnostics::keep(SourcePos pos, std::string path, std::string message) {
  items_.push_back(PolicyDiagnostic{file_, pos.line, pos.column, std::move(path), std::move(message)});
}

std::vector<PolicyDiagnostic> Diagnostics::take_sorted() {
  std::ranges::stable_sort(items_, [](const PolicyDiagnostic& a, const PolicyDiagnostic& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  return std::move(items_);
}

const Json* member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool expect_object(Diagnostics& d, const Json& value, const FieldPath& path) {
  if (value.is_object()) return true;
  d.at_value(path, "must be an object, {}", got(value));
  return false;
}

bool expect_array(Diagnostics& d, const Json& value, const FieldPath& path) {
  if (value.is_array()) return true;
  d.at_value(path, "must be a list, {}", got(value));
  return false;
}

void reject_unknown_fields(Diagnostics& d, const Json& object, const FieldPath& path,
                           std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    if (std::ranges::find(known, std::string_view(key)) != known.end()) continue;
    d.at_key(path.key(key), [&] { return contract::unknown_field_message(known); });
  }
}

void missing(Diagnostics& d, const FieldPath& field) { d.at_value(field, std::string(contract::kMissingFieldMessage)); }

std::optional<int> read_int(Diagnostics& d, const Json& value, const FieldPath& path, int min, int max) {
  bool in_range = false;
  long long v = 0;
  if (value.is_number_unsigned()) {
    auto u = value.get<std::uint64_t>();
    in_range = u <= static_cast<std::uint64_t>(max) && static_cast<long long>(u) >= min;
    v = in_range ? static_cast<long long>(u) : 0;
  } else if (value.is_number_integer()) {
    v = value.get<std::int64_t>();
    in_range = v >= min && v <= max;
  }
  if (!in_range) {
    if (max == INT_MAX) d.at_value(path, "must be an integer >= {}, {}", min, got(value));
    else
      d.at_value(path, "must be an integer in {}..{}, {}", min, max, got(value));
    return std::nullopt;
  }
  return static_cast<int>(v);
}

std::optional<std::string> read_string(Diagnostics& d, const Json& value, const FieldPath& path) {
  if (value.is_string()) return value.get<std::string>();
  d.at_value(path, "must be a string, {}", got(value));
  return std::nullopt;
}

std::optional<bool> read_bool(Diagnostics& d, const Json& value, const FieldPath& path) {
  if (value.is_boolean()) return value.get<bool>();
  d.at_value(path, "must be true or false, {}", got(value));
  return std::nullopt;
}

std::optional<std::string> read_choice(Diagnostics& d, const Json& value, const FieldPath& path,
                                       std::initializer_list<std::string_view> choices) {
  if (value.is_string()) {
    auto s = value.get<std::string>();
    if (std::ranges::find(choices, std::string_view(s)) != choices.end()) return s;
  }
  d.at_value(path, [&] { return fmt::format("must be one of {}, {}", quoted_list(choices), got(value)); });
  return std::nullopt;
}

bool is_valid_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

std::string_view name_rule() { return "1 to 64 letters, digits, '_', '.' or '-'"; }

bool check_key_name(Diagnostics& d, std::string_view name, const FieldPath& path, std::string_view what) {
  if (is_valid_name(name)) return true;
  d.at_key(path, "{} name must be {}", what, name_rule());
  return false;
}

std::optional<std::string> read_abs_path(Diagnostics& d, const Json& value, const FieldPath& path) {
  auto text = read_string(d, value, path);
  if (!text) return std::nullopt;
  auto bad = [&](std::string_view why) {
    d.at_value(path, "must be an absolute path without '..' components ({}), {}", why, got(value));
    return std::nullopt;
  };
  if (text->empty() || text->front() != '/') return bad("not absolute");
  if (text->size() > 4096) return bad("longer than 4096 bytes");
  if (std::ranges::any_of(*text, [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
    return bad("control character");
  for (std::size_t start = 0; start <= text->size();) {
    auto end = text->find('/', start);
    if (end == std::string::npos) end = text->size();
    if (std::string_view(*text).substr(start, end - start) == "..") return bad("has '..'");
    start = end + 1;
  }
  return text;
}

std::vector<const GpuModel*> all_models(const Catalog& catalog) {
  std::vector<const GpuModel*> out;
  for (const auto& m : catalog.models()) out.push_back(&m);
  return out;
}

std::vector<std::string> all_profile_names(const std::vector<const GpuModel*>& models) {
  std::vector<std::string> names;
  for (const auto* m : models)
    for (const auto& p : m->profiles)
      if (std::ranges::find(names, p.name) == names.end()) names.push_back(p.name);
  return names;
}

std::optional<std::vector<std::string>> read_profile_list(Diagnostics& d, const Json& value, const FieldPath& path,
                                                          const std::vector<const GpuModel*>& models,
                                                          std::string_view where) {
  if (!expect_array(d, value, path)) return std::nullopt;
  if (value.empty()) {
    d.at_value(path, "must list at least one profile (leave the field out to allow every profile)");
    return std::nullopt;
  }
  std::size_t before = d.count();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < value.size(); ++i) {
    FieldPath at = path.index(i);
    auto name = read_string(d, value[i], at);
    if (!name) continue;
    bool known = std::ranges::any_of(models, [&](const GpuModel* m) { return m->find_profile(*name); });
    // A class of the file (known on some model) is not spelled like a profile.
    if (auto spelled = parse_profile_name(*name); !spelled && !known) {
      d.at_value(at, spelled.error().message);
      continue;
    }
    if (!known) {
      d.at_value(at, [&] {
        return fmt::format("profile {} does not exist on {} (valid: {})", *name, where,
                           fmt::join(all_profile_names(models), ", "));
      });
      continue;
    }
    if (std::ranges::find(names, *name) != names.end()) {
      d.at_value(at, "profile {} is listed twice", *name);
      continue;
    }
    names.push_back(*name);
  }
  if (d.count() != before) return std::nullopt;
  return names;
}

}  // namespace vgpu::policy_detail

fmt::format_context::iterator fmt::formatter<vgpu::policy_detail::Got>::format(const vgpu::policy_detail::Got& got,
                                                                               format_context& ctx) const {
  using vgpu::policy_detail::Json;
  switch (got.value.type()) {
    case Json::value_t::object: return fmt::format_to(ctx.out(), "got an object");
    case Json::value_t::array: return fmt::format_to(ctx.out(), "got an array");
    case Json::value_t::null: return fmt::format_to(ctx.out(), "got null");
    default: break;
  }
  std::string text = got.value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return fmt::format_to(ctx.out(), "got {}", text);
}
