#include <gtest/gtest.h>

#include "domain_xml.h"
#include "hypervisor.h"
#include "validate.h"
#include "xml_escape.h"

namespace vgpu::viz {
namespace {

TEST(XmlEscape, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(xml_escape(R"(<a href="x" id='y'>&</a>)"), "&lt;a href=&quot;x&quot; id=&apos;y&apos;&gt;&amp;&lt;/a&gt;");
}

TEST(XmlEscape, LeavesPlainTextAndWhitespaceAlone) {
  EXPECT_EQ(xml_escape("plain text 123\tok\n"), "plain text 123\tok\n");
}

TEST(XmlEscape, ReplacesControlCharactersXmlCannotCarry) {
  EXPECT_EQ(xml_escape(std::string("a\x01") + "b\x1b" + "c\x7f"), "a?b?c?");
}

TEST(XmlEscape, AlreadyEscapedTextIsEscapedAgainNotTrusted) { EXPECT_EQ(xml_escape("&lt;"), "&amp;lt;"); }

TEST(JobId, AcceptsSlurmRange) {
  EXPECT_EQ(parse_job_id("1").value(), 1U);
  EXPECT_EQ(parse_job_id("4294967295").value(), 4294967295U);
}

TEST(JobId, RejectsHostileAndMalformedInput) {
  for (const char* bad : {"", "0", "-1", "+5", "007", "4294967296", "12a", "1 ", " 1", "1;rm -rf /", "../1", "1\n2",
                          "0x10", "99999999999999999999999"}) {
    EXPECT_FALSE(parse_job_id(bad).has_value()) << bad;
  }
}

TEST(JobId, ErrorShowsTheValueWithoutItsControlCharacters) {
  auto r = parse_job_id("4\n2");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'4?2'"), std::string::npos) << r.error().message;
}

TEST(Geometry, ParsesWidthByHeight) {
  EXPECT_EQ(parse_geometry("1024x768").value(), (Geometry{1024, 768}));
  EXPECT_EQ(parse_geometry("16384x64").value(), (Geometry{16384, 64}));
}

TEST(Geometry, RejectsMalformedAndOutOfRange) {
  for (const char* bad : {"", "x", "1024", "1024x", "x768", "1024X768", "1024x768x2", "63x768", "16385x768",
                          "01024x768", "1024x768'/><evil/>", "-1x5", "1024 x 768"}) {
    EXPECT_FALSE(parse_geometry(bad).has_value()) << bad;
  }
}

TEST(Names, AcceptPlainNames) {
  EXPECT_TRUE(check_name("pool", "viz-a100_1.0"));
  EXPECT_TRUE(check_name("image", "debian12"));
}

TEST(Names, RejectPathShellAndXmlCharacters) {
  for (const char* bad : {"", ".", "..", "../etc", "a/b", "-rf", ".hidden", "a b", "a;b", "a$(id)", "a'b", "a<b",
                          "a\nb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    EXPECT_FALSE(check_name("image", bad).has_value()) << bad;
  }
}

TEST(Cpuset, AcceptsKernelListSyntax) {
  for (const char* ok : {"0", "0-3", "0-3,8", "0,2,4-7,10-11", "4095"}) EXPECT_TRUE(check_cpuset(ok)) << ok;
}

TEST(Cpuset, RejectsMalformedOrUnordered) {
  for (const char* bad : {"", ",", "0,", ",0", "3-1", "1-1", "0-3,2", "a", "0-", "-3", "0 1", "0-3'", "4096", "01"}) {
    EXPECT_FALSE(check_cpuset(bad).has_value()) << bad;
  }
}

TEST(PciAddress, AcceptsSysfsFormOnly) {
  EXPECT_TRUE(check_pci_address("0000:3b:00.4"));
  for (const char* bad : {"3b:00.0", "0000:3B:00.0", "0000:3b:00.8", "0000:3b:00.0/..", "0000-3b-00.0", ""}) {
    EXPECT_FALSE(check_pci_address(bad).has_value()) << bad;
  }
}

TEST(DomainName, RoundTripsAndRejectsLookalikes) {
  EXPECT_EQ(domain_name(42), "vgpu-viz-42");
  EXPECT_EQ(job_of_domain("vgpu-viz-42").value(), 42U);
  for (const char* bad : {"vgpu-viz-", "vgpu-viz-0", "vgpu-viz-42x", "vgpu-viz-042", "other-42", "vgpu-viz--1"}) {
    EXPECT_FALSE(job_of_domain(bad).has_value()) << bad;
  }
}

class DomainXml : public ::testing::Test {
 protected:
  DomainXml() {
    pool.name = "viz";
    pool.memory_mib = 256;
    pool.vcpus = 2;
    pool.max_geometry = {1920, 1200};
    request.job_id = 42;
    request.pool = &pool;
    request.image = ImageSpec{"/var/cache/slurm-vgpu/guest/vmlinuz", "/var/cache/slurm-vgpu/guest/initrd.gz",
                              "console=ttyS0 vga=0x318", ""};
    request.display_password = "Secr3tPw";
    request.serial_log = "/run/slurm-vgpu/viz/guest/42.serial.log";
  }
  VizPoolSpec pool;
  DomainRequest request;
};

TEST_F(DomainXml, AskedForKvmIsADomainOfTypeKvm) {
  request.accelerator = Accelerator::kvm;
  const std::string xml = render_domain_xml(request).value();
  EXPECT_TRUE(xml.starts_with("<domain type='kvm'>")) << xml.substr(0, 40);
}

TEST_F(DomainXml, IsTcgWithNameMemoryAndVcpusFromThePool) {
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("<domain type='qemu'>"), std::string::npos);
  EXPECT_NE(xml.find("<name>vgpu-viz-42</name>"), std::string::npos);
  EXPECT_NE(xml.find("<memory unit='MiB'>256</memory>"), std::string::npos);
  EXPECT_NE(xml.find(">2</vcpu>"), std::string::npos);
  EXPECT_NE(xml.find("<kernel>/var/cache/slurm-vgpu/guest/vmlinuz</kernel>"), std::string::npos);
}

// No TCP port at all: a VNC server on 127.0.0.1 is one every local user can try passwords on.
TEST_F(DomainXml, VncListensOnlyOnAUnixSocketWithThePassword) {
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("<graphics type='vnc' passwd='Secr3tPw'><listen type='socket'/></graphics>"), std::string::npos)
      << xml;
  const auto graphics = xml.substr(xml.find("<graphics"), xml.find("</graphics>") - xml.find("<graphics"));
  EXPECT_EQ(graphics.find("port="), std::string::npos) << graphics;
  EXPECT_EQ(xml.find("<listen type='address'"), std::string::npos);
  EXPECT_EQ(xml.find("0.0.0.0"), std::string::npos);
}

TEST_F(DomainXml, SpiceIsAnOption) {
  pool.display = DisplayKind::spice;
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("<graphics type='spice'"), std::string::npos);
  EXPECT_EQ(xml.find("type='vnc'"), std::string::npos);
}

