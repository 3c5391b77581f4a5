// Crash points: named steps of the prolog, epilog, planner, ledger store, NVML backend and viz
// start where a test can kill the process with SIGKILL, to prove every recovery path
// (tests/e2e/scenarios/crash_matrix.sh, tests/viz/crash_matrix.sh, docs/reliability.md).
//
// Armed through the environment: when $VGPU_CRASH_POINT_FILE names a file whose first line is
// this point's name (optionally "<name>@<program>", matched against the process's short name),
// the process removes that line (the file itself once it is empty) and raises SIGKILL. Lines are
// a queue, so "a\na\nb" crashes at a twice, then at b. Each hit is appended to
// "$VGPU_CRASH_POINT_FILE.hits" as "<name> <program> <pid>". Unset, a call costs one getenv.
#pragma once

#include <array>
#include <string_view>

namespace vgpu {

struct CrashPointInfo {
  std::string_view name;
  std::string_view what;  // the state the process leaves behind when it dies here
};

inline constexpr std::array kCrashPoints = {
    CrashPointInfo{"prolog.after_claim",
                   "slots claimed for the job, idle instances on them taken (one write), nothing created"},
    CrashPointInfo{"prolog.after_create", "instance exists on the GPU (created or adopted), not in the ledger"},
    CrashPointInfo{"prolog.after_record_instance",
                   "the job's instances recorded in the ledger (one write), no job record"},
    CrashPointInfo{"prolog.after_job_record", "jobs/<id>.json written, prolog not yet returned"},
    CrashPointInfo{"prolog.after_share_claim",
                   "a share taken for the job (its group on a slot or an instance), nothing created"},
    CrashPointInfo{"prolog.after_share_create", "a share's instance exists on the GPU, not in the ledger"},
    CrashPointInfo{"prolog.after_share_record_instance", "the share's instance recorded as its group's, no MPS daemon"},
    CrashPointInfo{"prolog.after_mps_open", "the instance's MPS daemon up with the share limits, no job record"},
    CrashPointInfo{"epilog.after_retire", "job's instances ownerless and in scrubbing, nothing scrubbed"},
    CrashPointInfo{"epilog.after_release", "instances scrubbed and destroyed, jobs/<id>.json still there"},
    CrashPointInfo{"release.after_scrub", "instance scrubbed, still marked scrubbing in the ledger"},
    CrashPointInfo{"release.after_destroy", "instance destroyed on the GPU, still in the ledger (destroying)"},
    CrashPointInfo{"release.after_ledger_remove",
                   "destroyed instances removed from the ledger (one write), epilog not finished"},
    CrashPointInfo{"planner.after_reconcile_destroy", "a leaked (unrecorded, unclaimed) instance destroyed"},
    CrashPointInfo{"planner.after_plan_commit", "grown plan in the ledger, advertisement not yet written"},
    CrashPointInfo{"planner.before_notify_slurmd", "advertisement.json rewritten, slurmd not yet SIGHUPed"},
    CrashPointInfo{"planner.after_shrink_published", "shrunk advertisement published, dropped slots still claimable"},
    CrashPointInfo{"planner.after_shrink_confirmed", "slurmctld took the shrunk split, dropped slots not yet freed"},
    CrashPointInfo{"planner.after_grow_commit", "dropped slots freed and new plan in the ledger, not advertised"},
    CrashPointInfo{"planner.after_prepare_create",
                   "an instance created ahead of demand in an unclaimed slot, not in the ledger"},
    CrashPointInfo{"ledger.after_temp_write", "new ledger written and fsynced to ledger.json.tmp.<pid>, not renamed"},
    CrashPointInfo{"ledger.after_rename", "new ledger renamed into place, directory not fsynced"},
    CrashPointInfo{"nvml.after_gi_create", "GPU instance created, no compute instance yet"},
    CrashPointInfo{"nvml.after_ci_create", "GPU and compute instance created, MIG uuid not yet read"},
    CrashPointInfo{"nvml.after_ci_destroy", "compute instance destroyed, GPU instance still there"},
    CrashPointInfo{"viz.after_record", "session record written, no device, no domain"},
    CrashPointInfo{"viz.after_acquire", "GPU device acquired (mdev created), domain not defined"},
    CrashPointInfo{"viz.after_define", "domain defined, not started"},
    CrashPointInfo{"viz.after_start", "domain running, no token, record without port"},
    CrashPointInfo{"viz.after_token", "noVNC token written, proxy not yet ensured, record not final"},
    CrashPointInfo{"viz.after_ood_proxy", "the session's OnDemand websockify running, record not final"},
};

constexpr bool is_crash_point(std::string_view name) {
  for (const auto& p : kCrashPoints)
    if (p.name == name) return true;
  return false;
}

// A point name checked at compile time: crash_point("no.such") does not build.
struct CrashPointName {
  consteval CrashPointName(const char* text) : name(text) {  // NOLINT(google-explicit-constructor)
    if (!is_crash_point(name)) throw "crash_point: name not listed in kCrashPoints";
  }
  std::string_view name;
};

// Dies here with SIGKILL when armed for this point (see above); otherwise returns at once.
void crash_point(CrashPointName point) noexcept;

}  // namespace vgpu
