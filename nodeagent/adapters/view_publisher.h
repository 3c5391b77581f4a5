// The one reader on the controller: `vgpu-planner --publish-view FILE` and/or `--serve-view PORT`
// asks slurmctld the cluster view's two questions once per period and hands the answer to every
// node's planner, signed where a private key is given (docs/admin.md, "The cluster view service").
#pragma once

#include <signal.h>

#include <memory>
#include <string>

#include "view_signature.h"
#include "view_transport.h"
#include "vgpu/contract/cluster_view.h"

namespace vgpu::agent {

struct ViewPublishing {
  std::string file;         // "" for none
  int port = -1;            // -1 for none; 0 a free port (tests), printed at start
  std::string private_key;  // "" to publish unsigned (a file trusted by its owner only)
  int period_s = 5;
  int reserve_wide_after_s = 600;  // wide-job bookings (wide_booking.h); 0 for none
};

// One period's answers over TCP: `whole_text` for a client that names no node, and each node's own
// view (vgpu/node/cluster_view_snapshot.h), cut and signed with `signer` (none: unsigned) the
// first time that node asks in the period.
std::shared_ptr<ViewAnswers> period_answers(const contract::ClusterView& whole, std::string whole_text,
                                            const ViewSigner* signer);

// Publishes until SIGTERM or SIGINT arrives in `signals` (blocked by the caller): 0, or 1 when it
// cannot start (a key it cannot use, a port it cannot listen on), saying why on stderr.
int publish_cluster_view(const ViewPublishing& how, const sigset_t& signals);

}  // namespace vgpu::agent
