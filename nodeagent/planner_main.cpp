// vgpu-planner: the per-node planning daemon. Every period (policy planner.period_s), or shortly
// after an epilog pokes it with SIGUSR1, it runs one planning round for its node. SIGTERM stops it.
// Between rounds it serves the node's prologs and epilogs that hand it their work over the node's
// hook socket (hook_socket.h), one at a time.
// A round's notes go to the log when they first appear or change, and a standing one every ten
// minutes (note_log.h).
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <fstream>
#include <vector>

#include "node_runtime.h"
#include "adapters.h"
#include "epilog_serving.h"
#include "hook_policy_check.h"
#include "hook_process.h"
#include "hook_socket.h"
#include "hook_work.h"
#include "view_publisher.h"
#include "view_signature.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/contract/atomic_file.h"
#include "vgpu/contract/demand_file.h"
#include "vgpu/node/hook_tally_store.h"
#include "vgpu/node/launch_watch.h"
#include "vgpu/node/metrics.h"
#include "vgpu/node/note_log.h"
#include "vgpu/node/node_state.h"
#include "vgpu/node/planner.h"

namespace {

// Between rounds the planner waits for a control signal and serves the node's hooks meanwhile
// (hook_socket.h): wait() returns the signal that came (SIGUSR1, SIGTERM, ...) or 0 at the timeout.
// It wakes for the listener and for each connection still sending its request line, and no later
// than the nearest such connection's deadline, so `serve` (HookListener::serve_ready) reads every
// line as it comes and drops a stuck connection on time.
class Waiter {
 public:
  using Serve = std::function<void()>;
  Waiter(int signal_fd, vgpu::agent::HookListener* hooks, Serve serve)
      : signal_fd_(signal_fd), hooks_(hooks), serve_(std::move(serve)) {}
  int wait(std::chrono::steady_clock::duration timeout) const {
    using std::chrono::steady_clock;
    const auto until = steady_clock::now() + timeout;
    std::vector<pollfd> fds;
    while (true) {
      const auto now = steady_clock::now();
      auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      if (left <= 0) return 0;
      fds.assign(1, {signal_fd_, POLLIN, 0});
      std::optional<steady_clock::time_point> due;
      if (hooks_) {
        for (int fd : hooks_->wait_fds()) fds.push_back({fd, POLLIN, 0});
        due = hooks_->next_deadline();
        if (due)
          left = std::clamp<decltype(left)>(std::chrono::ceil<std::chrono::milliseconds>(*due - now).count(), 0, left);
      }
      const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left));
      if (ready < 0 && errno != EINTR) return 0;
      if (ready < 0) continue;
      if (fds[0].revents & POLLIN) {
        signalfd_siginfo info{};
        if (::read(signal_fd_, &info, sizeof info) == sizeof info) return static_cast<int>(info.ssi_signo);
      }
      if (!hooks_) continue;
      const bool pending_woke = std::any_of(fds.begin() + 2, fds.end(), [](const pollfd& p) { return p.revents != 0; });
      if ((fds[1].revents & POLLIN) || pending_woke || (due && steady_clock::now() >= *due)) serve_();
      else if (fds[1].revents & (POLLERR | POLLHUP | POLLNVAL))
        hooks_ = nullptr;  // broken: hooks work alone
    }
  }

 private:
  int signal_fd_;
  mutable vgpu::agent::HookListener* hooks_;
  Serve serve_;
};

// Every epilog pokes (SIGUSR1). When jobs end in a burst, one round a moment after the last poke
// serves them all: further pokes within kPokeSettle restart the wait, up to kPokeSettleMax in all.
// Returns the signal that ended the wait early (SIGTERM/SIGINT), or 0.
constexpr auto kPokeSettle = std::chrono::milliseconds(200);
constexpr auto kPokeSettleMax = std::chrono::milliseconds(1000);
int settle_pokes(const Waiter& waiter) {
  const auto give_up = std::chrono::steady_clock::now() + kPokeSettleMax;
  while (true) {
    const auto left =
        std::min<std::chrono::steady_clock::duration>(kPokeSettle, give_up - std::chrono::steady_clock::now());
    if (left <= std::chrono::steady_clock::duration::zero()) return 0;
    const int sig = waiter.wait(left);
    if (sig != SIGUSR1) return sig;
  }
}

