#include "trace_csv.h"

#include "csv_row.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <span>

namespace vgpu::bench {
namespace {

constexpr std::array<std::string_view, 5> kShortHeader = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"};
constexpr std::array<std::string_view, 11> kLongHeader = {
    "name", "cpu_milli", "memory_mib",    "num_gpu",       "gpu_milli",     "gpu_spec",
    "qos",  "pod_phase", "creation_time", "deletion_time", "scheduled_time"};

Result<TraceTask> parse_row(const RowReader& row, std::span<const std::string_view> fields, int line, bool has_times) {
  TraceTask t;
  t.line = line;
  t.name = std::string(fields[0]);
  if (t.name.empty()) return std::unexpected(row.error(0, "empty task name"));
  auto cpu = row.integer(1, 0, 1'000'000'000);
  if (!cpu) return std::unexpected(cpu.error());
  auto memory = row.integer(2, 0, 1'000'000'000'000);
  if (!memory) return std::unexpected(memory.error());
  t.cpu_milli = *cpu;
  t.memory_mib = *memory;
  auto num_gpu = row.integer(3, 0, 1024);
  if (!num_gpu) return std::unexpected(num_gpu.error());
  auto milli = row.integer(4, 0, 1000);
  if (!milli) return std::unexpected(milli.error());
  t.num_gpu = static_cast<int>(*num_gpu);
  t.gpu_milli = static_cast<int>(*milli);
  if (t.num_gpu == 0 && t.gpu_milli != 0)
    return std::unexpected(row.error(4, "a CPU-only task (num_gpu 0) must have gpu_milli 0"));
  if (t.num_gpu == 1 && t.gpu_milli == 0)
    return std::unexpected(row.error(4, "a one-GPU task must request gpu_milli in [1, 1000]"));
  if (t.num_gpu > 1 && t.gpu_milli != 1000)
    return std::unexpected(row.error(4, "a multi-GPU task must request whole GPUs (1000)"));
  if (!has_times) return t;

  auto creation = row.integer(8, 0, 1LL << 50);
  if (!creation) return std::unexpected(creation.error());
  auto deletion = row.integer(9, 0, 1LL << 50);
  if (!deletion) return std::unexpected(deletion.error());
  t.creation_s = *creation;
  t.deletion_s = *deletion;
  if (t.deletion_s < t.creation_s) return std::unexpected(row.error(9, "deletion before creation_time"));
  if (!fields[10].empty()) {
    auto scheduled = row.integer(10, t.creation_s, t.deletion_s);
    if (!scheduled) return std::unexpected(scheduled.error());
    t.scheduled_s = *scheduled;
  }
  return t;
}

}  // namespace

Result<Trace> parse_trace(std::string_view text, std::string_view path) {
  Trace trace;
  trace.path = std::string(path);
  std::span<const std::string_view> header;
  auto ok = for_each_csv_line(text, path, [&](int line_no, std::string_view line) -> Result<void> {
    auto fields = split_commas(line);
    if (line_no == 1) {
      if (std::ranges::equal(fields, kLongHeader)) {
        header = kLongHeader;
        trace.has_times = true;
      } else if (std::ranges::equal(fields, kShortHeader)) {
        header = kShortHeader;
      } else {
        return fail(ErrorCode::invalid_argument,
                    fmt::format("{}:1: header '{}': expected '{}' or '{}'", path, line, fmt::join(kShortHeader, ","),
                                fmt::join(kLongHeader, ",")));
      }
      return {};
    }
    if (auto cols = check_columns(path, line_no, fields.size(), header.size()); !cols) return cols;
    RowReader row(path, line_no, header, fields);
    auto task = parse_row(row, fields, line_no, trace.has_times);
    if (!task) return std::unexpected(task.error());
    trace.tasks.push_back(std::move(*task));
    return {};
  });
  if (!ok) return std::unexpected(ok.error());
  return trace;
}

Result<Trace> load_trace(const std::string& path) {
  auto text = read_csv_file(path);
  if (!text) return std::unexpected(text.error());
  return parse_trace(*text, path);
}

}  // namespace vgpu::bench
