#include "vgpu/contract/job_env.h"
#include "vgpu/contract/job_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vgpu::contract;
using ::testing::HasSubstr;

namespace {
const char* kTwoInstances = R"({"format":"slurm-vgpu-job","version":1,"job_id":42,"instances":[
  {"profile":"1g.10gb","mig_uuid":"MIG-4b1e3a6c-0000-5a1b-9d0e-111111111111","gpu":0},
  {"profile":"1g.10gb","mig_uuid":"MIG-4b1e3a6c-0000-5a1b-9d0e-222222222222","gpu":1}]})";

std::string error_of(std::string_view text, vgpu::JobId job = 42) {
  auto rec = parse_job_record(text, job);
  EXPECT_FALSE(rec.has_value()) << text;
  return rec ? "" : rec.error().message;
}

std::string with_instances(std::string instances) {
  return R"({"format":"slurm-vgpu-job","version":1,"job_id":42,"instances":)" + instances + "}";
}
}  // namespace

TEST(JobRecord, ParsesInstancesInOrder) {
  auto rec = parse_job_record(kTwoInstances, 42);
  ASSERT_TRUE(rec) << rec.error().message;
  ASSERT_EQ(rec->instances.size(), 2U);
  EXPECT_EQ(rec->instances[1].mig_uuid, "MIG-4b1e3a6c-0000-5a1b-9d0e-222222222222");
  EXPECT_EQ(rec->instances[1].gpu, 1U);
}

TEST(JobRecord, EnvironmentListsExactlyTheJobsInstances) {
  auto rec = parse_job_record(kTwoInstances, 42);
  ASSERT_TRUE(rec);
  auto env = job_environment(*rec);
  ASSERT_EQ(env.size(), 4U);
  EXPECT_EQ(env[0].name, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(env[0].value, "MIG-4b1e3a6c-0000-5a1b-9d0e-111111111111,MIG-4b1e3a6c-0000-5a1b-9d0e-222222222222");
  EXPECT_EQ(env[1].name, "VGPU_PROFILES");
  EXPECT_EQ(env[1].value, "1g.10gb,1g.10gb");
  EXPECT_EQ(env[2].name, "VGPU_INSTANCES");
  EXPECT_EQ(env[2].value, "2");
  EXPECT_EQ(env[3].name, "VGPU_PLACEMENT");
  EXPECT_EQ(env[3].value, "0,1") << "a version 1 record knows the GPUs only";
}

const char* kPlaced = R"({"format":"slurm-vgpu-job","version":2,"job_id":42,"instances":[
  {"profile":"3g.40gb","mig_uuid":"MIG-4b1e3a6c-0000-5a1b-9d0e-111111111111","gpu":1,"placement":{"start":4,"size":4}},
  {"profile":"1g.10gb","mig_uuid":"MIG-4b1e3a6c-0000-5a1b-9d0e-222222222222","gpu":0,"placement":{"start":6,"size":1}}]})";

TEST(JobRecord, VersionTwoCarriesEachInstancesPlacementIntoTheEnvironment) {
  auto rec = parse_job_record(kPlaced, 42);
  ASSERT_TRUE(rec) << rec.error().message;
  ASSERT_TRUE(rec->instances[0].placement);
  EXPECT_EQ(*rec->instances[0].placement, (SlicePlacement{4, 4}));
  auto env = job_environment(*rec);
  ASSERT_EQ(env.size(), 4U);
  EXPECT_EQ(env[3].name, "VGPU_PLACEMENT");
  EXPECT_EQ(env[3].value, "1:4-7,0:6-6");
  EXPECT_EQ(hidden_environment()[3].name, "VGPU_PLACEMENT");
  EXPECT_EQ(hidden_environment()[3].value, "");
}

