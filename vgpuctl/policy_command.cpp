// vgpuctl policy check FILE [--json]: what an admin runs before installing a policy file. It lists
// the first kMaxPolicyDiagnostics errors and counts the rest, so a generated file with a million
// mistakes gives a screenful, not a million lines.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "vgpu/policy/policy.h"

namespace vgpuctl {
namespace {

nlohmann::json diagnostics_json(const vgpu::PolicyCheck& check) {
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& d : check.diagnostics)
    errors.push_back({{"file", d.file},
                      {"line", d.line},
                      {"column", d.column},
                      {"path", d.path},
                      {"message", d.message},
                      {"text", d.to_string()}});
  return errors;
}

// 0: the file is good; 1: it has errors; 2: it could not be read (commands.h's convention).
int exit_code_for(const vgpu::PolicyCheck& check) {
  if (check.ok()) return 0;
  return check.io_error ? 2 : 1;
}

}  // namespace

void add_policy_command(CLI::App& app, int& exit_code) {
  auto* policy = app.add_subcommand("policy", "Admin policy files (per-partition rules)");
  policy->require_subcommand(1);
  auto* check = policy->add_subcommand(
      "check", "Check a policy file: print a summary, or its errors with file:line:column (exit 1)");
  auto file = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  check->add_option("FILE", *file, "The policy JSON file")->required();
  check->add_flag("--json", *json,
                  fmt::format("Machine-readable: {{\"ok\": true, \"policy\": {{...}}}} or {{\"ok\": false, "
                              "\"errors\": [...], \"more_errors\": N}}: the first {} errors, and how many more",
                              vgpu::kMaxPolicyDiagnostics));
  check->callback([file, json, &exit_code] {
    auto result = vgpu::check_policy_file(*file);
    exit_code = exit_code_for(result);
    if (*json) {
      nlohmann::json out = {{"ok", result.ok()}};
      if (result.policy) {
        out["policy"] = nlohmann::json::parse(vgpu::summary_json(*result.policy));
      } else {
        out["errors"] = diagnostics_json(result);
        out["more_errors"] = result.unlisted;  // found past the first kMaxPolicyDiagnostics, not listed
      }
      std::cout << out.dump(2) << "\n";
      return;
    }
    if (result.policy) {
      fmt::print("{}", vgpu::summary(*result.policy));
      fmt::print("\n{}: OK\n", *file);
      return;
    }
    for (const auto& d : result.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (result.unlisted > 0) fmt::print(stderr, "{}\n", result.unlisted_line());
    fmt::print(stderr, "{}: {} error(s)\n", *file, result.error_count());
  });
}

}  // namespace vgpuctl
