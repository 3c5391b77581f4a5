#include "vgpu/contract/strict_json.h"

#include <set>
#include <vector>

namespace vgpu::contract {

using nlohmann::json;

Result<json> parse_strict_json(std::string_view text) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto watch = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: open_objects.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default: break;
    }
    return true;
  };
  json doc = json::parse(text.begin(), text.end(), watch, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail(ErrorCode::corrupt, "not valid JSON");
  if (!duplicate.empty()) return fail(ErrorCode::corrupt, "duplicate key '" + duplicate + "'");
  return doc;
}

std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 128)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

namespace {

template <class Keys>
std::string unknown_field_in(const Keys& known) {
  std::string list;
  for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
  return "unknown field (known here: " + list + ")";
}

}  // namespace

std::string unknown_field_message(std::initializer_list<std::string_view> known) { return unknown_field_in(known); }
std::string unknown_field_message(const std::vector<std::string>& known) { return unknown_field_in(known); }

std::vector<KeyProblem> key_problems(const json& obj, std::initializer_list<std::string_view> required,
                                     std::initializer_list<std::string_view> optional) {
  std::vector<KeyProblem> problems;
  std::vector<std::string_view> known(required);
  known.insert(known.end(), optional.begin(), optional.end());
  for (const auto& item : obj.items()) {
    bool is_known = false;
    for (auto k : known) is_known = is_known || item.key() == k;
    if (!is_known) problems.push_back({item.key(), unknown_field_in(known)});
  }
  for (auto key : required)
    if (!obj.contains(key)) problems.push_back({std::string(key), std::string(kMissingFieldMessage)});
  return problems;
}

Result<void> require_keys(const json& obj, std::string_view where, std::initializer_list<std::string_view> required,
                          std::initializer_list<std::string_view> optional) {
  if (!obj.is_object())
    return fail(ErrorCode::corrupt,
                (where.empty() ? std::string() : std::string(where) + ": ") + "expected a JSON object");
  auto problems = key_problems(obj, required, optional);
  if (problems.empty()) return {};
  const auto& p = problems.front();
  return fail(ErrorCode::corrupt,
              (where.empty() ? "" : std::string(where) + ".") + printable(p.key) + ": " + p.message);
}

Result<void> require_exact_keys(const json& obj, std::initializer_list<std::string_view> keys) {
  return require_keys(obj, "", keys);
}

Result<std::uint64_t> require_unsigned(const json& obj, std::string_view key) {
  const json& value = obj.at(key);
  if (!value.is_number_unsigned()) {
    return fail(ErrorCode::corrupt,
                "field '" + std::string(key) + "' must be a non-negative integer, got " + value.dump());
  }
  return value.get<std::uint64_t>();
}

Result<std::string> require_string(const json& obj, std::string_view key) {
  const json& value = obj.at(key);
  if (!value.is_string()) {
    return fail(ErrorCode::corrupt, "field '" + std::string(key) + "' must be a string, got " + value.dump());
  }
  return value.get<std::string>();
}

Result<void> require_header(const json& doc, std::string_view format, std::uint64_t version) {
  auto got_format = require_string(doc, "format");
  if (!got_format) return std::unexpected(got_format.error());
  if (*got_format != format) {
    return fail(ErrorCode::corrupt, "format is '" + *got_format + "', expected '" + std::string(format) + "'");
  }
  auto got_version = require_unsigned(doc, "version");
  if (!got_version) return std::unexpected(got_version.error());
  if (*got_version != version) {
    return fail(ErrorCode::corrupt, "unsupported version " + std::to_string(*got_version) +
                                        " (this plugin reads version " + std::to_string(version) + ")");
  }
  return {};
}

}  // namespace vgpu::contract