TEST(JobRecord, VersionTwoNeedsAPlacementThatIsARangeOfSlices) {
  auto v2 = [](std::string inst) {
    return R"({"format":"slurm-vgpu-job","version":2,"job_id":42,"instances":[)" + inst + "]}";
  };
  EXPECT_THAT(error_of(v2(R"({"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":0})")),
              HasSubstr("instances[0].placement: required field missing"));
  EXPECT_THAT(error_of(v2(R"({"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":0,"placement":{"start":0,"size":0}})")),
              HasSubstr("instances[0]: placement {0,0} is not a range of memory slices"));
  EXPECT_THAT(error_of(v2(R"({"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":0,"placement":{"start":63,"size":2}})")),
              HasSubstr("placement {63,2} is not a range"));
  EXPECT_THAT(error_of(v2(R"({"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":0,"placement":{"start":0}})")),
              HasSubstr("placement.size: required field missing"));
  EXPECT_THAT(
      error_of(v2(R"({"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":0,"placement":{"start":0,"size":1,"end":1}})")),
      HasSubstr("placement"));
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job","version":5,"job_id":42,"instances":[],"mps_pipe_directory":""})"),
              HasSubstr("unsupported version 5"));
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job","version":1,"job_id":42,"instances":[
    {"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":0,"placement":{"start":0,"size":1}}]})"),
              HasSubstr("placement"))
      << "version 1 had no placement";
}

const char* kAmdPartitions = R"({"format":"slurm-vgpu-job","version":3,"job_id":42,"instances":[
  {"profile":"cpx.24gb","device_uuid":"GPU-123456789abcdef0","gpu":0,"placement":{"start":5,"size":1},
   "model":"MI300X-192GB","memory_mib":24576,"compute":"1/8"},
  {"profile":"cpx.24gb","device_uuid":"GPU-163456789abcdef0","gpu":0,"placement":{"start":1,"size":1},
   "model":"MI300X-192GB","memory_mib":24576,"compute":"1/8"}]})";

TEST(JobRecord, AmdPartitionsGoToRocrAndHipNumbersThemFromZero) {
  auto rec = parse_job_record(kAmdPartitions, 42);
  ASSERT_TRUE(rec) << rec.error().message;
  auto env = job_environment(*rec);
  ASSERT_EQ(env.size(), 9U);
  EXPECT_EQ(env[0].name, "ROCR_VISIBLE_DEVICES");
  EXPECT_EQ(env[0].value, "GPU-123456789abcdef0,GPU-163456789abcdef0");
  EXPECT_EQ(env[1].value, "cpx.24gb,cpx.24gb");
  EXPECT_EQ(env[3].value, "0:5-5,0:1-1");
  // What the job got.
  EXPECT_EQ(env[4].name, "VGPU_MODEL");
  EXPECT_EQ(env[4].value, "MI300X-192GB");
  EXPECT_EQ(env[5].name, "VGPU_MEMORY_MIB");
  EXPECT_EQ(env[5].value, "24576,24576");
  EXPECT_EQ(env[6].name, "VGPU_COMPUTE");
  EXPECT_EQ(env[6].value, "1/8,1/8");
  EXPECT_EQ(env[7].name, "HIP_VISIBLE_DEVICES");
  EXPECT_EQ(env[7].value, "0,1");
  EXPECT_EQ(env[8].name, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(env[8].value, "0,1");
  EXPECT_THAT(render_job_record(*rec), HasSubstr("\"version\": 4")) << "read as 3, written as the current version";
  EXPECT_THAT(render_job_record(*rec), HasSubstr("\"device_uuid\": \"GPU-123456789abcdef0\""));
  EXPECT_EQ(*parse_job_record(render_job_record(*rec), 42), *rec);
}

// A whole GPU (MIG mode off) reaches its job by the GPU's own UUID, as CUDA takes it.
TEST(JobRecord, AWholeNvidiaGpuGoesToCudaByItsUuid) {
  const char* whole = R"({"format":"slurm-vgpu-job","version":3,"job_id":42,"instances":[
    {"profile":"whole.80gb","device_uuid":"GPU-e7a8e8d6-6d1b-4f2b-9c3a-0a1b2c3d4e5f","gpu":1,
     "placement":{"start":0,"size":8},"model":"H100-80GB","memory_mib":81559,"compute":"7/7"}]})";
  auto rec = parse_job_record(whole, 42);
  ASSERT_TRUE(rec) << rec.error().message;
  auto env = job_environment(*rec);
  EXPECT_EQ(env[0].name, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(env[0].value, "GPU-e7a8e8d6-6d1b-4f2b-9c3a-0a1b2c3d4e5f");
  EXPECT_EQ(*parse_job_record(render_job_record(*rec), 42), *rec);
}

