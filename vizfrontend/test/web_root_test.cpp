#include "web_root.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "viz_page.h"

namespace fs = std::filesystem;
using namespace vgpu::viz;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "vgpu-webroot-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

fs::path fake_novnc(const fs::path& root) {
  fs::create_directories(root / "novnc/core");
  fs::create_directories(root / "novnc/vendor");
  std::ofstream(root / "novnc/core/rfb.js") << "export default class RFB {}\n";
  return root / "novnc";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(WebRoot, ServesOurPageNextToNoVncModules) {
  TempDir t;
  const auto novnc = fake_novnc(t.path);
  const auto web = t.path / "state/web";
  ASSERT_TRUE(prepare_web_root(web, novnc.string()).has_value());
  EXPECT_EQ(slurp(web / "vgpu-viz.html"), std::string(kSessionPage));
  EXPECT_EQ(fs::read_symlink(web / "core"), novnc / "core");
  EXPECT_EQ(fs::read_symlink(web / "vendor"), novnc / "vendor");
  EXPECT_EQ(fs::status(web / "vgpu-viz.html").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

TEST(WebRoot, RepreparingReplacesAStaleLinkAndPage) {
  TempDir t;
  const auto novnc = fake_novnc(t.path);
  const auto web = t.path / "web";
  fs::create_directories(web);
  fs::create_directory_symlink("/nonexistent/core", web / "core");
  std::ofstream(web / "vgpu-viz.html") << "an older page";
  ASSERT_TRUE(prepare_web_root(web, novnc.string()).has_value());
  EXPECT_EQ(fs::read_symlink(web / "core"), novnc / "core");
  EXPECT_EQ(slurp(web / "vgpu-viz.html"), std::string(kSessionPage));
  ASSERT_TRUE(prepare_web_root(web, novnc.string()).has_value()) << "preparing twice is harmless";
}

TEST(WebRoot, MissingNoVncIsNamed) {
  TempDir t;
  auto r = prepare_web_root(t.path / "web", (t.path / "no-novnc").string());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, vgpu::ErrorCode::not_found);
  EXPECT_NE(r.error().message.find((t.path / "no-novnc").string()), std::string::npos) << r.error().message;
  EXPECT_FALSE(fs::exists(t.path / "web")) << "nothing is made when noVNC is missing";
}

TEST(SessionPage, SpeaksEveryStateTheTestsRead) {
  const std::string page(kSessionPage);
  EXPECT_NE(page.find("import RFB from './core/rfb.js'"), std::string::npos);
  for (const char* state : {"'connecting'", "'connected'", "'password-needed'", "'bad-password'", "'ended'",
                            "'no-session'", "'disconnected'"}) {
    EXPECT_NE(page.find(state), std::string::npos) << state;
  }
  EXPECT_EQ(page.find("location.hash.slice(1)"), page.rfind("location.hash.slice(1)"))
      << "the fragment (the password) is read in one place";
}