void serve_hook(vgpu::agent::NodeRuntime& rt, const vgpu::contract::HookRequest& request) {
  const auto now = std::chrono::steady_clock::now();
  auto started = vgpu::agent::from_monotonic_ns(request.since_ns);
  // Not a time this hook can have started at (ahead of now, or an hour before): timed from now.
  if (started > now || now - started > std::chrono::hours(1)) started = now;
  if (request.kind == vgpu::contract::HookKind::prolog) {
    vgpu::agent::prolog_with(rt, vgpu::agent::prolog_request_of(request), started);
  } else {
    vgpu::agent::release_job_with(rt, "epilog", request.job, "ended", started);
  }
}

// One squeue per period for the whole cluster, written atomically for every node's planner; and,
// unless `reserve_wide_after` is 0, Slurm reservations for wide jobs starving longer than that.
int publish_demand(const std::string& path, int period, int reserve_wide_after, const sigset_t& signals) {
  bool wide_reservations_may_exist = true;
  vgpu::BookingRetries booking_retries;
  while (true) {
    auto text = vgpu::agent::squeue_pending_text();
    if (!text) {
      std::fprintf(stderr, "vgpu-planner: publish-demand: %s\n", text.error().message.c_str());
    } else {
      if (auto ok = vgpu::contract::write_demand_file(vgpu::posix_file_system(), path, *text); !ok)
        std::fprintf(stderr, "vgpu-planner: publish-demand: %s\n", ok.error().message.c_str());
      if (reserve_wide_after > 0)
        for (const auto& line : vgpu::agent::book_wide_reservations(*text, reserve_wide_after,
                                                                    wide_reservations_may_exist, booking_retries))
          std::fprintf(stderr, "vgpu-planner: publish-demand: %s\n", line.c_str());
    }
    timespec wait{period, 0};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) return 0;
  }
}

// VGPU_METRICS_FILE: after every round, the node's metrics for node_exporter's textfile collector
// (docs/metrics.md). World-readable: node_exporter runs as its own user. Not worth an fsync: the
// next round rewrites it.
void write_metrics(const std::string& path, vgpu::NodeContext& ctx, const vgpu::PlannerState& state,
                   const vgpu::PlannerMetrics& metrics, const std::optional<vgpu::NodeGres>& slurm,
                   const vgpu::agent::NodeRuntime& rt, const vgpu::ActivitySample* activity, std::string& last_error) {
  auto ledger = ctx.ledger->load();
  vgpu::NodeMetricsInput in;
  in.node = ctx.node;
  in.ledger = ledger ? &*ledger : nullptr;
  in.policy = ctx.policy;
  if (auto adv = vgpu::read_advertised_counts(ctx); adv) in.advertised = *adv;
  in.slurm = slurm;
  in.handover_pending = state.shrink_unconfirmed;
  in.split_mismatch_rounds = state.split_mismatch_rounds;
  in.cluster_view = ctx.slurm->cluster_view_status();
  in.planner = &metrics;
  in.activity = activity;
  auto hooks = vgpu::read_hook_tally(ctx);
  if (hooks) in.hooks = &*hooks;
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  auto ok = vgpu::contract::atomic_replace(vgpu::posix_file_system(), dir, name, vgpu::render_node_metrics(in),
                                           vgpu::contract::ReplaceOptions::rebuildable_file(0644));
  std::string error = ok ? "" : fmt::format("vgpu: planner: node {}: metrics: {}", ctx.node, ok.error().message);
  if (!error.empty() && error != last_error) rt.log(error);  // once per distinct failure, not every round
  last_error = error;
}

struct Options {
  bool once = false;
  bool verify = false;
  std::string publish;
  vgpu::agent::ViewPublishing view;
  std::vector<std::string> make_view_key;
  int period = 0;
  int reserve_wide_after = 600;
};

