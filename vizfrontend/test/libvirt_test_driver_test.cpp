// The libvirt adapter against libvirt's built-in test driver (test:///default): a real libvirt
// connection and real XML parsing, no daemon. Each open gets a fresh in-memory node.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "domain_xml.h"
#include "hypervisor.h"

namespace vgpu::viz {
namespace {

class LibvirtTestDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    auto h = open_libvirt("test:///default");
    ASSERT_TRUE(h) << h.error().message;
    hv = std::move(*h);
    pool.name = "viz";
    pool.memory_mib = 128;
    req.job_id = 4242;
    req.pool = &pool;
    req.image = {"/nonexistent/vmlinuz", "/nonexistent/initrd.gz", "console=ttyS0", ""};
    req.display_password = "Pw123456";
    req.serial_log = "/tmp/viz-test-serial.log";
    req.job_name = "hostile'\"<>&name";
    req.cpuset = "0";
  }
  std::unique_ptr<Hypervisor> hv;
  VizPoolSpec pool;
  DomainRequest req;
};

TEST_F(LibvirtTestDriver, LibvirtAcceptsTheGeneratedXmlIncludingHostileNames) {
  ASSERT_TRUE(hv->define(render_domain_xml(req).value()));
  auto listed = hv->list("vgpu-viz-");
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ((*listed)[0].name, "vgpu-viz-4242");
  EXPECT_FALSE((*listed)[0].active);
  auto xml = hv->domain_xml("vgpu-viz-4242", false);
  ASSERT_TRUE(xml);
  // libvirt re-serialises the text (quotes need no escaping in element text); what matters is
  // that the name came back as text, intact, not as markup.
  EXPECT_NE(xml->find("<viz:job_name>hostile'\"&lt;&gt;&amp;name</viz:job_name>"), std::string::npos) << *xml;
  EXPECT_NE(xml->find("<vcpupin vcpu='0' cpuset='0'/>"), std::string::npos);
}

TEST_F(LibvirtTestDriver, PasswordOnlyInSecureXml) {
  ASSERT_TRUE(hv->define(render_domain_xml(req).value()));
  EXPECT_EQ(hv->domain_xml("vgpu-viz-4242", false)->find("Pw123456"), std::string::npos);
  EXPECT_NE(hv->domain_xml("vgpu-viz-4242", true)->find("passwd='Pw123456'"), std::string::npos);
}

TEST_F(LibvirtTestDriver, FullLifecycle) {
  ASSERT_TRUE(hv->define(render_domain_xml(req).value()));
  ASSERT_TRUE(hv->start("vgpu-viz-4242"));
  EXPECT_TRUE(hv->list("vgpu-viz-")->at(0).active);
  // The test driver assigns no VNC socket: the session manager treats that as "no display".
  EXPECT_FALSE(graphics_socket_of(hv->domain_xml("vgpu-viz-4242", false).value()));
  const std::string shot = ::testing::TempDir() + "viz-test-shot.png";
  ASSERT_TRUE(hv->screenshot("vgpu-viz-4242", shot));
  std::ifstream in(shot, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  std::filesystem::remove(shot);
  ASSERT_TRUE(hv->destroy("vgpu-viz-4242"));
  EXPECT_FALSE(hv->list("vgpu-viz-")->at(0).active);
  ASSERT_TRUE(hv->undefine("vgpu-viz-4242"));
  EXPECT_TRUE(hv->list("vgpu-viz-")->empty());
}

TEST_F(LibvirtTestDriver, DestroyAndUndefineOfAMissingDomainSucceed) {
  EXPECT_TRUE(hv->destroy("vgpu-viz-1"));
  EXPECT_TRUE(hv->undefine("vgpu-viz-1"));
}

TEST_F(LibvirtTestDriver, ListFiltersByPrefix) {
  // test:///default ships a domain called "test"
  ASSERT_TRUE(hv->define(render_domain_xml(req).value()));
  const auto ours = hv->list("vgpu-viz-");
  ASSERT_TRUE(ours);
  ASSERT_EQ(ours->size(), 1U);
  EXPECT_EQ(ours->front().name, "vgpu-viz-4242");
  const auto all = hv->list("");
  ASSERT_TRUE(all);
  EXPECT_GE(all->size(), 2U);
}

TEST_F(LibvirtTestDriver, ErrorsCarryLibvirtsReasonAndTheDomain) {
  auto r = hv->start("vgpu-viz-999");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::not_found);
  EXPECT_NE(r.error().message.find("vgpu-viz-999"), std::string::npos);
  auto bad = hv->define("<domain type='qemu'><name>x</name>");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("libvirt test:///default: define:"), std::string::npos);
}

TEST(LibvirtConnect, UnreachableUriIsUnavailable) {
  auto h = open_libvirt("qemu+unix:///system?socket=/nonexistent/libvirt-sock");
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, ErrorCode::unavailable);
}

TEST(GraphicsPort, ReadsLibvirtsLiveXml) {
  EXPECT_EQ(graphics_port_of("<devices><graphics type='vnc' port='5901' autoport='yes' listen='127.0.0.1'>").value(),
            5901);
  EXPECT_EQ(graphics_port_of("<graphics type=\"spice\" port=\"5930\"/>").value(), 5930);
  EXPECT_EQ(graphics_port_of("<graphics type='vnc' port='-1'/>").value(), -1);
  EXPECT_FALSE(graphics_port_of("<devices/>"));
  EXPECT_FALSE(graphics_port_of("<graphics type='vnc' port='59x1'/>"));
  EXPECT_FALSE(graphics_port_of("<graphics type='vnc' port='70000'/>"));
}

}  // namespace
}  // namespace vgpu::viz