TEST_F(DomainXml, PinsEveryVcpuAndTheEmulatorToTheCpuset) {
  request.cpuset = "4-7";
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("<vcpu placement='static' cpuset='4-7'>2</vcpu>"), std::string::npos);
  EXPECT_NE(xml.find("<vcpupin vcpu='0' cpuset='4-7'/>"), std::string::npos);
  EXPECT_NE(xml.find("<vcpupin vcpu='1' cpuset='4-7'/>"), std::string::npos);
  EXPECT_NE(xml.find("<emulatorpin cpuset='4-7'/>"), std::string::npos);
}

TEST_F(DomainXml, NoPinningWithoutCpuset) {
  EXPECT_EQ(render_domain_xml(request).value().find("cputune"), std::string::npos);
}

TEST_F(DomainXml, HostileJobAndUserNamesCannotInjectElements) {
  request.job_name = "x</viz:job_name></viz:session></metadata><devices><hostdev/></devices><!--";
  request.user = "eve' passwd='";
  const std::string xml = render_domain_xml(request).value();
  EXPECT_EQ(xml.find("<hostdev"), std::string::npos);
  EXPECT_EQ(xml.find("<!--"), std::string::npos);
  EXPECT_NE(xml.find("x&lt;/viz:job_name&gt;"), std::string::npos);
  EXPECT_NE(xml.find("<viz:user>eve&apos; passwd=&apos;</viz:user>"), std::string::npos);
  // exactly one real password attribute (the user's text only contains an escaped lookalike)
  EXPECT_NE(xml.find("passwd='"), std::string::npos);
  EXPECT_EQ(xml.find("passwd='"), xml.rfind("passwd='"));
}

TEST_F(DomainXml, NewlinesInNamesDoNotSplitTheDocument) {
  request.job_name = "line1\nline2\x01";
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("<viz:job_name>line1?line2?</viz:job_name>"), std::string::npos);
}

