#include "vgpu/contract/hook_tally.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "vgpu/contract/strict_json.h"

namespace vgpu::contract {

bool is_cancel_class(std::string_view c) { return std::ranges::find(kCancelClasses, c) != kCancelClasses.end(); }
bool is_scrub_outcome(std::string_view o) { return std::ranges::find(kScrubOutcomes, o) != kScrubOutcomes.end(); }

void HookDurations::observe(double seconds) {
  if (!(seconds >= 0)) seconds = 0;  // a clock step back, or NaN
  const auto at = std::ranges::lower_bound(kHookSecondsBounds, seconds) - kHookSecondsBounds.begin();
  ++buckets[static_cast<std::size_t>(at)];
  ++count;
  sum_seconds += seconds;
}

std::string render_hook_tally(const HookTally& tally) {
  nlohmann::json hooks = nlohmann::json::object();
  for (const auto& [name, d] : tally.hooks)
    hooks[name] = {{"count", d.count}, {"sum_seconds", d.sum_seconds}, {"buckets", d.buckets}};
  nlohmann::json cancelled = nlohmann::json::object();
  for (const auto& [c, n] : tally.cancelled) cancelled[c] = n;
  nlohmann::json scrubs = nlohmann::json::object();
  for (const auto& [o, n] : tally.scrubs) scrubs[o] = n;
  nlohmann::json doc = {
      {"format", kHookTallyFormat}, {"version", kHookTallyVersion}, {"node", tally.node}, {"hooks", hooks},
      {"cancelled", cancelled},     {"requeued", tally.requeued},   {"scrubs", scrubs}};
  return doc.dump() + "\n";
}

Result<HookTally> parse_hook_tally(std::string_view text, std::string_view expected_node) {
  auto doc = parse_strict_json(text);
  if (!doc) return std::unexpected(doc.error());
  // Version 1 (before scrubs were counted) is read as it is: written by hooks of the release before.
  const bool v1 = doc->is_object() && doc->contains("version") && doc->at("version") == 1;
  const std::uint64_t version = v1 ? 1 : kHookTallyVersion;
  if (auto ok =
          v1 ? require_exact_keys(*doc, {"format", "version", "node", "hooks", "cancelled", "requeued"})
             : require_exact_keys(*doc, {"format", "version", "node", "hooks", "cancelled", "requeued", "scrubs"});
      !ok)
    return std::unexpected(ok.error());
  if (auto ok = require_header(*doc, kHookTallyFormat, version); !ok) return std::unexpected(ok.error());
  HookTally t;
  auto node = require_string(*doc, "node");
  if (!node) return std::unexpected(node.error());
  if (*node != expected_node)
    return fail(ErrorCode::corrupt,
                "field 'node' is '" + *node + "' but this is node '" + std::string(expected_node) + "'");
  t.node = *node;
  auto requeued = require_unsigned(*doc, "requeued");
  if (!requeued) return std::unexpected(requeued.error());
  t.requeued = *requeued;
  const auto& hooks = doc->at("hooks");
  if (!hooks.is_object()) return fail(ErrorCode::corrupt, "field 'hooks' must be an object");
  for (const auto& [name, h] : hooks.items()) {
    const bool known = name == "prolog" || name == "epilog" || (!v1 && name == "scrub");
    if (!known)
      return fail(ErrorCode::corrupt, "hooks." + printable(name) + ": not a timed step (prolog, epilog, scrub)");
    const std::string where = "hooks." + name;
    if (auto ok = require_keys(h, where, {"count", "sum_seconds", "buckets"}); !ok) return std::unexpected(ok.error());
    HookDurations d;
    auto count = require_unsigned(h, "count");
    if (!count) return std::unexpected(count.error().within(where));
    d.count = *count;
    if (!h.at("sum_seconds").is_number() || !(h.at("sum_seconds").get<double>() >= 0))
      return fail(ErrorCode::corrupt, where + ".sum_seconds: must be a number >= 0, got " + h.at("sum_seconds").dump());
    d.sum_seconds = h.at("sum_seconds").get<double>();
    const auto& b = h.at("buckets");
    if (!b.is_array() || b.size() != d.buckets.size())
      return fail(ErrorCode::corrupt, where + ".buckets: must be " + std::to_string(d.buckets.size()) + " counts");
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (!b[i].is_number_unsigned()) return fail(ErrorCode::corrupt, where + ".buckets: counts must be integers >= 0");
      d.buckets[i] = b[i].get<std::uint64_t>();
      total += d.buckets[i];
    }
    if (total != d.count)
      return fail(ErrorCode::corrupt,
                  where + ": buckets add up to " + std::to_string(total) + ", count is " + std::to_string(d.count));
    t.hooks.emplace(name, d);
  }
  const auto& cancelled = doc->at("cancelled");
  if (!cancelled.is_object()) return fail(ErrorCode::corrupt, "field 'cancelled' must be an object");
  for (const auto& [c, n] : cancelled.items()) {
    if (!is_cancel_class(c)) return fail(ErrorCode::corrupt, "cancelled." + printable(c) + ": not a cancel class");
    if (!n.is_number_unsigned()) return fail(ErrorCode::corrupt, "cancelled." + c + ": must be an integer >= 0");
    t.cancelled.emplace(c, n.get<std::uint64_t>());
  }
  if (v1) return t;
  const auto& scrubs = doc->at("scrubs");
  if (!scrubs.is_object()) return fail(ErrorCode::corrupt, "field 'scrubs' must be an object");
  for (const auto& [o, n] : scrubs.items()) {
    if (!is_scrub_outcome(o))
      return fail(ErrorCode::corrupt, "scrubs." + printable(o) + ": not a scrub outcome (clean, failed, unavailable)");
    if (!n.is_number_unsigned()) return fail(ErrorCode::corrupt, "scrubs." + o + ": must be an integer >= 0");
    t.scrubs.emplace(o, n.get<std::uint64_t>());
  }
  return t;
}

std::string hook_tally_path(std::string_view state_dir, std::string_view node) {
  return std::string(state_dir) + "/" + std::string(node) + "/hook-tally.json";
}

}  // namespace vgpu::contract
