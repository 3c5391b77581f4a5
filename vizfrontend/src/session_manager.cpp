#include "session_manager.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <functional>

#include "domain_xml.h"
#include "file_util.h"
#include "vgpu/base/crash_point.h"

namespace vgpu::viz {
namespace {

// Undo steps of a start in progress; run in reverse unless the start completed.
class Rollback {
 public:
  ~Rollback() {
    if (committed_) return;
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) (*it)();
  }
  void add(std::function<void()> step) { steps_.push_back(std::move(step)); }
  void commit() { committed_ = true; }
  Rollback() = default;
  Rollback(const Rollback&) = delete;
  Rollback& operator=(const Rollback&) = delete;

 private:
  std::vector<std::function<void()>> steps_;
  bool committed_ = false;
};

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "NODE";
  return printable_label(buf);
}

// Defines and starts the domain under KVM when the hypervisor offers it, and under TCG when it
// does not or the guest would not start with it (a /dev/kvm that cannot run a guest). The
// domain is undefined between the two tries, so a failure leaves what the rollback knows.
Result<AcceleratorChoice> define_and_start(Hypervisor& hv, DomainRequest& dr, const std::string& name, bool kvm_allowed,
                                           Rollback& rollback) {
  auto offered =
      kvm_allowed ? hv.offers_kvm(dr.emulator)
                  : Result<void>(fail(ErrorCode::unavailable, "the node's viz config says \"accelerator\": \"tcg\""));
  const std::string offer_error = offered ? "" : offered.error().message;
  std::string start_error;
  for (Accelerator a : {Accelerator::kvm, Accelerator::tcg}) {
    if (a == Accelerator::kvm && !offered) continue;
    dr.accelerator = a;
    auto xml = render_domain_xml(dr);
    if (!xml) return std::unexpected(xml.error());
    auto defined = hv.define(*xml);
    if (!defined && a == Accelerator::tcg) return std::unexpected(defined.error());
    if (!defined) {  // a driver that has no kvm domain type after all
      start_error = defined.error().message;
      continue;
    }
    rollback.add([&hv, name] { (void)hv.undefine(name); });
    crash_point("viz.after_define");
    auto started = hv.start(name);
    if (started) {
      rollback.add([&hv, name] { (void)hv.destroy(name); });
      crash_point("viz.after_start");
      return choose_accelerator(offer_error, start_error);
    }
    if (a == Accelerator::tcg) return std::unexpected(started.error());
    start_error = started.error().message;
    (void)hv.undefine(name);
  }
  return fail(ErrorCode::internal, "unreachable: TCG is always tried");
}

}  // namespace

SessionManager::SessionManager(const VizConfig& config, Hypervisor& hypervisor, Sysfs& sysfs, Proxy& proxy,
                               RandomSource random, SessionProxy* session_proxy)
    : config_(config),
      hv_(hypervisor),
      sysfs_(sysfs),
      proxy_(proxy),
      random_(std::move(random)),
      session_proxy_(session_proxy) {}

std::string SessionManager::record_path(std::uint32_t job) const {
  return fmt::format("{}/sessions/{}.json", config_.state_dir, job);
}
std::string SessionManager::token_dir() const { return config_.state_dir + "/tokens"; }
std::string SessionManager::token_path(std::uint32_t job) const {
  return fmt::format("{}/{}", token_dir(), domain_name(job));
}
std::string SessionManager::serial_log_path(std::uint32_t job) const {
  return fmt::format("{}/guest/{}.serial.log", config_.state_dir, job);
}

Result<void> SessionManager::prepare_dirs() const {
  for (const auto& d : {config_.state_dir, config_.state_dir + "/sessions", token_dir(), config_.state_dir + "/tmp",
                        config_.state_dir + "/guest"}) {
    if (auto ok = make_dirs(d, 0700); !ok) return ok;
  }
  return {};
}

Result<void> SessionManager::write_token(std::uint32_t job, const std::string& token,
                                         const std::string& vnc_socket) const {
  // TokenFile syntax: "<token>: unix_socket:<path>" sends the WebSocket to that UNIX socket. The
  // token is hex; the path is libvirt's (graphics_socket_of checked it).
  return write_file_atomic(token_path(job), config_.state_dir + "/tmp",
                           fmt::format("{}: unix_socket:{}\n", token, vnc_socket), 0600);
}

Result<std::string> SessionManager::read_token(std::uint32_t job) const {
  auto text = read_file(token_path(job));
  if (!text) return std::unexpected(text.error());
  const auto colon = text->find(':');
  if (colon == std::string::npos) return fail(ErrorCode::corrupt, fmt::format("{}: no token", token_path(job)));
  return text->substr(0, colon);
}

