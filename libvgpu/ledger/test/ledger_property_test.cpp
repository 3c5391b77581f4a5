// Property: any sequence of ledger operations keeps the ledger valid, survives serialize/parse
// after every step, and round-trips through the store (save, load, history) at the end.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <vector>

#include "sample_ledger.h"
#include "vgpu/core/gpu_layout.h"
#include "vgpu/ledger/ledger_json.h"
#include "vgpu/ledger/ledger_store.h"

namespace vgpu {
namespace {

using Step = std::tuple<int, int, int, int>;  // operation, then three small arguments

Ledger without_new_history(Ledger l) {
  l.new_history.clear();
  return l;
}

// Everything already placed on a GPU (instances and slots), as the validator sees it.
GpuLayout occupied(const Ledger& l, int gpu) {
  const GpuModel& model = *Catalog::builtin().find_model(l.find_gpu(gpu)->model);
  GpuLayout layout(model);
  for (const auto& i : l.instances)
    if (i.gpu == gpu) (void)layout.place(*model.find_profile(i.profile), i.placement);
  for (const auto& s : l.plan.slots)
    if (s.gpu == gpu) (void)layout.place(*model.find_profile(s.profile), s.placement);
  return layout;
}

struct Interpreter {
  Ledger ledger = testing::sample_ledger();
  int next_id = 1000;
  std::int64_t clock = 1'750'000'000;

  void apply(const Step& step) {
    auto [op, a, b, c] = step;
    Ledger& l = ledger;
    JobId job = static_cast<JobId>(100 + a % 5);
    ++clock;
    switch (op) {
      case 0: {  // the planner advertises one more slot
        const LedgerGpu& gpu = l.gpus[static_cast<std::size_t>(a) % l.gpus.size()];
        const GpuModel& model = *Catalog::builtin().find_model(gpu.model);
        const Profile& profile = model.profiles[static_cast<std::size_t>(b) % model.profiles.size()];
        if (auto where = occupied(l, gpu.index).best_placement(profile))
          l.plan.slots.push_back({gpu.index, profile.name, *where, std::nullopt});
        break;
      }
      case 1: {  // a prolog claims slots; a failed claim changes nothing
        if (l.plan.slots.empty()) break;
        std::string profile = l.plan.slots[static_cast<std::size_t>(b) % l.plan.slots.size()].profile;
        Ledger before = l;
        if (!claim_slots(l, job, profile, c % 3 + 1)) RC_ASSERT(l == before);
        break;
      }
      case 2: {  // a prolog turns a claimed slot into an instance
        if (l.plan.slots.empty()) break;
        PlanSlot slot = l.plan.slots[static_cast<std::size_t>(a) % l.plan.slots.size()];
        if (!slot.claimed_by_job) break;
        // A backed slot: the prolog finishes the released instance's cleanup first.
        const auto index = static_cast<std::size_t>(a) % l.plan.slots.size();
        if (auto backing = slot_backings(l)[index]) {
          const auto& gone = l.instances[*backing];
          RC_ASSERT(remove_instance(l, gone.gpu, gone.gpu_instance_id));
        }
        int id = next_id++;
        LedgerInstance inst{slot.gpu,
                            slot.profile,
                            slot.placement,
                            id,
                            0,
                            fmt::format("MIG-prop-{}", id),
                            slot.claimed_by_job,
                            fmt::format("user{}", *slot.claimed_by_job),
                            InstanceState::creating,
                            clock,
                            false};
        auto slots_before = l.plan.slots.size();
        RC_ASSERT(add_instance(l, inst));
        RC_ASSERT(l.plan.slots.size() == slots_before - 1);
        break;
      }
      case 3: retire_job(l, job, clock, b % 2 ? "completed" : "cancelled"); break;
      case 4:
        if (!l.instances.empty() && !l.instances[static_cast<std::size_t>(a) % l.instances.size()].job) {
          const auto& i = l.instances[static_cast<std::size_t>(a) % l.instances.size()];
          RC_ASSERT(remove_instance(l, i.gpu, i.gpu_instance_id));
        }
        break;
      case 5:
        l.vms.push_back({job, fmt::format("viz-{}", next_id++), fmt::format("dev-{}", b), static_cast<VmState>(b % 3)});
        break;
      case 6:
        if (!l.vms.empty()) l.vms.erase(l.vms.begin() + a % static_cast<int>(l.vms.size()));
        break;
      case 7: {  // a state change; an instance backing a slot only moves on through its cleanup
        if (l.instances.empty()) break;
        const auto index = static_cast<std::size_t>(a) % l.instances.size();
        auto& inst = l.instances[index];
        const auto state = static_cast<InstanceState>(b % 5);
        const auto backings = slot_backings(l);
        const bool backs = std::ranges::find(backings, std::optional<std::size_t>(index)) != backings.end();
        if (!backs) inst.state = state;
        else if (state == InstanceState::quarantined)
          RC_ASSERT(quarantine_instance(l, inst.gpu, inst.gpu_instance_id));
        else if (state == InstanceState::destroying)
          inst.state = state;
        break;
      }
      case 8: release_claims(l, job); break;
      default:
        l.plan.generation += static_cast<std::uint64_t>(a + 1);
        if (c % 2) l.plan.slots.clear();  // a new plan replaces the old one
        break;
    }
  }
};

RC_GTEST_PROP(LedgerProperty, RandomOperationSequencesStayValidAndRoundTrip, ()) {
  auto steps = *rc::gen::container<std::vector<Step>>(rc::gen::tuple(rc::gen::inRange(0, 10), rc::gen::inRange(0, 16),
                                                                     rc::gen::inRange(0, 16), rc::gen::inRange(0, 16)));
  Interpreter run;
  for (const auto& step : steps) {
    run.apply(step);
    auto valid = validate(run.ledger);
    RC_ASSERT(valid.has_value());
    auto parsed = parse_ledger(serialize_ledger(run.ledger));
    RC_ASSERT(parsed.has_value());
    RC_ASSERT(*parsed == without_new_history(run.ledger));
  }

  testing::ScratchDir scratch;
  LedgerStore store(scratch.ledger_dir());
  RC_ASSERT(store.replace(run.ledger).has_value());
  auto loaded = store.load();
  RC_ASSERT(loaded.has_value());
  RC_ASSERT(*loaded == without_new_history(run.ledger));
  auto history = store.history();
  RC_ASSERT(history.has_value());
  RC_ASSERT(*history == run.ledger.new_history);
}

}  // namespace
}  // namespace vgpu