// The command line into `opt`; an exit status when the program must end here (--help, a bad option).
std::optional<int> parse_options(int argc, char** argv, Options& opt) {
  CLI::App app{"vgpu-planner - re-plans this node's GPU partitions toward pending Slurm demand"};
  app.add_flag("--once", opt.once, "Run one planning round and exit");
  app.add_option("--publish-view", opt.view.file,
                 "Controller mode: write the cluster view to FILE every period (VGPU_CLUSTER_VIEW=FILE)");
  app.add_option("--serve-view", opt.view.port,
                 "Controller mode: serve the cluster view on PORT (6828 by default for VGPU_CLUSTER_VIEW=service)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--view-key", opt.view.private_key,
                 "Controller mode: sign the cluster view with this ed25519 private key (PEM, mode 0600)");
  app.add_option("--make-view-key", opt.make_view_key, "Write a new ed25519 key pair: PRIVATE PUBLIC, then exit")
      ->expected(2);
  app.add_option("--publish-demand", opt.publish,
                 "Controller mode, older: pending demand only, to FILE (VGPU_DEMAND_FILE); see --serve-view");
  app.add_option("--reserve-wide-after", opt.reserve_wide_after,
                 "Controller mode: book a Slurm reservation for a job needing several nodes or whole GPUs "
                 "once it has waited this many seconds (0: never; default 600)")
      ->check(CLI::Range(0, 7 * 86400));
  app.add_flag("--verify", opt.verify, "Check ledger, hardware, advertisement and job records agree; exit 1 if not");
  app.add_option("--period", opt.period, "Seconds between rounds (default: the policy's planner.period_s)")
      ->check(CLI::Range(1, 3600));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

// --verify: 0 consistent, 1 problems (printed), 2 the check itself failed.
int verify(vgpu::NodeContext& ctx) {
  auto problems = vgpu::verify_node(ctx);
  if (!problems) {
    std::fprintf(stderr, "vgpu-planner: verify: node %s: %s\n", ctx.node.c_str(), problems.error().message.c_str());
    return 2;
  }
  for (const auto& p : *problems) std::printf("node %s: %s\n", ctx.node.c_str(), p.c_str());
  if (problems->empty()) std::printf("node %s: consistent\n", ctx.node.c_str());
  return problems->empty() ? 0 : 1;
}

// The node's hooks this planner serves, between rounds and at a round's lock-free waits: every
// hook whose request is complete, never waiting for one that is not (HookListener::serve_ready).
// The hooks' socket opens before the pid file: a hook that sees the planner may hand it work at once.
class HookServing {
 public:
  HookServing(vgpu::agent::NodeRuntime& rt, bool once)
      : rt_(rt),
        ctx_(rt.context()),
        policy_(vgpu::agent::PolicyIdentity::of(vgpu::contract::resolve_policy_path(std::getenv("VGPU_POLICY")))) {
    if (once) return;
    auto listener = vgpu::agent::HookListener::open(vgpu::contract::hook_socket_path(ctx_.state_dir, ctx_.node));
    if (listener) hooks_.emplace(std::move(*listener));
    else
      rt_.log(fmt::format("vgpu: planner: node {}: hooks do their own work: {}", ctx_.node, listener.error().message));
  }
  vgpu::agent::HookListener* listener() { return hooks_ ? &*hooks_ : nullptr; }

  void serve_ready() {
    if (serving_ || !hooks_) return;  // a served hook's work never serves another inside it
    serving_ = true;
    auto notes =
        hooks_->serve_ready([this](const auto& r) { return decline(r); }, [this](const auto& r) { serve_timed(r); });
    serving_ = false;
    for (const auto& note : notes) rt_.log(note);
  }

 private:
  // Every request read, served here or not (declined, or its hook gave up waiting and does its own
  // work), says that slurmd has accepted the job's launch (launch_watch.h).
  std::optional<std::string> decline(const vgpu::contract::HookRequest& r) const {
    if (auto* launches = ctx_.launches) launches->hook_arrived(r.job, ctx_.now());
    if (auto why = vgpu::agent::why_not_serve(r, policy_); !why.empty()) return why;
    if (r.kind == vgpu::contract::HookKind::epilog && !epilogs_.serving(std::chrono::steady_clock::now()))
      return std::string();  // routine: the epilog scrubs on its own, beside the others
    return std::nullopt;
  }
  void serve_timed(const vgpu::contract::HookRequest& r) {
    const auto started = std::chrono::steady_clock::now();
    serve_hook(rt_, r);
    const auto ended = std::chrono::steady_clock::now();
    if (r.kind == vgpu::contract::HookKind::epilog && epilogs_.served(ended - started, ended))
      rt_.log(
          fmt::format("vgpu: planner: node {}: a served epilog took {} ms (its scrub): epilogs run on "
                      "their own for {} minutes, so the scrubs of different jobs overlap",
                      ctx_.node, std::chrono::duration_cast<std::chrono::milliseconds>(ended - started).count(),
                      std::chrono::duration_cast<std::chrono::minutes>(vgpu::agent::EpilogServing::kPause).count()));
  }

  vgpu::agent::NodeRuntime& rt_;
  vgpu::NodeContext& ctx_;
  const vgpu::agent::PolicyIdentity policy_;
  std::optional<vgpu::agent::HookListener> hooks_;
  bool serving_ = false;
  vgpu::agent::EpilogServing epilogs_;
};

// What follows each round: the served hooks' runs into the tally (once per round rather than once
// per hook), the metrics file (VGPU_METRICS_FILE), and the round's notes in the log.
class RoundReport {
 public:
  RoundReport(vgpu::agent::NodeRuntime& rt, const char* metrics_path)
      : rt_(rt), ctx_(rt.context()), metrics_path_(metrics_path ? metrics_path : "") {
    // Utilisation is sampled only for the metrics file: GPM reports between two samples, so each
    // round's values cover the time since the round before.
    if (!metrics_path_.empty() && ctx_.backend) sampler_ = ctx_.backend->activity_sampler();
    ctx_.pending_tally = &served_runs_;
  }
  void flush_served_runs() {
    if (auto ok = vgpu::flush_hook_tally(ctx_, served_runs_); !ok)
      rt_.log(fmt::format("vgpu: planner: node {}: metrics tally: {}", ctx_.node, ok.error().message));
  }
  void after(const vgpu::Result<vgpu::PlannerRoundResult>& round, const vgpu::PlannerState& state,
             std::chrono::steady_clock::time_point started) {
    flush_served_runs();
    if (!metrics_path_.empty()) write_round_metrics(round, state, started);
    if (!round) return rt_.log(round.error().message);
    for (const auto& n : notes_.to_log(round->notes, std::time(nullptr)))
      rt_.log(fmt::format("vgpu: planner: node {}: {}", ctx_.node, n));
    if (round->prepared > 0)
      rt_.log(fmt::format("vgpu: planner: node {}: prepared {} slot(s) ahead of demand", ctx_.node, round->prepared));
    if (round->advertisement_changed) {
      std::string split;
      for (const auto& [p, n] : round->advertised) split += fmt::format(" {}:{}", p, n);
      rt_.log(fmt::format("vgpu: planner: node {}: advertised{}", ctx_.node, split.empty() ? " nothing" : split));
    }
  }

 private:
  void write_round_metrics(const vgpu::Result<vgpu::PlannerRoundResult>& round, const vgpu::PlannerState& state,
                           std::chrono::steady_clock::time_point started) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    auto after = ctx_.ledger->load();
    metrics_.record_round(round.has_value(), took.count(), std::time(nullptr), after ? &*after : nullptr);
    if (round && round->slurm_view) slurm_view_ = round->slurm_view;
    std::optional<vgpu::ActivitySample> activity;
    if (sampler_) {
      activity = sampler_->sample();
      metrics_.record_activity_errors(*activity);
    }
    write_metrics(metrics_path_, ctx_, state, metrics_, slurm_view_, rt_, activity ? &*activity : nullptr,
                  metrics_error_);
  }

  vgpu::agent::NodeRuntime& rt_;
  vgpu::NodeContext& ctx_;
  const std::string metrics_path_;
  vgpu::PlannerMetrics metrics_;
  std::optional<vgpu::NodeGres> slurm_view_;
  std::string metrics_error_;
  vgpu::NoteLog notes_{600};  // a standing note is logged once, then every ten minutes
  std::unique_ptr<vgpu::ActivitySampler> sampler_;
  vgpu::PendingTally served_runs_;
};

