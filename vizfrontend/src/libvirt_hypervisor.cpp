// Thin adapter over the libvirt C API: every call is checked, every libvirt object is owned by
// a unique_ptr, libvirt's own error text is kept and given context. No logic lives here.
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <fmt/format.h>
#include <memory>
#include <thread>
#include <utility>

#include "hypervisor.h"

namespace vgpu::viz {
namespace {

struct ConnectClose {
  void operator()(virConnectPtr c) const { virConnectClose(c); }
};
struct DomainFree {
  void operator()(virDomainPtr d) const { virDomainFree(d); }
};
struct StreamFree {
  void operator()(virStreamPtr s) const { virStreamFree(s); }
};
using Connection = std::unique_ptr<virConnect, ConnectClose>;
using Domain = std::unique_ptr<virDomain, DomainFree>;
using Stream = std::unique_ptr<virStream, StreamFree>;

// libvirt prints every error to stderr by default; we report them ourselves, with context.
void quiet_errors(void*, virErrorPtr) {}

std::string last_error() {
  const char* msg = virGetLastErrorMessage();
  return msg != nullptr ? msg : "unknown libvirt error";
}

int last_error_code() {
  virErrorPtr e = virGetLastError();
  return e != nullptr ? e->code : VIR_ERR_OK;
}

class LibvirtHypervisor final : public Hypervisor {
 public:
  LibvirtHypervisor(Connection conn, std::string uri) : conn_(std::move(conn)), uri_(std::move(uri)) {}

  Result<void> offers_kvm(std::string_view emulator) override {
    const std::string path(emulator);
    char* caps = virConnectGetDomainCapabilities(conn_.get(), path.c_str(), "x86_64", "pc", "kvm", 0);
    if (caps == nullptr)
      return fail(ErrorCode::unavailable,
                  fmt::format("libvirt {}: domain capabilities of {} for kvm: {}", uri_, path, last_error()));
    std::free(caps);
    return {};
  }

  Result<void> define(std::string_view xml) override {
    const std::string x(xml);
    Domain d(virDomainDefineXML(conn_.get(), x.c_str()));
    if (!d) return fail(ErrorCode::io, fmt::format("libvirt {}: define: {}", uri_, last_error()));
    return {};
  }

  Result<void> start(std::string_view name) override {
    auto d = lookup(name);
    if (!d) return std::unexpected(d.error());
    if (virDomainCreate(d->get()) < 0) return failure(name, "start");
    return {};
  }

  Result<std::string> domain_xml(std::string_view name, bool secure) override {
    auto d = lookup(name);
    if (!d) return std::unexpected(d.error());
    char* xml = virDomainGetXMLDesc(d->get(), secure ? VIR_DOMAIN_XML_SECURE : 0);
    if (xml == nullptr) return failure(name, "get XML");
    std::string out(xml);
    free(xml);  // NOLINT: libvirt hands out malloc'd strings
    return out;
  }

  Result<void> update_graphics(std::string_view name, std::string_view graphics_xml) override {
    auto d = lookup(name);
    if (!d) return std::unexpected(d.error());
    const std::string x(graphics_xml);
    if (virDomainUpdateDeviceFlags(d->get(), x.c_str(), VIR_DOMAIN_AFFECT_LIVE) < 0) {
      return failure(name, "update graphics device");
    }
    return {};
  }

  Result<void> screenshot(std::string_view name, const std::string& path) override {
    auto d = lookup(name);
    if (!d) return std::unexpected(d.error());
    Stream st(virStreamNew(conn_.get(), 0));
    if (!st) return failure(name, "screenshot stream");
    char* mime = virDomainScreenshot(d->get(), st.get(), 0, 0);
    if (mime == nullptr) return failure(name, "screenshot");
    free(mime);  // NOLINT
    FILE* f = std::fopen(path.c_str(), "wbe");
    if (f == nullptr) {
      virStreamAbort(st.get());
      return fail(ErrorCode::io, fmt::format("screenshot of {}: cannot write {}", name, path));
    }
    // The sink returns the bytes it consumed (libvirt retries on fewer); it refuses to grow past
    // a bound so a misbehaving stream cannot fill the disk.
    struct Sink {
      FILE* file;
      std::size_t written;
    } sink{f, 0};
    const int rc = virStreamRecvAll(
        st.get(),
        [](virStreamPtr, const char* data, size_t n, void* opaque) -> int {
          auto* s = static_cast<Sink*>(opaque);
          constexpr std::size_t kMaxScreenshot = 256U << 20;
          if (s->written + n > kMaxScreenshot || std::fwrite(data, 1, n, s->file) != n) return -1;
          s->written += n;
          return static_cast<int>(n);
        },
        &sink);
    const bool closed = std::fclose(f) == 0;
    if (rc < 0) {
      virStreamAbort(st.get());
      return failure(name, "screenshot transfer");
    }
    if (virStreamFinish(st.get()) < 0) return failure(name, "screenshot finish");
    if (!closed) return fail(ErrorCode::io, fmt::format("screenshot of {}: writing {} failed", name, path));
    return {};
  }

  Result<void> destroy(std::string_view name) override {
    auto d = lookup(name);
    if (!d) return d.error().code == ErrorCode::not_found ? Result<void>{} : std::unexpected(d.error());
    if (virDomainIsActive(d->get()) != 1) return {};
    // Gone in between (a concurrent stop: the epilog and the planner's reap) is what we wanted.
    if (virDomainDestroy(d->get()) < 0 && last_error_code() != VIR_ERR_OPERATION_INVALID &&
        last_error_code() != VIR_ERR_NO_DOMAIN) {
      return failure(name, "destroy");
    }
    return {};
  }

