// Loads the built gres_vgpu.so the way Slurm's plugin loader does and checks what the loader checks:
// the exact plugin_version of the installed slurmd (a mismatch is silently ignored by Slurm), the
// plugin_type, and every gres_p_* symbol (a missing one is fatal to slurmd).
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace {

std::string installed_slurmd_version() {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen("slurmd -V 2>/dev/null", "r"), ::pclose);
  if (!pipe) return {};
  std::array<char, 128> line{};
  if (std::fgets(line.data(), line.size(), pipe.get()) == nullptr) return {};
  std::string text(line.data());  // "slurm-wlm 22.05.8\n"
  auto space = text.find(' ');
  if (space == std::string::npos) return {};
  text = text.substr(space + 1);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::uint32_t version_number(const std::string& dotted) {
  unsigned major = 0, minor = 0, micro = 0;
  if (std::sscanf(dotted.c_str(), "%u.%u.%u", &major, &minor, &micro) != 3) return 0;
  return (major << 16) | (minor << 8) | micro;
}

struct Plugin {
  void* handle = ::dlopen(VGPU_GRES_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ~Plugin() {
    if (handle) ::dlclose(handle);
  }
};

}  // namespace

TEST(GresVgpuPlugin, VersionEqualsTheInstalledSlurmd) {
  Plugin plugin;
  ASSERT_NE(plugin.handle, nullptr) << ::dlerror();
  const auto* version = static_cast<const std::uint32_t*>(::dlsym(plugin.handle, "plugin_version"));
  ASSERT_NE(version, nullptr);
  const std::string installed = installed_slurmd_version();
  ASSERT_FALSE(installed.empty()) << "slurmd -V gave nothing";
  EXPECT_EQ(*version, version_number(installed))
      << "gres_vgpu.so was built for 0x" << std::hex << *version << " but slurmd is " << installed
      << ": rebuild against the matching source (scripts/fetch-slurm-source.sh)";
}

TEST(GresVgpuPlugin, DeclaresItselfAsGresVgpu) {
  Plugin plugin;
  ASSERT_NE(plugin.handle, nullptr) << ::dlerror();
  const auto* type = static_cast<const char*>(::dlsym(plugin.handle, "plugin_type"));
  ASSERT_NE(type, nullptr);
  EXPECT_STREQ(type, "gres/vgpu");
}

TEST(GresVgpuPlugin, ExportsEverySymbolSlurmRequires) {
  Plugin plugin;
  ASSERT_NE(plugin.handle, nullptr) << ::dlerror();
  for (const char* sym : {"init", "fini", "gres_p_node_config_load", "gres_p_job_set_env", "gres_p_step_set_env",
                          "gres_p_task_set_env", "gres_p_send_stepd", "gres_p_recv_stepd", "gres_p_get_job_info",
                          "gres_p_get_step_info", "gres_p_get_devices", "gres_p_step_hardware_init",
                          "gres_p_step_hardware_fini", "gres_p_epilog_build_env", "gres_p_epilog_set_env"}) {
    EXPECT_NE(::dlsym(plugin.handle, sym), nullptr) << sym;
  }
}

TEST(GresVgpuPlugin, HidesItsCxxInternals) {
  Plugin plugin;
  ASSERT_NE(plugin.handle, nullptr) << ::dlerror();
  EXPECT_EQ(::dlsym(plugin.handle, "_ZN4vgpu4gres19parse_advertisementESt17basic_string_viewIcSt11char_traitsIcEES4_"),
            nullptr);
}