TEST(NvidiaGpuUuid, IsNvmlsShapeOnly) {
  EXPECT_TRUE(is_nvidia_gpu_uuid("GPU-e7a8e8d6-6d1b-4f2b-9c3a-0a1b2c3d4e5f"));
  EXPECT_FALSE(is_nvidia_gpu_uuid("GPU-123456789abcdef0")) << "an AMD partition's";
  EXPECT_FALSE(is_nvidia_gpu_uuid("GPU-E7A8E8D6-6D1B-4F2B-9C3A-0A1B2C3D4E5F")) << "NVML writes lower case";
  EXPECT_FALSE(is_nvidia_gpu_uuid("GPU-e7a8e8d6-6d1b-4f2b-9c3a-0a1b2c3d4e5f,GPU-1"));
  EXPECT_FALSE(is_nvidia_gpu_uuid("MIG-e7a8e8d6-6d1b-4f2b-9c3a-0a1b2c3d4e5f"));
}

TEST(JobRecord, VersionThreeRefusesOtherUuidsAndMixedVendors) {
  auto v3 = [](std::string insts) {
    return R"({"format":"slurm-vgpu-job","version":3,"job_id":42,"instances":[)" + insts + "]}";
  };
  const std::string got = R"("model":"MI300X-192GB","memory_mib":24576,"compute":"1/8")";
  const std::string amd =
      R"({"profile":"cpx.24gb","device_uuid":"GPU-123456789abcdef0","gpu":0,"placement":{"start":0,"size":1},)" + got +
      "}";
  const std::string mig =
      R"({"profile":"1g.10gb","device_uuid":"MIG-a","gpu":1,"placement":{"start":0,"size":1},)" + got + "}";
  EXPECT_THAT(
      error_of(v3(R"({"profile":"cpx.24gb","device_uuid":"GPU-1,GPU-2","gpu":0,"placement":{"start":0,"size":1},)" +
                  got + "}")),
      HasSubstr("neither a MIG UUID, a whole NVIDIA GPU's GPU-<8-4-4-4-12 hex digits> nor an AMD partition's"));
  EXPECT_THAT(error_of(v3(amd + "," + mig)), HasSubstr("instances[1]: mixes MIG instances and AMD partitions"));
  EXPECT_THAT(
      error_of(
          v3(R"({"profile":"cpx.24gb","mig_uuid":"GPU-123456789abcdef0","gpu":0,"placement":{"start":0,"size":1},)" +
             got + "}")),
      HasSubstr("device_uuid"));
  for (const char* bad : {"0/8", "9/8", "1/8x", "01/8", "1/65", "one"}) {
    std::string inst = amd;
    inst.replace(inst.find("1/8"), 3, bad);
    EXPECT_THAT(error_of(v3(inst)), HasSubstr("is not <slices>/<of the GPU's>")) << bad;
  }
  EXPECT_THAT(
      error_of(v3(
          R"({"profile":"cpx.24gb","device_uuid":"GPU-123456789abcdef0","gpu":0,"placement":{"start":0,"size":1}})")),
      HasSubstr("model"))
      << "version 3 says what the job got";
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job","version":2,"job_id":42,"instances":[
    {"profile":"cpx.24gb","mig_uuid":"GPU-123456789abcdef0","gpu":0,"placement":{"start":0,"size":1}}]})"),
              HasSubstr("is not a MIG UUID"))
      << "version 2 has MIG instances only";
}

