#include <gtest/gtest.h>

#include <set>

#include "novnc_url.h"
#include "secrets.h"
#include "session_record.h"
#include "viz_config.h"

namespace vgpu::viz {
namespace {

constexpr const char* kConfig = R"({
  "version": 1,
  "listen_address": "127.0.0.1",
  "proxy_port": 6081,
  "state_dir": "/tmp/viz-state",
  "images": {"debian": {"kernel": "/g/vmlinuz", "initrd": "/g/initrd.gz", "cmdline": "quiet"}},
  "pools": [
    {"name": "viz", "attach": "none", "image": {"kernel": "/g/vmlinuz", "initrd": "/g/initrd.gz"},
     "memory_mib": 256, "vcpus": 1, "display": "vnc", "max_geometry": "1280x1024"},
    {"name": "a100-vgpu", "attach": "mdev", "gpu_type": "nvidia-700",
     "image": {"kernel": "/g/vmlinuz", "initrd": "/g/initrd.gz", "disk": "/srv/viz.qcow2"}, "display": "spice"}
  ]
})";

TEST(VizConfig, ParsesPoolsImagesAndSettings) {
  auto c = parse_viz_config(kConfig, "viz.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->proxy_port, 6081);
  EXPECT_EQ(c->libvirt_uri, "qemu:///system");
  ASSERT_EQ(c->pools.size(), 2U);
  EXPECT_EQ(c->pools.at("viz").max_geometry, (Geometry{1280, 1024}));
  EXPECT_EQ(c->pools.at("a100-vgpu").attach, AttachKind::mdev);
  EXPECT_EQ(c->pools.at("a100-vgpu").display, DisplayKind::spice);
  EXPECT_EQ(c->pools.at("a100-vgpu").image.disk, "/srv/viz.qcow2");
  EXPECT_EQ(c->images.at("debian").cmdline, "quiet");
}

std::string with(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(VizConfig, StrictAboutKeysVersionAndValues) {
  const std::pair<std::string, std::string> cases[] = {
      {"\"listen_address\"", "listen_adress: unknown field (known here: "},
      {"\"version\": 1", "'version' must be 1"},
      {"\"attach\": \"none\"", "attach 'gpu'"},
      {"\"memory_mib\": 256", "memory_mib: expected an integer"},
      {"\"max_geometry\": \"1280x1024\"", "max_geometry"},
      {"{\"debian\": {\"kernel\": \"/g/vmlinuz\"", "not a plain absolute path"},
      {"\"name\": \"viz\"", "pool '../viz'"},
      {"\"127.0.0.1\"", "listen_address"},
  };
  const std::string replacements[] = {"\"listen_adress\"",         "\"version\": 2",
                                      "\"attach\": \"gpu\"",       "\"memory_mib\": -5",
                                      "\"max_geometry\": \"big\"", "{\"debian\": {\"kernel\": \"g/../vmlinuz\"",
                                      "\"name\": \"../viz\"",      "\"127.0.0.1' x='\""};
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    auto c = parse_viz_config(with(kConfig, cases[i].first, replacements[i]), "viz.json");
    ASSERT_FALSE(c) << i;
    EXPECT_NE(c.error().message.find(cases[i].second), std::string::npos) << c.error().message;
    EXPECT_TRUE(c.error().message.starts_with("viz.json")) << c.error().message;
  }
}

TEST(VizConfig, TopologyIsOffLiveOrAnAbsoluteXmlPath) {
  EXPECT_EQ(parse_viz_config(kConfig, "viz.json")->topology, "");
  for (const std::string ok : {"live", "/etc/slurm-vgpu/topology.xml"}) {
    auto c = parse_viz_config(
        with(kConfig, "\"proxy_port\": 6081", "\"proxy_port\": 6081, \"topology\": \"" + ok + "\""), "viz.json");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->topology, ok);
  }
  for (const std::string bad : {"topology.xml", "/etc/../x.xml", "Live"}) {
    auto c = parse_viz_config(
        with(kConfig, "\"proxy_port\": 6081", "\"proxy_port\": 6081, \"topology\": \"" + bad + "\""), "viz.json");
    ASSERT_FALSE(c) << bad;
    EXPECT_NE(c.error().message.find("viz.json.topology: '" + bad + "'"), std::string::npos) << c.error().message;
    EXPECT_NE(c.error().message.find("expected \"\", \"live\" or an lstopo XML file"), std::string::npos);
  }
}

TEST(VizConfig, AcceleratorIsAutoUnlessTheConfigSaysTcg) {
  EXPECT_EQ(parse_viz_config(kConfig, "viz.json")->accelerator, "auto");
  auto tcg = parse_viz_config(with(kConfig, "\"proxy_port\": 6081", "\"proxy_port\": 6081, \"accelerator\": \"tcg\""),
                              "viz.json");
  ASSERT_TRUE(tcg) << tcg.error().message;
  EXPECT_EQ(tcg->accelerator, "tcg");
  auto bad = parse_viz_config(with(kConfig, "\"proxy_port\": 6081", "\"proxy_port\": 6081, \"accelerator\": \"kvm\""),
                              "viz.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "viz.json.accelerator: 'kvm': expected \"auto\" or \"tcg\"");
}

