#include "vgpu/contract/slurmd_report.h"

#include <nlohmann/json.hpp>

#include "vgpu/contract/names.h"
#include "vgpu/contract/strict_json.h"

namespace vgpu::contract {

std::string render_slurmd_report(const SlurmdReport& report) {
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [type, n] : report.counts)
    if (n > 0) counts[type] = n;
  nlohmann::json doc = {{"format", kSlurmdReportFormat},   {"version", kSlurmdReportVersion}, {"node", report.node},
                        {"generation", report.generation}, {"total", report.total},           {"counts", counts}};
  return doc.dump() + "\n";
}

Result<SlurmdReport> parse_slurmd_report(std::string_view text, std::string_view expected_node) {
  auto doc = parse_strict_json(text);
  if (!doc) return std::unexpected(doc.error());
  if (auto ok = require_exact_keys(*doc, {"format", "version", "node", "generation", "total", "counts"}); !ok)
    return std::unexpected(ok.error());
  if (auto ok = require_header(*doc, kSlurmdReportFormat, kSlurmdReportVersion); !ok)
    return std::unexpected(ok.error());
  SlurmdReport report;
  auto node = require_string(*doc, "node");
  if (!node) return std::unexpected(node.error());
  if (*node != expected_node)
    return fail(ErrorCode::corrupt,
                "field 'node' is '" + *node + "' but this is node '" + std::string(expected_node) + "'");
  report.node = *node;
  auto generation = require_unsigned(*doc, "generation");
  if (!generation) return std::unexpected(generation.error());
  report.generation = *generation;
  auto total = require_unsigned(*doc, "total");
  if (!total) return std::unexpected(total.error());
  report.total = *total;
  const auto& counts = doc->at("counts");
  if (!counts.is_object()) return fail(ErrorCode::corrupt, "field 'counts' must be an object");
  for (const auto& item : counts.items()) {
    if (is_reserved_type(item.key()) || !is_valid_type_name(item.key()))
      return fail(ErrorCode::corrupt, "counts '" + item.key() + "': not a valid type name");
    if (!item.value().is_number_unsigned() || item.value().get<std::uint64_t>() == 0)
      return fail(ErrorCode::corrupt,
                  "counts '" + item.key() + "': count must be a positive integer, got " + item.value().dump());
    report.counts.emplace(item.key(), item.value().get<std::uint64_t>());
  }
  std::uint64_t sum = 0;
  for (const auto& [type, n] : report.counts) {
    if (n > report.total - sum)
      return fail(ErrorCode::corrupt,
                  "counts add up to more than field 'total' (" + std::to_string(report.total) + ")");
    sum += n;
  }
  return report;
}

std::string slurmd_report_path(std::string_view state_dir, std::string_view node) {
  return std::string(state_dir) + "/" + std::string(node) + "/slurmd-report.json";
}

}  // namespace vgpu::contract