TEST_F(DomainXml, GeometryAboveThePoolMaximumIsRefused) {
  request.geometry = {2560, 1440};
  auto r = render_domain_xml(request);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exceeds pool viz maximum 1920x1200"), std::string::npos) << r.error().message;
}

TEST_F(DomainXml, GeometryReachesTheGuestAndSizesVideoMemory) {
  request.geometry = {1920, 1200};
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("vgpu_viz.geometry=1920x1200</cmdline>"), std::string::npos);
  EXPECT_NE(xml.find("vram='32768'"), std::string::npos);
}

TEST_F(DomainXml, ListenAddressMustBeNumeric) {
  for (const char* bad : {"0.0.0.0' autoport='no", "example.com", "", "127.0.0.1/8"}) {
    request.listen_address = bad;
    EXPECT_FALSE(render_domain_xml(request).has_value()) << bad;
  }
}

TEST_F(DomainXml, MdevHostdevCarriesTheUuid) {
  request.gpu = MdevHostdev{"76677a00-7669-4a00-8000-00000000002a"};
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("<hostdev mode='subsystem' type='mdev' model='vfio-pci'>"), std::string::npos);
  EXPECT_NE(xml.find("<address uuid='76677a00-7669-4a00-8000-00000000002a'/>"), std::string::npos);
}

TEST_F(DomainXml, PciHostdevSplitsTheAddress) {
  request.gpu = PciHostdev{"0000:3b:00.4"};
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("<hostdev mode='subsystem' type='pci' managed='yes'>"), std::string::npos);
  EXPECT_NE(xml.find("<address domain='0x0000' bus='0x3b' slot='0x00' function='0x4'/>"), std::string::npos);
}

TEST_F(DomainXml, NoGpuMeansNoHostdev) {
  EXPECT_EQ(render_domain_xml(request).value().find("hostdev"), std::string::npos);
}

TEST_F(DomainXml, OptionalDiskIsTransient) {
  request.image.disk = "/srv/images/viz.qcow2";
  const std::string xml = render_domain_xml(request).value();
  EXPECT_NE(xml.find("<source file='/srv/images/viz.qcow2'/>"), std::string::npos);
  EXPECT_NE(xml.find("<transient/>"), std::string::npos);
}

TEST(GraphicsXml, LiveUpdateKeepsTheSessionsSocket) {
  EXPECT_EQ(
      render_graphics_xml(DisplayKind::vnc, "127.0.0.1", "n3w&pw", 0, "/var/lib/libvirt/qemu/domain-3-x/vnc.sock"),
      "<graphics type='vnc' passwd='n3w&amp;pw'><listen type='socket' "
      "socket='/var/lib/libvirt/qemu/domain-3-x/vnc.sock'/>"
      "</graphics>");
}

TEST(GraphicsXml, SpiceKeepsItsPortForALiveUpdate) {
  EXPECT_EQ(render_graphics_xml(DisplayKind::spice, "127.0.0.1", "n3w&pw", 5901),
            "<graphics type='spice' port='5901' autoport='yes' listen='127.0.0.1' passwd='n3w&amp;pw'>"
            "<listen type='address' address='127.0.0.1'/></graphics>");
}

TEST(GraphicsXml, SocketIsReadFromTheLiveDomainAndMustBeAPlainAbsolutePath) {
  EXPECT_EQ(graphics_socket_of("<graphics type='vnc' socket='/a/vnc.sock'><listen type='socket' socket='/a/vnc.sock'/>"
                               "</graphics>")
                .value(),
            "/a/vnc.sock");
  EXPECT_EQ(graphics_socket_of("<graphics type=\"vnc\"><listen type=\"socket\" socket=\"/b/s\"/></graphics>").value(),
            "/b/s");
  EXPECT_EQ(graphics_socket_of("<graphics type='vnc'><listen type='socket'/></graphics>").error().code,
            ErrorCode::not_found);
  EXPECT_EQ(graphics_socket_of("<devices/>").error().code, ErrorCode::not_found);
  EXPECT_FALSE(graphics_socket_of("<graphics><listen type='socket' socket='relative/s'/></graphics>"));
  EXPECT_FALSE(graphics_socket_of("<graphics><listen type='socket' socket='/a&amp;b'/></graphics>"));
  EXPECT_FALSE(
      graphics_socket_of("<graphics><listen type='socket' socket='/" + std::string(200, 'x') + "'/></graphics>"));
}

}  // namespace
}  // namespace vgpu::viz
