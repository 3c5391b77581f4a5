#include "node_list_csv.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "csv_row.h"

namespace vgpu::bench {
namespace {

constexpr std::array<std::string_view, 5> kHeader = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};

}  // namespace

Result<ClusterShape> parse_node_list(std::string_view text, std::string_view path) {
  std::vector<NodeShape> nodes;
  auto ok = for_each_csv_line(text, path, [&](int line_no, std::string_view line) -> Result<void> {
    auto fields = split_commas(line);
    if (line_no == 1) {
      if (std::ranges::equal(fields, kHeader)) return {};
      return fail(ErrorCode::invalid_argument,
                  fmt::format("{}:1: header '{}': expected '{}'", path, line, fmt::join(kHeader, ",")));
    }
    if (auto cols = check_columns(path, line_no, fields.size(), kHeader.size()); !cols) return cols;
    RowReader row(path, line_no, kHeader, fields);
    if (fields[0].empty()) return std::unexpected(row.error(0, "empty node name"));
    auto cpu = row.integer(1, 1, 1'000'000'000);
    if (!cpu) return std::unexpected(cpu.error());
    auto memory = row.integer(2, 1, 1'000'000'000'000);
    if (!memory) return std::unexpected(memory.error());
    auto gpus = row.integer(3, 1, 64);
    if (!gpus) return std::unexpected(gpus.error());
    nodes.push_back({static_cast<int>(*gpus), *cpu, *memory});
    return {};
  });
  if (!ok) return std::unexpected(ok.error());
  if (nodes.empty()) return fail(ErrorCode::invalid_argument, fmt::format("{}: no nodes", path));
  return ClusterShape(std::move(nodes));
}

Result<ClusterShape> load_node_list(const std::string& path) {
  auto text = read_csv_file(path);
  if (!text) return std::unexpected(text.error());
  return parse_node_list(*text, path);
}

}  // namespace vgpu::bench
