#include "published.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

#include "csv_row.h"

namespace vgpu::bench {

Result<std::map<std::string, PublishedRow>> parse_published(std::string_view text, std::string_view path) {
  std::map<std::string, PublishedRow> out;
  std::vector<std::string> header;
  std::vector<std::string_view> header_views;
  constexpr std::string_view kSuffix = "_unallocated_pct";
  auto ok = for_each_csv_line(text, path, [&](int line_no, std::string_view line) -> Result<void> {
    auto fields = split_commas(line);
    if (line_no == 1) {
      if (fields.size() < 2 || fields.front() != "workload" || fields.back() != "seeds")
        return fail(ErrorCode::invalid_argument,
                    fmt::format("{}:1: header '{}': expected 'workload,<scheduler>{},...,seeds'", path, line, kSuffix));
      for (auto f : fields) header.emplace_back(f);
      for (std::size_t c = 1; c + 1 < header.size(); ++c)
        if (!header[c].ends_with(kSuffix))
          return fail(ErrorCode::invalid_argument,
                      fmt::format("{}:1: column '{}': expected a name ending in '{}'", path, header[c], kSuffix));
      for (const auto& h : header) header_views.emplace_back(h);
      return {};
    }
    if (auto cols = check_columns(path, line_no, fields.size(), header.size()); !cols) return cols;
    RowReader row(path, line_no, header_views, fields);
    if (fields[0].empty()) return std::unexpected(row.error(0, "empty workload"));
    PublishedRow r;
    for (std::size_t c = 1; c + 1 < fields.size(); ++c) {
      double v = 0;
      auto [ptr, ec] = std::from_chars(fields[c].data(), fields[c].data() + fields[c].size(), v);
      if (fields[c].empty() || ec != std::errc{} || ptr != fields[c].data() + fields[c].size() || v < 0 || v > 100)
        return std::unexpected(row.error(c, "not a percentage in [0, 100]"));
      r.unallocated_pct[header[c].substr(0, header[c].size() - kSuffix.size())] = v;
    }
    if (auto seeds = row.integer(fields.size() - 1, 1, 1000); !seeds) return std::unexpected(seeds.error());
    out[std::string(fields[0])] = std::move(r);
    return {};
  });
  if (!ok) return std::unexpected(ok.error());
  if (out.empty()) return fail(ErrorCode::invalid_argument, fmt::format("{}: no rows", path));
  return out;
}

Result<std::map<std::string, PublishedRow>> load_published(const std::string& path) {
  auto text = read_csv_file(path);
  if (!text) return std::unexpected(text.error());
  return parse_published(*text, path);
}

std::optional<std::string> workload_of_trace(std::string_view trace_path) {
  std::size_t slash = trace_path.rfind('/');
  std::string_view file = slash == std::string_view::npos ? trace_path : trace_path.substr(slash + 1);
  constexpr std::string_view kPrefix = "openb_pod_list_", kExt = ".csv";
  if (!file.starts_with(kPrefix) || !file.ends_with(kExt)) return std::nullopt;
  file.remove_prefix(kPrefix.size());
  file.remove_suffix(kExt.size());
  if (file.empty()) return std::nullopt;
  return std::string(file);
}

}  // namespace vgpu::bench