AccessInfo SessionManager::access_for(std::uint32_t job, const std::string& token, const std::string& password) const {
  auto info = make_access_info(config_.public_host, config_.proxy_port,
                               config_.ssh_host.empty() ? host_name() : config_.ssh_host, config_.listen_address, token,
                               password);
  if (session_proxy_ != nullptr) {
    if (auto port = session_proxy_->port(job)) {
      info.ood_host = config_.ood_host.empty() ? host_name() : config_.ood_host;
      info.ood_port = *port;
    }
  }
  return info;
}

AccessInfo SessionManager::spice_access(int port, const std::string& password) const {
  const std::string host = config_.ssh_host.empty() ? host_name() : config_.ssh_host;
  AccessInfo info;
  info.url = fmt::format("spice://localhost:{}?password={}", port, url_encode(password));
  info.ssh_line = fmt::format("ssh -N -L {}:{}:{} {}", port, config_.listen_address, port, host);
  return info;
}

Result<void> SessionManager::release_attachment(const Attachment& a) {
  return make_attacher(a.kind, sysfs_)->release(a);
}

Result<StartedSession> SessionManager::start(const StartRequest& req) {
  const std::string ctx = fmt::format("vgpu-viz: job {}", req.job_id);
  auto in_ctx = [&](const Error& e) { return std::unexpected(e.within(ctx)); };
  if (req.job_id == 0) return fail(ErrorCode::invalid_argument, ctx + ": no job id");
  const auto pool_it = config_.pools.find(req.pool);
  if (pool_it == config_.pools.end()) {
    return fail(ErrorCode::not_found, fmt::format("{}: pool '{}': no such viz pool", ctx, printable_label(req.pool)));
  }
  const VizPoolSpec& pool = pool_it->second;
  ImageSpec image = pool.image;
  if (!req.image.empty()) {
    auto name = check_name("image", req.image);
    if (!name) return in_ctx(name.error());
    const auto img = config_.images.find(*name);
    if (img == config_.images.end()) {
      return fail(ErrorCode::not_found, fmt::format("{}: image '{}': not offered on this node", ctx, *name));
    }
    image = img->second;
  }
  if (!req.cpuset.empty()) {
    if (auto ok = check_cpuset(req.cpuset); !ok) return in_ctx(ok.error());
  }
  if (!req.device.empty()) {
    if (auto ok = check_pci_address(req.device); !ok) return in_ctx(ok.error());
  }
  if (!req.gpu_instance.empty()) {
    if (req.gpu_instance.find_first_not_of("0123456789") != std::string::npos || req.gpu_instance.size() > 4) {
      return fail(ErrorCode::invalid_argument,
                  fmt::format("{}: GPU instance '{}': expected a number", ctx, printable_label(req.gpu_instance)));
    }
  }
  const std::string name = domain_name(req.job_id);
  if (std::filesystem::exists(record_path(req.job_id))) {
    return fail(ErrorCode::conflict,
                fmt::format("{}: a session is already recorded ({})", ctx, record_path(req.job_id)));
  }
  if (auto existing = hv_.list(name); !existing) {
    return in_ctx(existing.error());
  } else {
    for (const auto& d : *existing) {
      if (d.name == name) {
        return fail(ErrorCode::conflict, fmt::format("{}: domain {} already exists; run `vgpu-viz reap`", ctx, name));
      }
    }
  }
  if (auto ok = prepare_dirs(); !ok) return in_ctx(ok.error());

  auto password = make_vnc_password(random_);
  if (!password) return in_ctx(password.error());
  auto token = make_token(random_);
  if (!token) return in_ctx(token.error());

  Rollback rollback;
  SessionRecord record;
  record.job_id = req.job_id;
  record.domain = name;
  record.pool = pool.name;
  record.user = printable_label(req.user);
  record.proxy_port = config_.proxy_port;
  record.created_unix =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();

  // 1. The record first, so a crash at any later step still leaves reap something to follow.
  const std::string tmp = config_.state_dir + "/tmp";
  if (auto ok = write_file_atomic(record_path(req.job_id), tmp, to_json(record), 0644); !ok) return in_ctx(ok.error());
  rollback.add([this, job = req.job_id] { (void)remove_file(record_path(job)); });
  crash_point("viz.after_record");

  // 2. The GPU device.
  auto attachment = make_attacher(pool.attach, sysfs_)
                        ->acquire(AttachRequest{req.job_id, pool.gpu_type, req.device, req.gpu_instance});
  if (!attachment) return in_ctx(attachment.error().within(fmt::format("pool {}", pool.name)));
  rollback.add([this, a = *attachment] { (void)release_attachment(a); });
  crash_point("viz.after_acquire");
  record.attachment = *attachment;
  if (auto ok = write_file_atomic(record_path(req.job_id), tmp, to_json(record), 0644); !ok) return in_ctx(ok.error());

  // 3. The domain.
  DomainRequest dr;
  dr.job_id = req.job_id;
  dr.user = req.user;
  dr.job_name = req.job_name;
  dr.pool = &pool;
  dr.image = image;
  dr.geometry = req.geometry.value_or(
      Geometry{std::min(1024U, pool.max_geometry.width), std::min(768U, pool.max_geometry.height)});
  dr.cpuset = req.cpuset;
  if (dr.cpuset.empty() && cpu_locator_ && !attachment->parent.empty()) {
    // Near the GPU itself: for a VF (or an mdev on one) that is its physical function.
    std::string gpu = attachment->parent;
    if (auto pf = sysfs_.link_name(fmt::format("sys/bus/pci/devices/{}/physfn", gpu)); pf) gpu = *pf;
    auto cpus = cpu_locator_(gpu);
    if (!cpus) return in_ctx(cpus.error().within(fmt::format("pinning vCPUs near GPU {}", gpu)));
    if (auto ok = check_cpuset(*cpus); !ok) return in_ctx(ok.error());
    dr.cpuset = *cpus;
  }
  dr.listen_address = config_.listen_address;
  dr.display_password = *password;
  dr.serial_log = serial_log_path(req.job_id);
  dr.emulator = config_.emulator;
  dr.gpu = attachment->device;
  auto accelerator = define_and_start(hv_, dr, name, config_.accelerator != "tcg", rollback);
  if (!accelerator) return in_ctx(accelerator.error());

  // 4. Where the display listens (libvirt picks the VNC socket, autoport the SPICE port, at start).
  auto live = hv_.domain_xml(name, false);
  if (!live) return in_ctx(live.error());
  record.phase = "running";
  if (pool.display == DisplayKind::spice) {
    auto port = graphics_port_of(*live);
    if (!port) return in_ctx(port.error().within(name));
    if (*port <= 0) return fail(ErrorCode::unavailable, fmt::format("{}: domain {}: display has no port", ctx, name));
    record.display_port = *port;
    // noVNC speaks only VNC: a SPICE session is reached with remote-viewer through a tunnel to
    // its own port, so there is no token and no proxy.
    if (auto ok = write_file_atomic(record_path(req.job_id), tmp, to_json(record), 0644); !ok) {
      return in_ctx(ok.error());
    }
    rollback.commit();
    return StartedSession{record, spice_access(*port, *password), *password, *accelerator};
  }
  auto socket = graphics_socket_of(*live);
  if (!socket) return in_ctx(socket.error().within(name));

  // 5. The browser path: token, then the proxy.
  if (auto ok = write_token(req.job_id, *token, *socket); !ok) return in_ctx(ok.error());
  rollback.add([this, job = req.job_id] { (void)remove_file(token_path(job)); });
  crash_point("viz.after_token");
  if (auto ok = proxy_.ensure_running(); !ok) return in_ctx(ok.error());
  // 6. Open OnDemand's way in, when the node offers it: a proxy of this session's own.
  if (session_proxy_ != nullptr) {
    if (auto port = session_proxy_->start(req.job_id, *socket); !port) return in_ctx(port.error());
    rollback.add([this, job = req.job_id] { (void)session_proxy_->stop(job); });
    crash_point("viz.after_ood_proxy");
  }

  if (auto ok = write_file_atomic(record_path(req.job_id), tmp, to_json(record), 0644); !ok) return in_ctx(ok.error());
  rollback.commit();
  return StartedSession{record, access_for(req.job_id, *token, *password), *password, *accelerator};
}