  Result<void> undefine(std::string_view name) override {
    auto d = lookup(name);
    if (!d) return d.error().code == ErrorCode::not_found ? Result<void>{} : std::unexpected(d.error());
    if (virDomainUndefine(d->get()) < 0 && last_error_code() != VIR_ERR_NO_DOMAIN) return failure(name, "undefine");
    return {};
  }

  Result<void> watch_logins(std::string_view name) override {
    auto d = lookup(name);
    if (!d) return std::unexpected(d.error());
    if (callback_id_ >= 0) return {};
    callback_id_ = virConnectDomainEventRegisterAny(conn_.get(), d->get(), VIR_DOMAIN_EVENT_ID_GRAPHICS,
                                                    graphics_callback(), this, nullptr);
    if (callback_id_ < 0) return failure(name, "register graphics events");
    return {};
  }

  Result<int> wait_logins(int timeout_ms) override {
    // virEventRunDefaultImpl returns after one dispatch round, and a round can end at once again
    // and again: the reply to the caller's last RPC ends one, and with the graphics callback
    // registered the loop keeps a timer due (its poll() gets timeout 0). Rounds run until a login
    // or the deadline, and a round that ended at once is followed by a short sleep, so waiting
    // costs nothing (it spun 220 rounds a second, a third of a core, beside the emulated guest).
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (logins_ == 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      const int timer = virEventAddTimeout(
          static_cast<int>(left.count()), [](int, void*) {}, nullptr, nullptr);
      if (timer < 0) return fail(ErrorCode::internal, "libvirt: cannot add an event timer");
      const auto round = Clock::now();
      const int rc = virEventRunDefaultImpl();
      virEventRemoveTimeout(timer);
      if (rc < 0) return fail(ErrorCode::io, fmt::format("libvirt {}: event loop: {}", uri_, last_error()));
      if (logins_ == 0 && Clock::now() - round < std::chrono::milliseconds(5)) {
        std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(50)));
      }
    }
    return std::exchange(logins_, 0);
  }

  ~LibvirtHypervisor() override {
    if (callback_id_ >= 0) virConnectDomainEventDeregisterAny(conn_.get(), callback_id_);
  }
  LibvirtHypervisor(const LibvirtHypervisor&) = delete;
  LibvirtHypervisor& operator=(const LibvirtHypervisor&) = delete;

  Result<std::vector<DomainSummary>> list(std::string_view prefix) override {
    virDomainPtr* domains = nullptr;
    const int n = virConnectListAllDomains(conn_.get(), &domains, 0);
    if (n < 0) return fail(ErrorCode::io, fmt::format("libvirt {}: list domains: {}", uri_, last_error()));
    std::vector<DomainSummary> out;
    for (int i = 0; i < n; ++i) {
      Domain d(domains[i]);
      const char* nm = virDomainGetName(d.get());
      if (nm != nullptr && std::string_view(nm).starts_with(prefix)) {
        out.push_back(DomainSummary{nm, virDomainIsActive(d.get()) == 1});
      }
    }
    free(domains);  // NOLINT
    return out;
  }

 private:
  Result<Domain> lookup(std::string_view name) {
    const std::string n(name);
    Domain d(virDomainLookupByName(conn_.get(), n.c_str()));
    if (!d) {
      if (last_error_code() == VIR_ERR_NO_DOMAIN) {
        return fail(ErrorCode::not_found, fmt::format("libvirt {}: domain {}: no such domain", uri_, name));
      }
      return fail(ErrorCode::io, fmt::format("libvirt {}: domain {}: {}", uri_, name, last_error()));
    }
    return d;
  }

  std::unexpected<Error> failure(std::string_view name, std::string_view what) {
    return fail(ErrorCode::io, fmt::format("libvirt {}: domain {}: {}: {}", uri_, name, what, last_error()));
  }

  // libvirt takes every event callback as a generic pointer; void(*)() is the sanctioned
  // intermediate type for such a cast.
  static virConnectDomainEventGenericCallback graphics_callback() {
    return reinterpret_cast<virConnectDomainEventGenericCallback>(reinterpret_cast<void (*)()>(&on_graphics));
  }

  static void on_graphics(virConnectPtr, virDomainPtr, int phase, const virDomainEventGraphicsAddress*,
                          const virDomainEventGraphicsAddress*, const char*, const virDomainEventGraphicsSubject*,
                          void* opaque) {
    // INITIALIZE = the client authenticated; CONNECT alone may still fail authentication.
    if (phase == VIR_DOMAIN_EVENT_GRAPHICS_INITIALIZE) ++static_cast<LibvirtHypervisor*>(opaque)->logins_;
  }

  Connection conn_;
  std::string uri_;
  int callback_id_ = -1;
  int logins_ = 0;
};

}  // namespace

Result<std::unique_ptr<Hypervisor>> open_libvirt(const std::string& uri) {
  virSetErrorFunc(nullptr, quiet_errors);
  // Events (display logins) need libvirt's event loop registered before the first connection.
  static const int event_impl = virEventRegisterDefaultImpl();
  if (event_impl < 0) return fail(ErrorCode::internal, "libvirt: cannot register the event loop");
  Connection conn(virConnectOpen(uri.c_str()));
  if (!conn) {
    return fail(ErrorCode::unavailable, fmt::format("libvirt {}: cannot connect: {}", uri, last_error()));
  }
  return std::make_unique<LibvirtHypervisor>(std::move(conn), uri);
}

}  // namespace vgpu::viz
