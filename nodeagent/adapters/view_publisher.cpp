#include "view_publisher.h"

#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <optional>

#include "adapters.h"
#include "vgpu/node/cluster_view_snapshot.h"
#include "vgpu/node/wide_booking.h"

namespace vgpu::agent {
namespace {

void say(const std::string& line) { std::fprintf(stderr, "vgpu-planner: publish-view: %s\n", line.c_str()); }

Result<std::string> signed_text(const contract::ClusterView& view, const ViewSigner* signer) {
  std::string text = contract::render_cluster_view(view);
  if (signer) {
    auto signature = signer->sign(text);
    if (!signature) return std::unexpected(signature.error());
    text += contract::signature_line(*signature);
  }
  return text;
}

class PeriodAnswers final : public ViewAnswers {
 public:
  PeriodAnswers(const contract::ClusterView& whole, std::string whole_text, const ViewSigner* signer)
      : cuts_(whole), whole_(std::make_shared<const std::string>(std::move(whole_text))), signer_(signer) {}

  std::shared_ptr<const std::string> answer(const std::string& node) override {
    if (node.empty()) return whole_;
    auto& text = by_node_[node];
    if (!text) {
      auto made = signed_text(cuts_.cut(node), signer_);
      if (!made) return nullptr;  // the node reads "no view" and the whole view's signing says why
      text = std::make_shared<const std::string>(std::move(*made));
    }
    return text;
  }

 private:
  ClusterViewCuts cuts_;
  std::shared_ptr<const std::string> whole_;
  const ViewSigner* signer_;
  std::map<std::string, std::shared_ptr<const std::string>> by_node_;
};

// One period's view, signed where there is a key; an error leaves the last one to age, so the
// nodes see it go stale rather than trust a half-read cluster.
Result<std::pair<contract::ClusterView, std::string>> take_view(int period_s, const ViewSigner* signer) {
  const auto taken_at = static_cast<std::int64_t>(std::time(nullptr));
  auto jobs = squeue_view_text();
  if (!jobs) return std::unexpected(jobs.error());
  auto nodes = scontrol_nodes_text();
  if (!nodes) return std::unexpected(nodes.error());
  auto view = cluster_view_from_slurm(*jobs, *nodes, taken_at, period_s);
  if (!view) return std::unexpected(view.error());
  auto text = signed_text(*view, signer);
  if (!text) return std::unexpected(text.error());
  return std::pair{std::move(*view), std::move(*text)};
}

}  // namespace

std::shared_ptr<ViewAnswers> period_answers(const contract::ClusterView& whole, std::string whole_text,
                                            const ViewSigner* signer) {
  return std::make_shared<PeriodAnswers>(whole, std::move(whole_text), signer);
}

int publish_cluster_view(const ViewPublishing& how, const sigset_t& signals) {
  std::optional<ViewSigner> signer;
  if (!how.private_key.empty()) {
    auto key = ViewSigner::from_private_key_file(how.private_key);
    if (!key) return say(key.error().message), 1;
    signer = std::move(*key);
  }
  std::unique_ptr<ViewServer> server;
  if (how.port >= 0) {
    auto listening = ViewServer::listen(how.port);
    if (!listening) return say(listening.error().message), 1;
    server = std::move(*listening);
    say(fmt::format("serving the cluster view on port {} ({})", server->port(), signer ? "signed" : "unsigned"));
  }
  bool wide_reservations_may_exist = true;
  BookingRetries booking_retries;
  std::string last_problem;
  while (true) {
    auto taken = take_view(how.period_s, signer ? &*signer : nullptr);
    std::string problem = taken ? "" : taken.error().message;
    if (taken) {
      if (server) server->publish(period_answers(taken->first, taken->second, signer ? &*signer : nullptr));
      if (!how.file.empty())
        if (auto ok = contract::write_cluster_view_file(posix_file_system(), how.file, taken->second); !ok)
          problem = ok.error().message;
      if (how.reserve_wide_after_s > 0)
        for (const auto& line : book_wide_reservations(pending_text(taken->first), how.reserve_wide_after_s,
                                                       wide_reservations_may_exist, booking_retries))
          say(line);
    }
    // Once per distinct failure and once when it clears: the nodes' metrics say the rest.
    if (problem != last_problem)
      say(problem.empty() ? "publishing again" : problem + " (the nodes keep their plans once the view is stale)");
    last_problem = problem;
    timespec wait{how.period_s, 0};
    const int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) return 0;
  }
}

}  // namespace vgpu::agent
