#include "session_manager.h"

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "fake_sysfs.h"
#include "file_util.h"

namespace vgpu::viz {
namespace {

namespace fs = std::filesystem;
using testing::FakeSysfs;

// A scripted hypervisor: keeps domains in memory and fails the step named in `fail_at`.
class ScriptedHypervisor final : public Hypervisor {
 public:
  std::string fail_at;
  std::map<std::string, bool> domains;  // name -> active
  std::string last_xml;
  std::string last_graphics;
  int port = 5907;
  std::string socket = "/var/lib/libvirt/qemu/domain-3-vgpu-viz-42/vnc.sock";

  // KVM: "" not offered (the default answer), "offered", or "offered, no guest" (a /dev/kvm that
  // cannot run one: a domain of type kvm does not start).
  std::string kvm;
  int defines = 0;
  Result<void> offers_kvm(std::string_view emulator) override {
    if (kvm.empty()) return Hypervisor::offers_kvm(emulator);
    return {};
  }
  Result<void> define(std::string_view xml) override {
    ++defines;
    if (fail_at == "define") return fail(ErrorCode::io, "define refused");
    last_xml = xml;
    const auto b = xml.find("<name>") + 6;
    domains[std::string(xml.substr(b, xml.find("</name>") - b))] = false;
    return {};
  }
  Result<void> start(std::string_view name) override {
    if (fail_at == "start") return fail(ErrorCode::io, "start refused");
    if (kvm == "offered, no guest" && last_xml.starts_with("<domain type='kvm'>"))
      return fail(ErrorCode::io, "Could not access KVM kernel module: Permission denied");
    domains.at(std::string(name)) = true;
    return {};
  }
  Result<std::string> domain_xml(std::string_view, bool) override {
    if (fail_at == "xml") return fail(ErrorCode::io, "xml refused");
    // A VNC display has its socket, a SPICE one its port; "port" fails both (not yet assigned).
    if (fail_at == "port")
      return std::string("<domain><devices><graphics type='vnc' port='-1' autoport='yes'/></devices></domain>");
    return fmt::format(
        "<domain><devices><graphics type='vnc' port='{}' autoport='yes'><listen type='socket' socket='{}'/>"
        "</graphics></devices></domain>",
        port, socket);
  }
  Result<void> update_graphics(std::string_view, std::string_view g) override {
    last_graphics = g;
    return {};
  }
  Result<void> screenshot(std::string_view, const std::string&) override { return {}; }
  Result<void> destroy(std::string_view name) override {
    if (auto it = domains.find(std::string(name)); it != domains.end()) it->second = false;
    return {};
  }
  Result<void> undefine(std::string_view name) override {
    domains.erase(std::string(name));
    return {};
  }
  Result<void> watch_logins(std::string_view) override { return {}; }
  Result<int> wait_logins(int) override { return 0; }
  Result<std::vector<DomainSummary>> list(std::string_view prefix) override {
    std::vector<DomainSummary> out;
    for (const auto& [n, a] : domains) {
      if (n.starts_with(prefix)) out.push_back({n, a});
    }
    return out;
  }
};

class FakeProxy final : public Proxy {
 public:
  bool fail = false;
  bool running = false;
  Result<void> ensure_running() override {
    if (fail) return vgpu::fail(ErrorCode::unavailable, "websockify would not start");
    running = true;
    return {};
  }
  Result<void> stop() override {
    running = false;
    return {};
  }
};

// Per-session proxies in memory: job -> port, and what start was given.
class FakeSessionProxy final : public SessionProxy {
 public:
  bool fail = false;
  std::map<std::uint32_t, std::uint16_t> ports;
  std::string last_socket;
  std::vector<std::uint32_t> stopped;
  Result<std::uint16_t> start(std::uint32_t job, const std::string& socket) override {
    if (fail) return vgpu::fail(ErrorCode::unavailable, "no free port in 20000..20999");
    last_socket = socket;
    return ports[job] = static_cast<std::uint16_t>(20000 + job);
  }
  Result<void> stop(std::uint32_t job) override {
    stopped.push_back(job);
    ports.erase(job);
    return {};
  }
  std::optional<std::uint16_t> port(std::uint32_t job) const override {
    if (auto it = ports.find(job); it != ports.end()) return it->second;
    return std::nullopt;
  }
  std::vector<std::uint32_t> jobs() const override {
    std::vector<std::uint32_t> out;
    for (const auto& [job, port] : ports) out.push_back(job);
    return out;
  }
};

// Deterministic randomness so the tests can name the secret they expect.
RandomSource counting_random() {
  return [n = 0U](std::span<unsigned char> out) mutable -> Result<void> {
    for (auto& b : out) b = static_cast<unsigned char>(n++ % 200);
    return {};
  };
}

class Sessions : public ::testing::Test {
 protected:
  Sessions() {
    char tmpl[] = "/tmp/viz-sessions-XXXXXX";
    dir = mkdtemp(tmpl);
    config.state_dir = dir + "/state";
    config.ssh_host = "node1";
    VizPoolSpec pool;
    pool.name = "viz";
    pool.image = {"/img/vmlinuz", "/img/initrd.gz", "console=ttyS0", ""};
    config.pools["viz"] = pool;
    pool.name = "vgpu";
    pool.attach = AttachKind::mdev;
    pool.gpu_type = "nvidia-700";
    config.pools["vgpu"] = pool;
    config.images["other"] = {"/other/vmlinuz", "/other/initrd.gz", "", ""};
    sysfs.add_mdev_parent("0000:3b:00.0", {{"nvidia-700", 2}});
  }
  ~Sessions() override { fs::remove_all(dir); }

