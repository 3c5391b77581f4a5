#include "trace_csv.h"

#include <gtest/gtest.h>

namespace vgpu::bench {
namespace {

constexpr const char* kLong =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";
constexpr const char* kShort = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";

std::string error_of(const std::string& text) {
  auto r = parse_trace(text, "t.csv");
  return r ? std::string("(parsed)") : r.error().message;
}

TEST(TraceCsv, ParsesTheTimedSchemaWithAndWithoutSchedule) {
  auto r = parse_trace(std::string(kLong) +
                           "p0,12000,16384,1,460,,LS,Running,10,500,12\n"
                           "p1,6000,12288,0,0,,BE,Pending,20,30,\n"
                           "p2,6000,12288,4,1000,V100M16,LS,Failed,40,90,41\n",
                       "t.csv");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->tasks.size(), 3u);
  EXPECT_TRUE(r->has_times);
  EXPECT_EQ(r->tasks[0].gpu_milli, 460);
  EXPECT_EQ(r->tasks[0].line, 2);
  EXPECT_EQ(r->tasks[0].scheduled_s, 12);
  EXPECT_EQ(r->tasks[1].scheduled_s, std::nullopt);
  EXPECT_EQ(r->tasks[2].requested_milli(), 4000);
  EXPECT_EQ(r->tasks[0].requested_milli(), 460);
}

TEST(TraceCsv, ParsesTheUntimedSchema) {
  auto r = parse_trace(std::string(kShort) + "p0,1,1,1,50\r\np1,1,1,8,1000", "t.csv");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->has_times);
  EXPECT_EQ(r->tasks.size(), 2u);
}

TEST(TraceCsv, ErrorsNameFileLineColumnAndValue) {
  EXPECT_EQ(error_of(std::string(kShort) + "p0,1,1,1,50\np1,1,1,1,4x0\n"),
            "t.csv:3: column gpu_milli: value '4x0': not an integer");
  EXPECT_EQ(error_of(std::string(kShort) + "p0,1,1,1,1001\n"),
            "t.csv:2: column gpu_milli: value '1001': out of range [0, 1000]");
  EXPECT_EQ(error_of(std::string(kShort) + "p0,1,1,-1,0\n"),
            "t.csv:2: column num_gpu: value '-1': out of range [0, 1024]");
  EXPECT_EQ(error_of(std::string(kShort) + "p0,1,1,1\n"), "t.csv:2: 4 columns, expected 5");
  EXPECT_EQ(error_of(std::string(kLong) + "p0,1,1,1,5,,LS,Running,10,5,\n"),
            "t.csv:2: column deletion_time: value '5': deletion before creation_time");
  EXPECT_EQ(error_of(std::string(kLong) + "p0,1,1,1,5,,LS,Running,10,50,60\n"),
            "t.csv:2: column scheduled_time: value '60': out of range [10, 50]");
  EXPECT_EQ(error_of(std::string(kShort) + ",1,1,1,5\n"), "t.csv:2: column name: value '': empty task name");
  EXPECT_EQ(error_of(std::string(kShort) + "p0,1,1,1,5\n\np1,1,1,1,5\n"), "t.csv:3: empty line");
}

TEST(TraceCsv, RejectsRequestsThatContradictTheirGpuCount) {
  EXPECT_EQ(error_of(std::string(kShort) + "p0,1,1,0,300\n"),
            "t.csv:2: column gpu_milli: value '300': a CPU-only task (num_gpu 0) must have "
            "gpu_milli 0");
  EXPECT_EQ(error_of(std::string(kShort) + "p0,1,1,1,0\n"),
            "t.csv:2: column gpu_milli: value '0': a one-GPU task must request gpu_milli in "
            "[1, 1000]");
  EXPECT_EQ(error_of(std::string(kShort) + "p0,1,1,2,500\n"),
            "t.csv:2: column gpu_milli: value '500': a multi-GPU task must request whole GPUs "
            "(1000)");
}

TEST(TraceCsv, RejectsAnUnknownHeaderAndListsBothSchemas) {
  std::string e = error_of("name,cpu,num_gpu\np0,1,1\n");
  EXPECT_NE(e.find("t.csv:1: header 'name,cpu,num_gpu': expected "
                   "'name,cpu_milli,memory_mib,num_gpu,gpu_milli' or"),
            std::string::npos)
      << e;
  EXPECT_EQ(error_of(""), "t.csv: empty file");
}

TEST(TraceCsv, LoadsEveryOpenbTrace) {
  auto d = load_trace(VGPU_DATA_DIR "/openb/openb_pod_list_default.csv");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->tasks.size(), 8152u);
  EXPECT_TRUE(d->has_times);
  auto m = load_trace(VGPU_DATA_DIR "/openb/openb_pod_list_multigpu20.csv");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->tasks.size(), 8324u);
  EXPECT_FALSE(m->has_times);
  auto missing = load_trace("/nonexistent/x.csv");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "/nonexistent/x.csv: cannot open");
}

}  // namespace
}  // namespace vgpu::bench
