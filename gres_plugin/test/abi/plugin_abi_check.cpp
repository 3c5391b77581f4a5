// Loads a built gres_vgpu.so the way Slurm's plugin loader does and checks what the loader checks:
// plugin_version equal to the release's slurmd (a mismatch is silently ignored by Slurm), the
// plugin_type, and every gres_p_* symbol that release requires (a missing one is fatal to slurmd).
// One binary serves every release built in the tree: the environment names the plugin
// (VGPU_GRES_PLUGIN), the release it was built for (VGPU_SLURM_VERSION) and that release's slurmd
// (VGPU_SLURMD), see gres_plugin/CMakeLists.txt.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string slurmd_version(const std::string& slurmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen((slurmd + " -V 2>/dev/null").c_str(), "r"), ::pclose);
  if (!pipe) return {};
  std::array<char, 128> line{};
  if (std::fgets(line.data(), line.size(), pipe.get()) == nullptr) return {};
  std::string text(line.data());  // "slurm-wlm 22.05.8\n" or "slurm 26.05.3\n"
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

// The symbols _load_plugin() in that release's gres.c looks up (read from 22.05.8, 23.11.4,
// 24.11.5, 25.11.7 and 26.05.3).
std::vector<std::string> required_symbols(std::uint32_t version) {
  std::vector<std::string> syms = {"init",
                                   "fini",
                                   "gres_p_node_config_load",
                                   "gres_p_job_set_env",
                                   "gres_p_step_set_env",
                                   "gres_p_task_set_env",
                                   "gres_p_send_stepd",
                                   "gres_p_recv_stepd",
                                   "gres_p_get_devices",
                                   "gres_p_step_hardware_init",
                                   "gres_p_step_hardware_fini"};
  if (version < version_number("24.11.0")) {
    syms.emplace_back("gres_p_get_job_info");
    syms.emplace_back("gres_p_get_step_info");
  }
  if (version < version_number("23.2.0")) {
    syms.emplace_back("gres_p_epilog_build_env");
    syms.emplace_back("gres_p_epilog_set_env");
  } else {
    syms.emplace_back("gres_p_prep_build_env");
    syms.emplace_back("gres_p_prep_set_env");
  }
  return syms;
}

// Loaded once and never closed, as a Slurm daemon keeps its plugins for its whole life (gres
// plugins survive reconfigure). The plugin carries its own C++ runtime, which sets aside its
// exception emergency pool when loaded; a dlclose would orphan that pool each time.
struct Plugin {
  void* handle = load();
  static void* load() {
    static void* const once = ::dlopen(env("VGPU_GRES_PLUGIN").c_str(), RTLD_NOW | RTLD_LOCAL);
    return once;
  }
};

}  // namespace

TEST(GresVgpuPlugin, VersionEqualsTheReleasesSlurmd) {
  Plugin plugin;
  ASSERT_NE(plugin.handle, nullptr) << ::dlerror();
  const auto* version = static_cast<const std::uint32_t*>(::dlsym(plugin.handle, "plugin_version"));
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(*version, version_number(env("VGPU_SLURM_VERSION")))
      << "gres_vgpu.so was built for 0x" << std::hex << *version << " but the tree says " << env("VGPU_SLURM_VERSION");
  const std::string running = slurmd_version(env("VGPU_SLURMD"));
  ASSERT_FALSE(running.empty()) << env("VGPU_SLURMD") << " -V gave nothing";
  EXPECT_EQ(*version, version_number(running))
      << "gres_vgpu.so was built for 0x" << std::hex << *version << " but " << env("VGPU_SLURMD") << " is " << running
      << ": rebuild against the matching source";
}

TEST(GresVgpuPlugin, DeclaresItselfAsGresVgpu) {
  Plugin plugin;
  ASSERT_NE(plugin.handle, nullptr) << ::dlerror();
  const auto* type = static_cast<const char*>(::dlsym(plugin.handle, "plugin_type"));
  ASSERT_NE(type, nullptr);
  EXPECT_STREQ(type, "gres/vgpu");
}

TEST(GresVgpuPlugin, ExportsEverySymbolItsReleaseRequires) {
  Plugin plugin;
  ASSERT_NE(plugin.handle, nullptr) << ::dlerror();
  const auto* version = static_cast<const std::uint32_t*>(::dlsym(plugin.handle, "plugin_version"));
  ASSERT_NE(version, nullptr);
  for (const auto& sym : required_symbols(*version)) EXPECT_NE(::dlsym(plugin.handle, sym.c_str()), nullptr) << sym;
}

TEST(GresVgpuPlugin, HidesItsCxxInternals) {
  Plugin plugin;
  ASSERT_NE(plugin.handle, nullptr) << ::dlerror();
  EXPECT_EQ(::dlsym(plugin.handle, "_ZN4vgpu4gres19parse_advertisementESt17basic_string_viewIcSt11char_traitsIcEES4_"),
            nullptr);
}

// slurmstepd loads the plugin for every job step, and no Slurm daemon loads the shared C++ runtime
// otherwise: the plugin carries its own (cmake/SlurmRelease.cmake; benchmarks/plugin_load.sh).
TEST(GresVgpuPlugin, NeedsNoSharedCxxRuntime) {
  const std::string plugin = env("VGPU_GRES_PLUGIN");
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(("readelf -d '" + plugin + "' 2>&1").c_str(), "r"), ::pclose);
  ASSERT_NE(pipe, nullptr);
  std::string needed;
  std::array<char, 512> line{};
  while (std::fgets(line.data(), line.size(), pipe.get()) != nullptr) {
    const std::string text(line.data());
    if (text.find("(NEEDED)") != std::string::npos) needed += text;
  }
  ASSERT_NE(needed.find("libc.so"), std::string::npos) << "readelf -d " << plugin << " listed no libc:\n" << needed;
  EXPECT_EQ(needed.find("libstdc++"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("libgcc_s"), std::string::npos) << needed;
}