TEST(VizConfig, VgpuPoolsNeedAGpuType) {
  auto c = parse_viz_config(with(kConfig, "\"gpu_type\": \"nvidia-700\",", ""), "viz.json");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("gpu_type: required field missing"), std::string::npos) << c.error().message;
}

TEST(VizConfig, DuplicatePoolNamesAreRefused) {
  auto c = parse_viz_config(with(kConfig, "\"name\": \"a100-vgpu\"", "\"name\": \"viz\""), "viz.json");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("duplicate pool name 'viz'"), std::string::npos);
}

TEST(SessionRecord, RoundTrips) {
  SessionRecord r;
  r.job_id = 42;
  r.domain = "vgpu-viz-42";
  r.pool = "a100-vgpu";
  r.user = "alice";
  r.phase = "running";
  r.attachment = {AttachKind::mdev, MdevHostdev{"76677a00-7669-4a00-8000-00000000002a"}, "0000:3b:00.0", "nvidia-700",
                  ""};
  r.display_port = 5901;
  r.proxy_port = 6080;
  r.created_unix = 1700000000;
  auto back = parse_session_record(to_json(r), "42.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, r);
  r.attachment = {AttachKind::sriov_vf, PciHostdev{"0000:3b:00.4"}, "0000:3b:00.4", "557", ""};
  EXPECT_EQ(parse_session_record(to_json(r), "42.json").value(), r);
}

TEST(SessionRecord, RejectsTamperedOrForeignRecords) {
  SessionRecord r;
  r.job_id = 42;
  r.domain = "vgpu-viz-42";
  const std::string good = to_json(r);
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"\"version\": 1", "\"version\": 2"},
                                                        {"\"domain\": \"vgpu-viz-42\"", "\"domain\": \"other\""},
                                                        {"\"job\": 42", "\"job\": 0"},
                                                        {"\"job\": 42", "\"job\": \"42\""},
                                                        {"\"phase\": \"starting\"", "\"phase\": \"x\""},
                                                        {"\"device\": null", "\"device\": {\"mdev\": \"../../x\"}"},
                                                        {"\"pool\": \"\"", "\"pool\": \"\", \"extra\": 1"},
                                                        {"\"kind\": \"none\"", "\"kind\": \"gpu\""}}) {
    auto text = good;
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from << "\n" << good;
    text.replace(at, from.size(), to);
    auto parsed = parse_session_record(text, "42.json");
    EXPECT_FALSE(parsed) << to;
    if (!parsed) {
      EXPECT_TRUE(parsed.error().message.starts_with("42.json: ")) << parsed.error().message;
    }
  }
  EXPECT_FALSE(parse_session_record("{", "42.json"));
}

TEST(Secrets, TokenIs128BitsOfHex) {
  auto t = make_token(system_random()).value();
  EXPECT_EQ(t.size(), 32U);
  EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(t, make_token(system_random()).value());
}

TEST(Secrets, VncPasswordIsEightAlphanumerics) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    auto p = make_vnc_password(system_random()).value();
    EXPECT_EQ(p.size(), 8U);
    EXPECT_EQ(p.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"), std::string::npos);
    seen.insert(p);
  }
  EXPECT_EQ(seen.size(), 200U);
}

TEST(Secrets, PasswordSamplingRejectsBiasedBytes) {
  // Bytes >= 248 would bias the alphabet; they must be skipped, not folded in.
  RandomSource high = [n = 0](std::span<unsigned char> out) mutable -> Result<void> {
    for (auto& b : out) b = static_cast<unsigned char>((n++ % 2) == 0 ? 250 : 1);
    return {};
  };
  EXPECT_EQ(make_vnc_password(high).value(), "BBBBBBBB");
}

TEST(Secrets, RandomFailureIsReported) {
  RandomSource broken = [](std::span<unsigned char>) -> Result<void> { return fail(ErrorCode::io, "getrandom: EIO"); };
  EXPECT_EQ(make_token(broken).error().message, "websockify token: getrandom: EIO");
  EXPECT_FALSE(make_vnc_password(broken));
}

TEST(Secrets, UuidIsVersion4) {
  auto u = make_uuid(system_random()).value();
  EXPECT_TRUE(check_uuid(u));
  EXPECT_EQ(u[14], '4');
  EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos);
}

TEST(NovncUrl, PasswordIsInTheFragmentTokenInThePath) {
  auto a = make_access_info("localhost", 6080, "node7", "127.0.0.1", "0123abcd", "Pw12Ab34");
  EXPECT_EQ(a.url, "http://localhost:6080/vgpu-viz.html?path=websockify%3Ftoken%3D0123abcd#&password=Pw12Ab34");
  EXPECT_EQ(a.url.find("Pw12Ab34"), a.url.find('#') + 11) << "the password must only be after '#'";
  EXPECT_EQ(a.ssh_line, "ssh -N -L 6080:127.0.0.1:6080 node7");
}

TEST(NovncUrl, EncodesEverythingButUnreserved) {
  EXPECT_EQ(url_encode("a b&c=d#e/f?g~h"), "a%20b%26c%3Dd%23e%2Ff%3Fg~h");
}

}  // namespace
}  // namespace vgpu::viz
