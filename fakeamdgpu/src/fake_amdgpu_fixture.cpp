#include "fake_amdgpu_fixture.h"

#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "vgpu/contract/strict_json.h"

namespace vgpu::fake {
namespace {

bool is_bdf(const std::string& s) {
  static const std::regex bdf("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]");
  return std::regex_match(s, bdf);
}

bool is_mode(const std::string& s, std::initializer_list<std::string_view> modes) {
  for (auto m : modes)
    if (s == m) return true;
  return false;
}

Result<FakeAmdGpuSpec> parse_gpu(const nlohmann::json& g, const std::string& where) {
  if (auto ok = contract::require_keys(
          g, where,
          {"bdf", "product_name", "device_id", "vram_bytes", "xcds", "cus_per_xcd", "compute_partition",
           "memory_partition", "memory_partitions", "unique_id", "render_minor_base"});
      !ok)
    return std::unexpected(ok.error());
  auto bad = [&](std::string_view field, std::string_view why) {
    return fail(ErrorCode::corrupt, fmt::format("{}.{}: {}", where, field, why));
  };
  FakeAmdGpuSpec spec;
  auto str = [&](const char* key, std::string& out) -> Result<void> {
    auto v = contract::require_string(g, key);
    if (!v) return std::unexpected(v.error().within(where));
    out = *v;
    return {};
  };
  auto num = [&](const char* key, std::uint64_t& out) -> Result<void> {
    auto v = contract::require_unsigned(g, key);
    if (!v) return std::unexpected(v.error().within(where));
    out = *v;
    return {};
  };
  std::uint64_t xcds = 0, cus = 0, render = 0;
  for (auto r : {str("bdf", spec.bdf), str("product_name", spec.product_name), str("device_id", spec.device_id),
                 str("compute_partition", spec.compute_partition), str("memory_partition", spec.memory_partition),
                 num("vram_bytes", spec.vram_bytes), num("xcds", xcds), num("cus_per_xcd", cus),
                 num("unique_id", spec.unique_id), num("render_minor_base", render)})
    if (!r) return std::unexpected(r.error());
  if (!is_bdf(spec.bdf)) return bad("bdf", fmt::format("'{}' is not a PCI address like 0000:0c:00.0", spec.bdf));
  if (xcds != 8 && xcds != 6) return bad("xcds", "must be 8 (MI300X, MI325X) or 6 (MI300A)");
  if (cus == 0 || cus > 64) return bad("cus_per_xcd", "must be 1 to 64");
  if (render < 128 || render > 255 - 8) return bad("render_minor_base", "must leave 8 render minors in 128-255");
  if (!is_mode(spec.compute_partition, {"SPX", "DPX", "QPX", "CPX"}))
    return bad("compute_partition", fmt::format("'{}': expected SPX, DPX, QPX or CPX", spec.compute_partition));
  spec.xcds = static_cast<int>(xcds);
  spec.cus_per_xcd = static_cast<int>(cus);
  spec.render_minor_base = static_cast<int>(render);
  const auto& mems = g.at("memory_partitions");
  if (!mems.is_array() || mems.empty()) return bad("memory_partitions", "must be a non-empty array");
  for (const auto& m : mems) {
    if (!m.is_string() || !is_mode(m.get<std::string>(), {"NPS1", "NPS2", "NPS4", "NPS8"}))
      return bad("memory_partitions", "entries are NPS1, NPS2, NPS4 or NPS8");
    spec.memory_partitions.push_back(m.get<std::string>());
  }
  if (std::ranges::find(spec.memory_partitions, spec.memory_partition) == spec.memory_partitions.end())
    return bad("memory_partition", fmt::format("'{}' is not in memory_partitions", spec.memory_partition));
  return spec;
}

}  // namespace

Result<FakeAmdgpuFixture> parse_fake_amdgpu_fixture(std::string_view text, std::string_view source) {
  auto in = [&](Error e) { return std::unexpected(e.within(std::string(source))); };
  auto doc = contract::parse_strict_json(text);
  if (!doc) return in(doc.error());
  if (auto ok = contract::require_exact_keys(*doc, {"format", "version", "compute_switch_ms", "gpus"}); !ok)
    return in(ok.error());
  if (auto ok = contract::require_header(*doc, kFakeAmdgpuFixtureFormat, 1); !ok) return in(ok.error());
  FakeAmdgpuFixture fixture;
  auto ms = contract::require_unsigned(*doc, "compute_switch_ms");
  if (!ms) return in(ms.error());
  if (*ms > 600000) return in(Error{ErrorCode::corrupt, "compute_switch_ms: at most 600000"});
  fixture.compute_switch_ms = static_cast<int>(*ms);
  const auto& gpus = doc->at("gpus");
  if (!gpus.is_array()) return in(Error{ErrorCode::corrupt, "gpus: must be an array"});
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    auto gpu = parse_gpu(gpus[i], fmt::format("gpus[{}]", i));
    if (!gpu) return in(gpu.error());
    for (const auto& seen : fixture.gpus)
      if (seen.bdf == gpu->bdf)
        return in(Error{ErrorCode::corrupt, fmt::format("gpus[{}].bdf: {} listed twice", i, gpu->bdf)});
    fixture.gpus.push_back(std::move(*gpu));
  }
  return fixture;
}

Result<FakeAmdgpuFixture> load_fake_amdgpu_fixture(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::not_found, fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_fake_amdgpu_fixture(ss.str(), path);
}

}  // namespace vgpu::fake