  SessionManager manager() { return SessionManager(config, hv, sysfs, proxy, counting_random()); }
  SessionManager manager_with_ondemand() {
    config.ood_listen_address = "10.0.0.7";
    config.ood_host = "gpu-node-07";
    return SessionManager(config, hv, sysfs, proxy, counting_random(), &ood);
  }
  StartRequest request(std::string pool = "viz") {
    StartRequest r;
    r.job_id = 42;
    r.pool = std::move(pool);
    r.user = "alice";
    return r;
  }
  // Everything a session can leave behind.
  bool nothing_left(std::uint32_t job = 42) {
    return hv.domains.empty() && sysfs.mdev_count() == 0 &&
           !fs::exists(config.state_dir + "/tokens/vgpu-viz-" + std::to_string(job)) &&
           !fs::exists(config.state_dir + "/sessions/" + std::to_string(job) + ".json");
  }

  std::string dir;
  VizConfig config;
  ScriptedHypervisor hv;
  FakeSysfs sysfs;
  FakeProxy proxy;
  FakeSessionProxy ood;
};

TEST_F(Sessions, StartDefinesAndStartsTheDomainAndWritesA0600Token) {
  auto m = manager();
  auto s = m.start(request());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(hv.domains.at("vgpu-viz-42"));
  EXPECT_TRUE(proxy.running);
  EXPECT_EQ(s->record.display_port, -1) << "VNC has a socket, no port";
  EXPECT_EQ(s->record.phase, "running");
  EXPECT_NE(hv.last_xml.find("<listen type='socket'/>"), std::string::npos) << hv.last_xml;
  EXPECT_EQ(hv.last_xml.find("<listen type='address'"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(stat(m.token_path(42).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  const std::string token_line = read_file(m.token_path(42)).value();
  EXPECT_TRUE(token_line.ends_with(": unix_socket:" + hv.socket + "\n")) << token_line;
  const std::string token = token_line.substr(0, token_line.find(':'));
  EXPECT_EQ(token.size(), 32U);
  ASSERT_EQ(stat(m.token_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  EXPECT_NE(s->access.url.find("token%3D" + token), std::string::npos);
  EXPECT_NE(s->access.url.find("#&password=" + s->password), std::string::npos);
  EXPECT_EQ(s->access.ssh_line, "ssh -N -L 6080:127.0.0.1:6080 node1");
  EXPECT_NE(hv.last_xml.find("passwd='" + s->password + "'"), std::string::npos);
}

// KVM whenever the guest starts with it; TCG, with the reason, when KVM is not offered or a guest
// will not start under it. Either way one domain is left, and the choice is in the result.
TEST_F(Sessions, AGuestRunsUnderKvmWhenItStartsWithItAndUnderTcgOtherwise) {
  auto mgr = manager();
  auto tcg = mgr.start(request());
  ASSERT_TRUE(tcg) << tcg.error().message;
  ASSERT_TRUE(tcg->accelerator);
  EXPECT_EQ(tcg->accelerator->accelerator, Accelerator::tcg);
  EXPECT_NE(tcg->accelerator->reason.find("KVM is not offered here: no KVM through this hypervisor"), std::string::npos)
      << tcg->accelerator->reason;
  EXPECT_TRUE(hv.last_xml.starts_with("<domain type='qemu'>"));
  ASSERT_TRUE(mgr.stop(42));

  hv.kvm = "offered";
  hv.defines = 0;
  auto kvm = mgr.start(request());
  ASSERT_TRUE(kvm && kvm->accelerator) << (kvm ? "no accelerator" : kvm.error().message);
  EXPECT_EQ(kvm->accelerator->accelerator, Accelerator::kvm);
  EXPECT_EQ(kvm->accelerator->reason, "KVM");
  EXPECT_TRUE(hv.last_xml.starts_with("<domain type='kvm'>"));
  EXPECT_EQ(hv.defines, 1);
  ASSERT_TRUE(mgr.stop(42));

  hv.kvm = "offered, no guest";
  hv.defines = 0;
  auto fallback = mgr.start(request());
  ASSERT_TRUE(fallback && fallback->accelerator) << (fallback ? "no accelerator" : fallback.error().message);
  EXPECT_EQ(fallback->accelerator->accelerator, Accelerator::tcg);
  EXPECT_NE(fallback->accelerator->reason.find("KVM is offered, but the guest did not start with it: Could not access "
                                               "KVM kernel module"),
            std::string::npos)
      << fallback->accelerator->reason;
  EXPECT_TRUE(hv.last_xml.starts_with("<domain type='qemu'>"));
  EXPECT_EQ(hv.defines, 2) << "tried under KVM, then defined again under TCG";
  EXPECT_EQ(hv.domains.size(), 1u);
  ASSERT_TRUE(mgr.stop(42));
  EXPECT_TRUE(nothing_left());

  config.accelerator = "tcg";
  hv.kvm = "offered";
  auto asked = mgr.start(request());
  ASSERT_TRUE(asked && asked->accelerator) << (asked ? "no accelerator" : asked.error().message);
  EXPECT_EQ(asked->accelerator->accelerator, Accelerator::tcg);
  EXPECT_NE(asked->accelerator->reason.find("the node's viz config says \"accelerator\": \"tcg\""), std::string::npos);
  EXPECT_TRUE(hv.last_xml.starts_with("<domain type='qemu'>"));
}

TEST_F(Sessions, SpiceSessionsGetARemoteViewerUriAndNoProxy) {
  config.pools["viz"].display = DisplayKind::spice;
  auto m = manager();
  auto s = m.start(request());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_NE(hv.last_xml.find("<graphics type='spice'"), std::string::npos);
  EXPECT_EQ(s->access.url, "spice://localhost:5907?password=" + s->password);
  EXPECT_EQ(s->access.ssh_line, "ssh -N -L 5907:127.0.0.1:5907 node1");
  EXPECT_FALSE(proxy.running);
  EXPECT_FALSE(fs::exists(m.token_path(42)));
  auto r = m.rotate_password(42);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->access.url.starts_with("spice://localhost:5907?password="));
  ASSERT_TRUE(m.stop(42));
  EXPECT_TRUE(nothing_left());
}

TEST_F(Sessions, TheRecordHoldsNoSecret) {
  auto m = manager();
  auto s = m.start(request());
  ASSERT_TRUE(s);
  const std::string record = read_file(m.record_path(42)).value();
  EXPECT_EQ(record.find(s->password), std::string::npos);
  const std::string token_line = read_file(m.token_path(42)).value();
  EXPECT_EQ(record.find(token_line.substr(0, 32)), std::string::npos);
}

TEST_F(Sessions, NamedImageReplacesThePoolsImage) {
  auto m = manager();
  auto r = request();
  r.image = "other";
  ASSERT_TRUE(m.start(r));
  EXPECT_NE(hv.last_xml.find("<kernel>/other/vmlinuz</kernel>"), std::string::npos);
}

TEST_F(Sessions, HostileInputsAreRefusedBeforeAnythingIsCreated) {
  auto m = manager();
  for (auto mutate : std::vector<std::function<void(StartRequest&)>>{
           [](StartRequest& r) { r.image = "../../etc/passwd"; }, [](StartRequest& r) { r.image = "missing"; },
           [](StartRequest& r) { r.pool = "viz'/><x"; }, [](StartRequest& r) { r.cpuset = "0-3;reboot"; },
           [](StartRequest& r) { r.device = "0000:3b:00.0/../../x"; }, [](StartRequest& r) { r.gpu_instance = "1 2"; },
           [](StartRequest& r) {
             r.geometry = Geometry{4096, 4096};
           },
           [](StartRequest& r) { r.job_id = 0; }}) {
    auto r = request();
    mutate(r);
    EXPECT_FALSE(m.start(r).has_value());
    EXPECT_TRUE(nothing_left());
    EXPECT_FALSE(proxy.running);
  }
}

TEST_F(Sessions, HostileJobNameIsEscapedNotRefused) {
  auto m = manager();
  auto r = request();
  r.job_name = "</viz:job_name><hostdev/>";
  r.user = "$(reboot)\n";
  ASSERT_TRUE(m.start(r));
  EXPECT_EQ(hv.last_xml.find("<hostdev/>"), std::string::npos);
  EXPECT_NE(hv.last_xml.find("<viz:user>$(reboot)?</viz:user>"), std::string::npos);
}

// Failure at every step of start leaves nothing: no domain, mdev, token or record.
TEST_F(Sessions, FailureAtEachStepRollsBackEverything) {
  for (const std::string step : {"define", "start", "xml", "port", "proxy", "mdev"}) {
    hv.fail_at = step;
    proxy.fail = step == "proxy";
    if (step == "mdev") sysfs.fail_next_write("/create", EUSERS);
    auto m = manager();
    auto s = m.start(request("vgpu"));
    EXPECT_FALSE(s.has_value()) << step;
    EXPECT_TRUE(nothing_left()) << "after failing at " << step;
    EXPECT_EQ(sysfs.available("0000:3b:00.0", "nvidia-700"), 2) << step;
  }
}

TEST_F(Sessions, ErrorsNameTheJobAndStep) {
  hv.fail_at = "start";
  auto s = manager().start(request());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "vgpu-viz: job 42: start refused");
}

TEST_F(Sessions, SecondStartOfTheSameJobIsAConflict) {
  auto m = manager();
  ASSERT_TRUE(m.start(request()));
  auto again = m.start(request());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::conflict);
  EXPECT_TRUE(hv.domains.contains("vgpu-viz-42")) << "the running session must survive";
}

TEST_F(Sessions, StopRemovesDomainDeviceTokenAndRecordAndStopsTheIdleProxy) {
  auto m = manager();
  ASSERT_TRUE(m.start(request("vgpu")));
  EXPECT_EQ(sysfs.mdev_count(), 1U);
  ASSERT_TRUE(m.stop(42));
  EXPECT_TRUE(nothing_left());
  EXPECT_FALSE(proxy.running);
  EXPECT_TRUE(m.stop(42)) << "stopping twice is fine";
}

TEST_F(Sessions, ProxyStaysWhileAnotherSessionRuns) {
  auto m = manager();
  ASSERT_TRUE(m.start(request()));
  auto r = request();
  r.job_id = 43;
  ASSERT_TRUE(m.start(r));
  ASSERT_TRUE(m.stop(42));
  EXPECT_TRUE(proxy.running);
  ASSERT_TRUE(m.stop(43));
  EXPECT_FALSE(proxy.running);
}

TEST_F(Sessions, ListShowsRecordedSessions) {
  auto m = manager();
  ASSERT_TRUE(m.start(request("vgpu")));
  auto l = m.list();
  ASSERT_TRUE(l);
  ASSERT_EQ(l->size(), 1U);
  EXPECT_EQ((*l)[0].job_id, 42U);
  EXPECT_EQ((*l)[0].attachment.kind, AttachKind::mdev);
  EXPECT_EQ((*l)[0].user, "alice");
}

TEST_F(Sessions, ReapRemovesSessionsOfEndedJobsOnly) {
  auto m = manager();
  ASSERT_TRUE(m.start(request("vgpu")));
  auto r = request("vgpu");
  r.job_id = 43;
  ASSERT_TRUE(m.start(r));
  auto report = m.reap({43});
  ASSERT_TRUE(report);
  EXPECT_EQ(report->removed, std::vector<std::uint32_t>{42});
  EXPECT_FALSE(hv.domains.contains("vgpu-viz-42"));
  EXPECT_TRUE(hv.domains.contains("vgpu-viz-43"));
  EXPECT_EQ(sysfs.mdev_count(), 1U);
}

TEST_F(Sessions, ReapFindsLeftoversWithoutARecord) {
  // A crash after the mdev and domain were made but the record was lost.
  auto m = manager();
  ASSERT_TRUE(m.start(request("vgpu")));
  fs::remove(m.record_path(42));
  auto report = m.reap({});
  ASSERT_TRUE(report);
  EXPECT_EQ(report->removed, std::vector<std::uint32_t>{42});
  EXPECT_TRUE(nothing_left());
}

TEST_F(Sessions, ReapFindsAnOrphanMdevByItsUuid) {
  ASSERT_TRUE(make_attacher(AttachKind::mdev, sysfs)->acquire({77, "nvidia-700", "", ""}));
  auto report = manager().reap({});
  ASSERT_TRUE(report);
  EXPECT_EQ(report->removed, std::vector<std::uint32_t>{77});
  EXPECT_EQ(sysfs.mdev_count(), 0U);
}

TEST_F(Sessions, OneReapReleasesAnMdevTheRecordDoesNotNameYet) {
  // Killed at viz.after_acquire: the record is written, the job's mdev made, the record does not
  // name it yet. One reap must release the mdev along with the record.
  auto m = manager();
  ASSERT_TRUE(make_attacher(AttachKind::mdev, sysfs)->acquire({42, "nvidia-700", "", ""}));
  SessionRecord rec;
  rec.job_id = 42;
  rec.domain = "vgpu-viz-42";
  rec.pool = "vgpu";
  rec.user = "alice";
  fs::create_directories(fs::path(m.record_path(42)).parent_path());
  std::ofstream(m.record_path(42)) << to_json(rec);
  ASSERT_EQ(sysfs.mdev_count(), 1U);
  auto report = m.reap({});
  ASSERT_TRUE(report);
  EXPECT_EQ(report->removed, std::vector<std::uint32_t>{42});
  EXPECT_EQ(sysfs.mdev_count(), 0U);
  EXPECT_TRUE(nothing_left());
}

TEST_F(Sessions, RotateSetsANewPasswordOnTheSameSocket) {
  auto m = manager();
  auto s = m.start(request());
  ASSERT_TRUE(s);
  auto r = m.rotate_password(42);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(r->password, s->password);
  EXPECT_NE(hv.last_graphics.find("<listen type='socket' socket='" + hv.socket + "'/>"), std::string::npos)
      << hv.last_graphics;
  EXPECT_NE(hv.last_graphics.find("passwd='" + r->password + "'"), std::string::npos);
  EXPECT_EQ(r->access.url.substr(0, r->access.url.find('#')), s->access.url.substr(0, s->access.url.find('#')));
}

// vCPU pinning from the GPU's hwloc locality (two-socket-eight-gpu.xml: GPU 0000:99:00.0 is in
// Group L#2, PUs 8-11,24-27; GPU 0000:17:00.0 in Group L#0, PUs 0-3,16-19).
constexpr const char* kTopology = VGPU_LOCALITY_FIXTURES "/two-socket-eight-gpu.xml";

SessionManager pinned(SessionManager m) {
  m.set_cpu_locator(make_cpu_locator(kTopology));
  return m;
}

TEST_F(Sessions, VcpusArePinnedNearTheMdevsGpu) {
  sysfs.add_mdev_parent("0000:99:00.0", {{"nvidia-700", 1}});
  auto m = pinned(manager());
  auto r = request("vgpu");
  r.device = "0000:99:00.0";
  auto s = m.start(r);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_NE(hv.last_xml.find("<vcpupin vcpu='0' cpuset='8-11,24-27'/>"), std::string::npos) << hv.last_xml;
  EXPECT_NE(hv.last_xml.find("<emulatorpin cpuset='8-11,24-27'/>"), std::string::npos) << hv.last_xml;
}

TEST_F(Sessions, AVfIsPinnedNearItsPhysicalFunction) {
  config.pools["vf"] = config.pools["vgpu"];
  config.pools["vf"].name = "vf";
  config.pools["vf"].attach = AttachKind::sriov_vf;
  config.pools["vf"].gpu_type = "NVIDIA H100-4C";
  sysfs.add_vgpu_vf("0000:17:00.4", "0000:17:00.0", {{"557", "NVIDIA H100-4C"}});
  auto m = pinned(manager());
  auto s = m.start(request("vf"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_NE(hv.last_xml.find("cpuset='0-3,16-19'"), std::string::npos) << hv.last_xml;
}

TEST_F(Sessions, AnExplicitCpusetWinsAndNoGpuMeansNoPinning) {
  sysfs.add_mdev_parent("0000:99:00.0", {{"nvidia-700", 1}});
  auto m = pinned(manager());
  auto r = request("vgpu");
  r.device = "0000:99:00.0";
  r.cpuset = "5";
  ASSERT_TRUE(m.start(r));
  EXPECT_NE(hv.last_xml.find("<vcpupin vcpu='0' cpuset='5'/>"), std::string::npos) << hv.last_xml;
  ASSERT_TRUE(m.stop(42));
  ASSERT_TRUE(m.start(request("viz")));  // attach none: nothing to be near
  EXPECT_EQ(hv.last_xml.find("vcpupin"), std::string::npos) << hv.last_xml;
}

TEST_F(Sessions, AGpuTheTopologyDoesNotKnowFailsTheStartAndLeavesNothing) {
  auto m = pinned(manager());
  auto s = m.start(request("vgpu"));  // 0000:3b:00.0 is not in that machine's topology
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("job 42"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("pinning vCPUs near GPU 0000:3b:00.0"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("not found"), std::string::npos) << s.error().message;
  EXPECT_TRUE(nothing_left());
}

TEST_F(Sessions, OnDemandGetsAProxyOfTheSessionsOwnToItsVncSocket) {
  auto m = manager_with_ondemand();
  auto s = m.start(request());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(ood.last_socket, hv.socket);
  EXPECT_EQ(s->access.ood_host, "gpu-node-07");
  EXPECT_EQ(s->access.ood_port, 20042);
  auto r = m.rotate_password(42);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->access.ood_port, 20042) << "a new password, the same way in";
  ASSERT_TRUE(m.stop(42));
  EXPECT_EQ(ood.stopped, std::vector<std::uint32_t>{42});
  EXPECT_TRUE(nothing_left());
}

TEST_F(Sessions, WithoutOnDemandTheAccessNamesNoWebsocket) {
  auto s = manager().start(request());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->access.ood_port, 0);
  EXPECT_TRUE(ood.ports.empty());
}

TEST_F(Sessions, AnOnDemandProxyThatWillNotStartFailsTheStartAndLeavesNothing) {
  ood.fail = true;
  auto m = manager_with_ondemand();
  auto s = m.start(request());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("no free port"), std::string::npos) << s.error().message;
  EXPECT_TRUE(nothing_left());
}

TEST_F(Sessions, ReapStopsAnOnDemandProxyWhoseJobIsGone) {
  auto m = manager_with_ondemand();
  ood.ports[77] = 20077;  // left by a vgpu-viz killed after starting it (viz.after_ood_proxy)
  auto report = m.reap({});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->removed, std::vector<std::uint32_t>{77});
  EXPECT_TRUE(ood.ports.empty());
}

TEST_F(Sessions, RotateWithoutASessionIsNotFound) {
  EXPECT_EQ(manager().rotate_password(42).error().code, ErrorCode::not_found);
}

}  // namespace
}  // namespace vgpu::viz
