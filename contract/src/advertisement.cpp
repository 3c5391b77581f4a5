#include "vgpu/contract/advertisement.h"

#include <nlohmann/json.hpp>

#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu::contract {

std::string render_advertisement(const Advertisement& adv) {
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [type, n] : adv.counts) counts[type] = n;
  nlohmann::json doc = {{"format", kAdvertisementFormat},
                        {"version", kAdvertisementVersion},
                        {"node", adv.node},
                        {"generation", adv.generation},
                        {"counts", counts}};
  return doc.dump(2) + "\n";
}

Result<Advertisement> parse_advertisement(std::string_view text, std::string_view expected_node) {
  auto doc = parse_strict_json(text);
  if (!doc) return std::unexpected(doc.error());
  if (auto ok = require_exact_keys(*doc, {"format", "version", "node", "generation", "counts"}); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto ok = require_header(*doc, kAdvertisementFormat, kAdvertisementVersion); !ok) {
    return std::unexpected(ok.error());
  }
  Advertisement adv;
  auto node = require_string(*doc, "node");
  if (!node) return std::unexpected(node.error());
  if (*node != expected_node) {
    return fail(ErrorCode::corrupt,
                "field 'node' is '" + *node + "' but this is node '" + std::string(expected_node) + "'");
  }
  adv.node = *node;
  auto generation = require_unsigned(*doc, "generation");
  if (!generation) return std::unexpected(generation.error());
  adv.generation = *generation;

  const auto& counts = doc->at("counts");
  if (!counts.is_object()) return fail(ErrorCode::corrupt, "field 'counts' must be an object");
  for (const auto& item : counts.items()) {
    const std::string context = "counts '" + item.key() + "'";
    if (is_reserved_type(item.key())) {
      return fail(ErrorCode::corrupt, context + ": reserved type name (the plugin computes it)");
    }
    if (!is_valid_type_name(item.key())) return fail(ErrorCode::corrupt, context + ": not a valid profile name");
    if (!item.value().is_number_unsigned()) {
      return fail(ErrorCode::corrupt, context + ": count must be a non-negative integer, got " + item.value().dump());
    }
    adv.counts.emplace(item.key(), item.value().get<std::uint64_t>());
  }
  return adv;
}

}  // namespace vgpu::contract