Result<void> SessionManager::stop(std::uint32_t job) {
  const std::string ctx = fmt::format("vgpu-viz: stop job {}", job);
  const std::string name = domain_name(job);
  std::vector<std::string> problems;
  // The domain goes first: a device cannot be released while a guest holds it.
  if (auto ok = hv_.destroy(name); !ok) problems.push_back(ok.error().message);
  if (auto ok = hv_.undefine(name); !ok) problems.push_back(ok.error().message);
  std::optional<SessionRecord> record;
  if (auto text = read_file(record_path(job))) {
    auto r = parse_session_record(*text, record_path(job));
    if (r) {
      record = *r;
    } else {
      problems.push_back(r.error().message);
    }
  }
  Attachment attachment;
  if (record && record->attachment.kind != AttachKind::none) {
    attachment = record->attachment;
  } else if (sysfs_.exists(fmt::format("sys/bus/mdev/devices/{}", mdev_uuid_for_job(job)))) {
    // No record, or one written before the device was acquired (viz.after_acquire), but the
    // job's mdev exists: its UUID says whose it is.
    attachment = Attachment{AttachKind::mdev, MdevHostdev{mdev_uuid_for_job(job)}, {}, {}, {}};
  }
  if (auto ok = release_attachment(attachment); !ok) problems.push_back(ok.error().message);
  if (auto ok = remove_file(token_path(job)); !ok) problems.push_back(ok.error().message);
  if (session_proxy_ != nullptr) {
    if (auto ok = session_proxy_->stop(job); !ok) problems.push_back(ok.error().message);
  }
  (void)remove_file(serial_log_path(job));
  if (problems.empty()) {
    // Only forget the session once everything it held is gone, so a retry or reap can finish it.
    if (auto ok = remove_file(record_path(job)); !ok) problems.push_back(ok.error().message);
  }
  if (auto ok = stop_proxy_if_idle(); !ok) problems.push_back(ok.error().message);
  if (!problems.empty()) return fail(ErrorCode::io, fmt::format("{}: {}", ctx, fmt::join(problems, "; ")));
  return {};
}

