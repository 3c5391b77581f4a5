#include "session_record.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "vgpu/contract/strict_json.h"

namespace vgpu::viz {
namespace {
using json = nlohmann::json;

json device_json(const GpuDevice& d) {
  if (const auto* m = std::get_if<MdevHostdev>(&d)) return json{{"mdev", m->uuid}};
  if (const auto* p = std::get_if<PciHostdev>(&d)) return json{{"pci", p->address}};
  return json(nullptr);
}
}  // namespace

std::string to_json(const SessionRecord& r) {
  json j{{"version", 1},
         {"job", r.job_id},
         {"domain", r.domain},
         {"pool", r.pool},
         {"user", r.user},
         {"phase", r.phase},
         {"attach",
          {{"kind", std::string(to_string(r.attachment.kind))},
           {"device", device_json(r.attachment.device)},
           {"parent", r.attachment.parent},
           {"type", r.attachment.type},
           {"gpu_instance", r.attachment.gpu_instance}}},
         {"display_port", r.display_port},
         {"proxy_port", r.proxy_port},
         {"created_unix", r.created_unix}};
  return j.dump(2) + "\n";
}

Result<SessionRecord> parse_session_record(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  auto bad = [&](std::string_view what) { return fail(ErrorCode::corrupt, fmt::format("{}: {}", where, what)); };
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for "1e400"
    return bad(e.what());
  }
  if (!j.is_object()) return bad("expected an object");
  if (auto ok = contract::require_keys(j, "",
                                       {"version", "job", "domain", "pool", "user", "phase", "attach", "display_port",
                                        "proxy_port", "created_unix"});
      !ok)
    return std::unexpected(ok.error().within(where));
  if (!j["version"].is_number_unsigned() || j["version"].get<std::uint64_t>() != 1) return bad("'version' must be 1");
  SessionRecord r;
  try {
    if (!j["job"].is_number_unsigned()) return bad("'job' is not a job id");
    auto job = parse_job_id(std::to_string(j["job"].get<std::uint64_t>()));
    if (!job) return bad("'job' is not a job id");
    r.job_id = *job;
    r.domain = j["domain"].get<std::string>();
    if (r.domain != domain_name(r.job_id)) return bad(fmt::format("'domain' does not match job {}", r.job_id));
    r.pool = j["pool"].get<std::string>();
    r.user = j["user"].get<std::string>();
    r.phase = j["phase"].get<std::string>();
    if (r.phase != "starting" && r.phase != "running") return bad("'phase' must be starting or running");
    const json& a = j["attach"];
    if (!a.is_object() || a.size() != 5) return bad("'attach' must have kind, device, parent, type, gpu_instance");
    auto kind = parse_attach_kind(a.at("kind").get<std::string>());
    if (!kind) return bad(kind.error().message);
    r.attachment.kind = *kind;
    r.attachment.parent = a.at("parent").get<std::string>();
    r.attachment.type = a.at("type").get<std::string>();
    r.attachment.gpu_instance = a.at("gpu_instance").get<std::string>();
    const json& d = a.at("device");
    if (d.is_null()) {
      r.attachment.device = NoGpu{};
    } else if (d.is_object() && d.size() == 1 && d.contains("mdev")) {
      auto u = check_uuid(d["mdev"].get<std::string>());
      if (!u) return bad(u.error().message);
      r.attachment.device = MdevHostdev{*u};
    } else if (d.is_object() && d.size() == 1 && d.contains("pci")) {
      auto p = check_pci_address(d["pci"].get<std::string>());
      if (!p) return bad(p.error().message);
      r.attachment.device = PciHostdev{*p};
    } else {
      return bad("'attach.device' must be null, {\"mdev\": uuid} or {\"pci\": address}");
    }
    if (!j["display_port"].is_number_integer()) return bad("'display_port' must be an integer");
    r.display_port = j["display_port"].get<int>();
    if (!j["proxy_port"].is_number_unsigned() || j["proxy_port"].get<std::uint64_t>() > 65535) {
      return bad("'proxy_port' must be a port");
    }
    r.proxy_port = j["proxy_port"].get<std::uint16_t>();
    if (!j["created_unix"].is_number_integer()) return bad("'created_unix' must be an integer");
    r.created_unix = j["created_unix"].get<std::int64_t>();
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  return r;
}

}  // namespace vgpu::viz
