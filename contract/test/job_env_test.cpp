#include "vgpu/contract/job_env.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace vgpu::contract {
namespace {

// The titles slurmstepd gives itself (_set_job_log_prefix, Slurm 22.05 to 26.05) name the job.
TEST(JobOfStepdTitle, ReadsTheJobOfEveryKindOfStep) {
  EXPECT_EQ(job_of_stepd_title("slurmstepd: [1234.0]"), 1234U);
  EXPECT_EQ(job_of_stepd_title("slurmstepd: [1234.batch]"), 1234U);
  EXPECT_EQ(job_of_stepd_title("slurmstepd: [1234.extern]"), 1234U);
  EXPECT_EQ(job_of_stepd_title("slurmstepd: [1234.interactive]"), 1234U);
  EXPECT_EQ(job_of_stepd_title("slurmstepd: [77+1.0]"), 77U);
  EXPECT_EQ(job_of_stepd_title("slurmstepd: [77.3 stepmgr]"), 77U);
  EXPECT_EQ(job_of_stepd_title("slurmstepd: [4294967295.0]"), 4294967295U);
}

// Anything that is not slurmstepd's title for a job gives no job: the caller then hides the GPUs.
TEST(JobOfStepdTitle, RefusesEverythingElse) {
  for (const char* title : {"",
                            "slurmstepd",
                            "slurmstepd: [",
                            "slurmstepd: []",
                            "slurmstepd: [.0]",
                            "slurmstepd: [1234]",
                            "slurmstepd: [1234.",
                            "slurmstepd: [1234.0",
                            "slurmstepd: [0.0]",
                            "slurmstepd: [0123.0]",
                            "slurmstepd: [-1.0]",
                            "slurmstepd: [4294967296.0]",
                            "slurmstepd: [12x.0]",
                            "slurmstepd: [ 12.0]",
                            "slurmd: [1234.0]",
                            "/usr/sbin/slurmstepd",
                            "bash",
                            "slurmstepd:[1234.0]",
                            "xslurmstepd: [1234.0]",
                            "slurmstepd: [1234.]"}) {
    EXPECT_EQ(job_of_stepd_title(title), std::nullopt) << "'" << title << "'";
  }
}

}  // namespace
}  // namespace vgpu::contract
