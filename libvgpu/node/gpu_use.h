// How much of each GPU jobs hold, from the ledger alone: the one reading behind the node features
// (node_features.h) and the free-capacity node weight (node_weight.h). Private to libvgpu/node.
#pragma once

#include <vector>

#include "vgpu/core/catalog.h"
#include "vgpu/ledger/ledger.h"

namespace vgpu::node {

struct GpuUse {
  int index = 0;            // LedgerGpu::index
  int compute_slices = 0;   // the model's; 0 for a model the catalog does not know
  int held_slices = 0;      // taken by held places (a held share group counts its whole instance)
  bool held = false;        // any place held at all
  double share_room = 0.0;  // free shares of held share groups, as a fraction of the whole GPU
};

// Per GPU of the ledger, in its order. A place is held where it has a job's instance, a share
// group with a holder, or a slot claimed for a job; one place counts once (a claimed slot and the
// instance made for it). Profiles are looked up in `base` plus the ledger's own classes; a place
// whose profile neither knows counts one slice (held, size unknown: the ledger's own validation
// reports it).
std::vector<GpuUse> gpu_use(const Ledger& ledger, const Catalog& base);

// Free capacity of the node, in GPUs: each GPU's slices no held place takes, plus the free shares
// of its held share groups (a GPU with 3 of 7 slices held is 4/7 free).
double free_gpus(const std::vector<GpuUse>& use);

}  // namespace vgpu::node
