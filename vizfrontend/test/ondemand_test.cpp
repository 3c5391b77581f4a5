// Open OnDemand: the node's settings, the connection file it reads, and the access text the
// step turns into that file.
#include <gtest/gtest.h>

#include <string>

#include "access_text.h"
#include "ood_connection.h"
#include "viz_config.h"

namespace vgpu::viz {
namespace {

constexpr const char* kMinimal = R"({"version": 1, "pools": [])";

TEST(OnDemandConfig, OffByDefaultAndParsedStrictly) {
  auto off = parse_viz_config(std::string(kMinimal) + "}", "viz.json");
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_TRUE(off->ood_listen_address.empty());
  auto on = parse_viz_config(std::string(kMinimal) + R"(, "ood_listen_address": "10.0.0.7", "ood_host": "gpu-node-07",
      "ood_port_min": 21000, "ood_port_max": 21009})",
                             "viz.json");
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_EQ(on->ood_listen_address, "10.0.0.7");
  EXPECT_EQ(on->ood_host, "gpu-node-07");
  EXPECT_EQ(on->ood_port_min, 21000);
  EXPECT_EQ(on->ood_port_max, 21009);
  auto reversed =
      parse_viz_config(std::string(kMinimal) + R"(, "ood_port_min": 21009, "ood_port_max": 21000})", "viz.json");
  ASSERT_FALSE(reversed);
  EXPECT_EQ(reversed.error().message, "viz.json: ood_port_min 21009 is above ood_port_max 21000");
  auto low = parse_viz_config(std::string(kMinimal) + R"(, "ood_port_min": 80})", "viz.json");
  ASSERT_FALSE(low);
  EXPECT_NE(low.error().message.find("viz.json.ood_port_min: expected an integer in 1024..65535"), std::string::npos)
      << low.error().message;
  auto hostile = parse_viz_config(std::string(kMinimal) + R"(, "ood_host": "a' b"})", "viz.json");
  ASSERT_FALSE(hostile);
  EXPECT_NE(hostile.error().message.find("viz.json.ood_host"), std::string::npos) << hostile.error().message;
}

TEST(OnDemandConnection, TheKeysAndLineFormatOfOodCoresVncTemplate) {
  auto yaml = ood_connection_yaml({"gpu-node-07", 20042, "Ab12Cd34"});
  ASSERT_TRUE(yaml) << yaml.error().message;
  EXPECT_EQ(*yaml,
            "host: gpu-node-07\n"
            "port: 20042\n"
            "password: Ab12Cd34\n"
            "display: 0\n"
            "websocket: 20042\n"
            "spassword: \n");
}

TEST(OnDemandConnection, RefusesValuesThatWouldBreakTheFile) {
  const auto host = ood_connection_yaml({"node\npassword: x", 20042, "Ab12Cd34"});
  ASSERT_FALSE(host);
  EXPECT_NE(host.error().message.find("host"), std::string::npos) << host.error().message;
  EXPECT_FALSE(ood_connection_yaml({"gpu-node-07", 20042, "a b"}));
  EXPECT_FALSE(ood_connection_yaml({"gpu-node-07", 20042, ""}));
  EXPECT_FALSE(ood_connection_yaml({"gpu-node-07", 0, "Ab12Cd34"}));
}

StartedSession session(std::uint16_t ood_port) {
  StartedSession s;
  s.record.job_id = 42;
  s.record.domain = "vgpu-viz-42";
  s.record.pool = "viz";
  s.access.url = "http://localhost:6080/vgpu-viz.html?path=websockify%3Ftoken%3Dab#&password=Ab12Cd34";
  s.access.ssh_line = "ssh -N -L 6080:127.0.0.1:6080 node1";
  s.access.ood_host = "gpu-node-07";
  s.access.ood_port = ood_port;
  s.password = "Ab12Cd34";
  return s;
}

TEST(AccessText, CarriesTheOnDemandWebsocketAndReadsBack) {
  const std::string text = access_text(session(20042), true);
  EXPECT_NE(text.find("display password changed"), std::string::npos);
  EXPECT_NE(text.find("  OnDemand websocket:  gpu-node-07:20042\n"), std::string::npos) << text;
  auto c = ood_connection_of(text);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->host, "gpu-node-07");
  EXPECT_EQ(c->websocket, 20042);
  EXPECT_EQ(c->password, "Ab12Cd34");
}

TEST(AccessText, NoOnDemandWebsocketNoConnection) {
  const std::string text = access_text(session(0), false);
  EXPECT_EQ(text.find("OnDemand"), std::string::npos);
  EXPECT_FALSE(ood_connection_of(text));
  EXPECT_FALSE(ood_connection_of("  password: x\n  OnDemand websocket:  host:notaport\n"));
}

}  // namespace
}  // namespace vgpu::viz
