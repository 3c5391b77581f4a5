// Admin policy files (vgpu::check_policy): the strict JSON scanner with source positions, the
// schema checks, hostlists, viz pools and idle layouts, then every query the prolog and the
// planner make of an accepted policy.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "vgpu/core/catalog.h"
#include "vgpu/core/shared_instance.h"
#include "vgpu/policy/json_source_map.h"
#include "vgpu/policy/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // The position scanner checks the grammar (RFC 8259) and nlohmann then does the real parse;
  // they may disagree (the scanner refuses nesting deeper than JsonSourceMap::kMaxDepth,
  // nlohmann refuses numbers out of double range such as 1e400), but whatever either one
  // refuses must come out as a diagnostic, never as an exception.
  const bool scanned = vgpu::JsonSourceMap::scan(text).has_value();
  const bool accepted = nlohmann::json::accept(text);

  const vgpu::PolicyCheck check = vgpu::check_policy(text, "fuzz.json");
  FUZZ_CHECK(check.ok() == check.policy.has_value());
  FUZZ_CHECK(!check.io_error);
  if (!scanned || !accepted) FUZZ_CHECK(!check.ok());
  const std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (std::size_t i = 0; i < check.diagnostics.size(); ++i) {
    const auto& d = check.diagnostics[i];
    FUZZ_CHECK(d.file == "fuzz.json");
    FUZZ_CHECK(!d.message.empty());
    FUZZ_CHECK(d.line >= 0 && d.column >= 0);
    FUZZ_CHECK(static_cast<std::size_t>(d.line) <= lines);
    FUZZ_CHECK(!d.to_string().empty());
    if (i > 0) {  // "in file order"
      const auto& p = check.diagnostics[i - 1];
      FUZZ_CHECK(p.line < d.line || (p.line == d.line && p.column <= d.column));
    }
  }
  // The Result form agrees with the checker.
  auto parsed = vgpu::parse_policy(text, "fuzz.json");
  FUZZ_CHECK(parsed.has_value() == check.ok());
  if (!check.ok()) return 0;

  const vgpu::PolicyFile& policy = *check.policy;
  FUZZ_CHECK(policy.version == vgpu::kPolicyVersion);
  for (std::size_t i = 1; i < policy.partitions.size(); ++i)  // "sorted by name"
    FUZZ_CHECK(policy.partitions[i - 1].name < policy.partitions[i].name);
  for (const auto& partition : policy.partitions) {
    FUZZ_CHECK(policy.partition(partition.name) == &partition);
    for (const auto& pool : partition.viz_pools) {
      FUZZ_CHECK(policy.find_viz_pool(pool.name) != nullptr);
      FUZZ_CHECK(policy.image(pool.image) != nullptr);
    }
    (void)partition.allows_node("gpu01");
    (void)partition.allows_gpu(0);
    for (const auto& model : vgpu::Catalog::builtin().models()) {
      const auto allowed = partition.allowed_profiles_for(model);
      auto config = partition.planner_config_for(model);
      FUZZ_CHECK(config.has_value() == !allowed.empty());
      (void)vgpu::place_idle_layout(partition, model);
      for (const auto& profile : allowed) {
        // One instance of an allowed profile is always a valid request (limits are >= 1).
        FUZZ_CHECK(vgpu::validate_request(partition, model, profile, 1).has_value());
      }
    }
  }
  // An accepted share type splits into its shares on every model that has its instance.
  for (const auto& type : policy.share_types) {
    FUZZ_CHECK(type.shares >= 2 && type.shares <= vgpu::kMaxSharesPerInstance);
    vgpu::GpuClass whole = type;
    whole.shares = 0;
    for (const auto& model : vgpu::Catalog::builtin().models())
      if (const vgpu::Profile* instance = vgpu::realize(model, whole))
        FUZZ_CHECK(vgpu::share_limits(*instance, type.shares).has_value());
  }
  FUZZ_CHECK(!vgpu::summary(policy).empty());
  FUZZ_CHECK(nlohmann::json::accept(vgpu::summary_json(policy)));
  return 0;
}