Result<void> SessionManager::stop_proxy_if_idle() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(token_dir(), ec)) {
    (void)e;
    return {};  // a session still has a token
  }
  return proxy_.stop();
}

Result<std::vector<SessionRecord>> SessionManager::list() const {
  std::vector<SessionRecord> out;
  std::error_code ec;
  const std::string dir = config_.state_dir + "/sessions";
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".json") continue;
    auto text = read_file(e.path().string());
    if (!text) return std::unexpected(text.error());
    auto r = parse_session_record(*text, e.path().string());
    if (!r) return std::unexpected(r.error());
    out.push_back(*r);
  }
  std::ranges::sort(out, {}, &SessionRecord::job_id);
  return out;
}

Result<ReapReport> SessionManager::reap(const std::set<std::uint32_t>& live) {
  std::set<std::uint32_t> seen;
  // Every place a session can leave something: records, domains, tokens, mdevs.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(config_.state_dir + "/sessions", ec)) {
    if (auto job = parse_job_id(e.path().stem().string())) seen.insert(*job);
  }
  for (const auto& e : std::filesystem::directory_iterator(token_dir(), ec)) {
    if (auto job = job_of_domain(e.path().filename().string())) seen.insert(*job);
  }
  auto domains = hv_.list(kDomainPrefix);
  if (!domains) return std::unexpected(domains.error().within("vgpu-viz: reap"));
  for (const auto& d : *domains) {
    if (auto job = job_of_domain(d.name)) seen.insert(*job);
  }
  for (const auto job : make_attacher(AttachKind::mdev, sysfs_)->orphan_candidates()) seen.insert(job);
  if (session_proxy_ != nullptr) {
    for (const auto job : session_proxy_->jobs()) seen.insert(job);
  }

  ReapReport report;
  for (const auto job : seen) {
    if (live.contains(job)) continue;
    if (auto ok = stop(job); ok) {
      report.removed.push_back(job);
    } else {
      report.problems.push_back(ok.error().message);
    }
  }
  return report;
}

Result<StartedSession> SessionManager::rotate_password(std::uint32_t job) {
  const std::string ctx = fmt::format("vgpu-viz: rotate job {}", job);
  auto text = read_file(record_path(job));
  if (!text) return fail(ErrorCode::not_found, fmt::format("{}: no session", ctx));
  auto record = parse_session_record(*text, record_path(job));
  if (!record) return std::unexpected(record.error().within(ctx));
  const auto pool = config_.pools.find(record->pool);
  if (pool == config_.pools.end())
    return fail(ErrorCode::not_found, fmt::format("{}: pool {} gone", ctx, record->pool));
  auto password = make_vnc_password(random_);
  if (!password) return std::unexpected(password.error().within(ctx));
  // Same port or socket (libvirt refuses to change them live): only the password changes.
  std::string vnc_socket;
  if (pool->second.display == DisplayKind::vnc) {
    auto live = hv_.domain_xml(record->domain, false);
    if (!live) return std::unexpected(live.error().within(ctx));
    auto socket = graphics_socket_of(*live);
    if (!socket) return std::unexpected(socket.error().within(ctx));
    vnc_socket = *socket;
  }
  const std::string graphics =
      render_graphics_xml(pool->second.display, config_.listen_address, *password, record->display_port, vnc_socket);
  if (auto ok = hv_.update_graphics(record->domain, graphics); !ok) return std::unexpected(ok.error().within(ctx));
  if (pool->second.display == DisplayKind::spice) {
    return StartedSession{*record, spice_access(record->display_port, *password), *password, std::nullopt};
  }
  auto token = read_token(job);
  if (!token) return std::unexpected(token.error().within(ctx));
  return StartedSession{*record, access_for(job, *token, *password), *password, std::nullopt};
}

}  // namespace vgpu::viz