TEST(JobRecord, HiddenEnvironmentExposesNoDevice) {
  auto env = hidden_environment();
  ASSERT_FALSE(env.empty());
  EXPECT_EQ(env[0].name, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(env[0].value, "");
  EXPECT_EQ(env.back().name, "ROCR_VISIBLE_DEVICES");
  EXPECT_EQ(env.back().value, "");
}

TEST(JobRecord, RefusesRecordOfAnotherJob) {
  EXPECT_THAT(error_of(kTwoInstances, 43), HasSubstr("'job_id' is 42, expected 43"));
}

TEST(JobRecord, RefusesBadInstancesWithTheirIndex) {
  EXPECT_THAT(error_of(with_instances(R"([{"profile":"1g.10gb","mig_uuid":"GPU-123","gpu":0}])")),
              HasSubstr("instances[0]: mig_uuid 'GPU-123' is not a MIG UUID"));
  EXPECT_THAT(error_of(with_instances(R"([{"profile":"1g.10gb","mig_uuid":"MIG-a,b","gpu":0}])")),
              HasSubstr("not a MIG UUID"));
  EXPECT_THAT(error_of(with_instances(R"([{"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":0},
    {"profile":"bad profile","mig_uuid":"MIG-b","gpu":0}])")),
              HasSubstr("instances[1]: profile 'bad profile'"));
  EXPECT_THAT(error_of(with_instances(R"([{"profile":"1g.10gb","mig_uuid":"MIG-a"}])")),
              HasSubstr("instances[0].gpu: required field missing"));
  EXPECT_THAT(error_of(with_instances(R"([{"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":-2}])")),
              HasSubstr("'gpu' must be a non-negative integer"));
  EXPECT_THAT(error_of(with_instances(R"([{"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":0},
    {"profile":"1g.10gb","mig_uuid":"MIG-a","gpu":1}])")),
              HasSubstr("listed twice"));
  EXPECT_THAT(error_of(with_instances(R"({})")), HasSubstr("'instances' must be an array"));
}

TEST(JobRecord, RefusesCorruptHeader) {
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job","version":1,"job_id":"42","instances":[]})"),
              HasSubstr("'job_id' must be a non-negative integer"));
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job","version":1,"job_id":42})"),
              HasSubstr("instances: required field missing"));
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job"})"), HasSubstr("required field missing"));
  EXPECT_THAT(error_of("{\"format\":\"slurm-vgpu-job\",\"version\":1,\"job_id\":42,\"instances\":[]"),
              HasSubstr("not valid JSON"));
}

TEST(JobRecord, AShareJobFindsItsMpsDaemonThroughThePipeDirectory) {
  auto v4 = [](std::string dir) {
    return R"({"format":"slurm-vgpu-job","version":4,"job_id":42,"instances":[
      {"profile":"quarter","device_uuid":"MIG-a","gpu":0,"placement":{"start":0,"size":4},
       "model":"H100-80GB","memory_mib":20224,"compute":"3/7"}],"mps_pipe_directory":)" +
           dir + "}";
  };
  auto rec = parse_job_record(v4(R"("/run/slurm-vgpu/mps/MIG-a/pipe")"), 42);
  ASSERT_TRUE(rec) << rec.error().message;
  auto env = job_environment(*rec);
  auto mps = std::ranges::find(env, std::string("CUDA_MPS_PIPE_DIRECTORY"), &EnvVar::name);
  ASSERT_NE(mps, env.end());
  EXPECT_EQ(mps->value, "/run/slurm-vgpu/mps/MIG-a/pipe");
  EXPECT_EQ(env[0].value, "MIG-a") << "and the instance itself, as for a whole one";
  // Any other job's environment does not name one.
  auto whole = parse_job_record(v4(R"("")"), 42);
  ASSERT_TRUE(whole) << whole.error().message;
  for (const auto& e : job_environment(*whole)) EXPECT_NE(e.name, "CUDA_MPS_PIPE_DIRECTORY");
  EXPECT_THAT(error_of(v4(R"("run/mps")")), HasSubstr("field 'mps_pipe_directory' 'run/mps' is not an absolute path"));
  EXPECT_THAT(error_of(v4(R"("/run/a\nb")")), HasSubstr("is not an absolute path of printable characters"));
  EXPECT_THAT(error_of(v4("7")), HasSubstr("field 'mps_pipe_directory' must be a string"));
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job","version":4,"job_id":42,"instances":[]})"),
              HasSubstr("mps_pipe_directory"))
      << "version 4 always says it";
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job","version":3,"job_id":42,"instances":[],"mps_pipe_directory":""})"),
              HasSubstr("mps_pipe_directory"))
      << "version 3 never had it";
}