// The daemon: rounds every period or after a poke, hooks served in between, until SIGTERM.
int run_planner(vgpu::agent::NodeRuntime& rt, const Options& opt, const sigset_t& signals) {
  auto& ctx = rt.context();
  const int period = opt.period > 0 ? opt.period : ctx.policy->planner.period_s;
  // The control signals stay blocked (the waiter reads them): a round sees a stop as pending.
  ctx.stopping = [] {
    sigset_t pending;
    return sigpending(&pending) == 0 && (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
  };
  vgpu::PlannerState planner;
  HookServing hooks(rt, opt.once);
  const int signal_fd = ::signalfd(-1, &signals, SFD_CLOEXEC);
  if (signal_fd < 0) {
    std::fprintf(stderr, "vgpu-planner: signalfd: %s\n", std::strerror(errno));
    return 1;
  }
  const Waiter waiter(signal_fd, hooks.listener(), [&hooks] { hooks.serve_ready(); });
  if (hooks.listener()) ctx.serve_waiting_hooks = [&hooks] { hooks.serve_ready(); };
  vgpu::LaunchWatch launches;  // every hook request read below tells it which job's launch arrived
  ctx.launches = &launches;
  if (!opt.once) std::ofstream(rt.planner_pidfile()) << ::getpid() << "\n";
  rt.log(fmt::format("vgpu: planner: node {}: started, period {} s", ctx.node, period));
  // A planner killed between writing the advertisement and handing it to slurmctld left a file
  // Slurm never took; handing it over once at start makes Slurm's split and the file agree again.
  if (!opt.once)
    if (auto current = vgpu::read_advertised_counts(ctx); current)
      if (auto ok = ctx.publisher->publish(*current); !ok) rt.log(ok.error().message);
  RoundReport report(rt, std::getenv("VGPU_METRICS_FILE"));
  while (true) {
    const auto started = std::chrono::steady_clock::now();
    auto round = vgpu::run_planner_round(ctx, planner);
    report.after(round, planner, started);
    if (opt.once) return round ? 0 : 1;
    int sig = waiter.wait(std::chrono::seconds(period));
    if (sig == SIGUSR1) sig = settle_pokes(waiter);
    if (sig == SIGTERM || sig == SIGINT) break;
  }
  report.flush_served_runs();
  std::remove(rt.planner_pidfile().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The cleanup process an epilog this planner served handed its instances to
  // (VGPU_SCRUB_AFTER_EPILOG): /proc/self/exe is the planner then.
  if (auto rc = vgpu::agent::finish_released_if_asked(argc, argv)) return *rc;
  Options opt;
  if (auto rc = parse_options(argc, argv, opt)) return *rc;
  // Block the control signals before anything else so none is lost between rounds.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGUSR1, SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  try {
    if (!opt.make_view_key.empty()) {
      auto made = vgpu::agent::make_view_key_pair(opt.make_view_key[0], opt.make_view_key[1]);
      if (!made) std::fprintf(stderr, "vgpu-planner: make-view-key: %s\n", made.error().message.c_str());
      return made ? 0 : 1;
    }
    if (!opt.view.file.empty() || opt.view.port >= 0) {
      opt.view.period_s = opt.period > 0 ? opt.period : 5;
      opt.view.reserve_wide_after_s = opt.reserve_wide_after;
      return vgpu::agent::publish_cluster_view(opt.view, signals);
    }
    if (!opt.publish.empty())
      return publish_demand(opt.publish, opt.period > 0 ? opt.period : 5, opt.reserve_wide_after, signals);
    // --verify only looks: it must not set aside a ledger it cannot read (that starts a rebuild).
    using Use = vgpu::agent::NodeRuntime::Use;
    auto rt = vgpu::agent::NodeRuntime::from_environment("vgpu-planner", opt.verify ? Use::checking : Use::acting);
    if (!rt) {
      std::fprintf(stderr, "vgpu-planner: %s\n", rt.error().message.c_str());
      return 1;
    }
    if (opt.verify) return verify((*rt)->context());
    return run_planner(**rt, opt, signals);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu-planner: unexpected: %s\n", e.what());
    return 1;
  }
}
