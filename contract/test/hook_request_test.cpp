// The hook request and its replies: what the hook writes the planner reads back unchanged, and the
// strict reader refuses anything else with the field named.
#include "vgpu/contract/hook_request.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "vgpu/contract/node_files.h"

namespace vgpu::contract {
namespace {

HookRequest a_prolog() {
  return HookRequest{
      HookKind::prolog, 42, "alice", 1000u, "infer,train", "1g.10gb:2,3g.40gb:1", "/etc/slurm-vgpu/policy.json",
      123456789};
}

std::string error_of(std::string_view line) {
  auto r = decode_hook_request(line);
  EXPECT_FALSE(r) << line;
  return r ? "" : r.error().message;
}

TEST(HookRequest, WhatTheHookWritesThePlannerReadsBack) {
  for (auto r : {a_prolog(), HookRequest{HookKind::epilog, 4294967295u, "", std::nullopt, "", "", "/p", 0}}) {
    auto line = encode_hook_request(r);
    ASSERT_TRUE(line) << line.error().message;
    EXPECT_EQ(line->back(), '\n');
    auto back = decode_hook_request(*line);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, r);
  }
}

TEST(HookRequest, AValueTheLineCannotCarryIsRefusedNotTruncated) {
  auto r = a_prolog();
  r.user = "al ice";
  auto line = encode_hook_request(r);
  ASSERT_FALSE(line);
  EXPECT_EQ(line.error().message, "hook request: user 'al ice': has a blank or control character");
  r = a_prolog();
  r.policy = "/etc/x\n";
  EXPECT_FALSE(encode_hook_request(r));
  r = a_prolog();
  r.alloc = std::string(2000, 'a');
  ASSERT_FALSE(encode_hook_request(r));
  EXPECT_EQ(encode_hook_request(r).error().message, "hook request: alloc: longer than 1024 bytes");
  r = a_prolog();
  r.job = 0;
  EXPECT_FALSE(encode_hook_request(r));
}

TEST(HookRequest, TheReaderNamesWhatIsWrong) {
  const std::string good = *encode_hook_request(a_prolog());
  EXPECT_EQ(error_of(good.substr(0, good.size() - 1)), "hook request: not one newline-terminated line");
  EXPECT_EQ(error_of("vgpu-hook/2 prolog job=1\n"), "hook request: does not start with 'vgpu-hook/1 <kind>'");
  EXPECT_EQ(error_of("vgpu-hook/1 teardown job=1\n"), "hook request: kind 'teardown': not prolog or epilog");
  EXPECT_EQ(error_of("vgpu-hook/1 prolog job=1 colour=red\n"), "hook request: unknown key 'colour'");
  EXPECT_EQ(error_of("vgpu-hook/1 prolog job=1 job=2\n"), "hook request: key 'job' given twice");
  EXPECT_EQ(error_of("vgpu-hook/1 prolog job=1 user=a\n"), "hook request: key 'uid' missing");
  EXPECT_EQ(error_of("vgpu-hook/1 prolog jobs\n"), "hook request: 'jobs': not key=value");
  const std::string rest = " user=a uid=- partition=p alloc= policy=/p since=1\n";
  EXPECT_EQ(error_of("vgpu-hook/1 prolog job=0" + rest), "hook request: job '0': not a job id");
  EXPECT_EQ(error_of("vgpu-hook/1 prolog job=x1" + rest), "hook request: job 'x1': not a job id");
  EXPECT_EQ(error_of("vgpu-hook/1 prolog job=1 user=a uid=-1 partition=p alloc= policy=/p since=1\n"),
            "hook request: uid '-1': not a uid or '-'");
  EXPECT_EQ(error_of("vgpu-hook/1 prolog job=1 user=a uid=- partition=p alloc= policy=/p since=-5\n"),
            "hook request: since '-5': not a monotonic time");
  EXPECT_EQ(error_of(good + good), "hook request: more than one line");
  EXPECT_TRUE(decode_hook_request("vgpu-hook/1 epilog job=7" + rest));
}

TEST(HookReply, EveryAnswerRoundTripsAndADeclineStaysOneLine) {
  for (auto reply : {HookReply{HookAnswer::serving, 0, ""}, HookReply{HookAnswer::done, 57, ""},
                     HookReply{HookAnswer::declined, 0, "policy changed since the planner started"}}) {
    auto back = decode_hook_reply(encode_hook_reply(reply));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->answer, reply.answer);
    EXPECT_EQ(back->output_bytes, reply.output_bytes);
    EXPECT_EQ(back->why, reply.why);
  }
  auto multi = decode_hook_reply(encode_hook_reply({HookAnswer::declined, 0, "two\nlines"}));
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->why, "two lines");
}

TEST(HookReply, TheReaderRefusesAnythingElse) {
  EXPECT_FALSE(decode_hook_reply("vgpu-hook/1 done\n"));
  EXPECT_FALSE(decode_hook_reply("vgpu-hook/1 done 99999999\n"));  // more output than the planner sends
  EXPECT_FALSE(decode_hook_reply("vgpu-hook/1 finished\n"));
  EXPECT_FALSE(decode_hook_reply("vgpu-hook/0 serving\n"));
  EXPECT_FALSE(decode_hook_reply("vgpu-hook/1 serving"));
}

TEST(HookSocket, LivesInTheNodesStateDirectory) {
  EXPECT_EQ(hook_socket_path("/var/lib/slurm-vgpu", "n1"), "/var/lib/slurm-vgpu/n1/hook.sock");
}

// slurmd's environment as the hooks see it; VGPU_POLICY unset.
EnvLookup env_of(const std::map<std::string, std::string>& vars) {
  return [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(HookEnvironment, ThePrologsRequestCarriesWhatSlurmdAndTheGresPluginSet) {
  const std::map<std::string, std::string> vars{{"SLURM_JOB_ID", "42"},
                                                {"SLURM_JOB_USER", "alice"},
                                                {"SLURM_JOB_UID", "1000"},
                                                {"SLURM_JOB_PARTITION", "infer,train"},
                                                {"VGPU_ALLOC", "1g.10gb:2,3g.40gb:1"}};
  auto request = hook_request_from_env(HookKind::prolog, env_of(vars), 123456789);
  ASSERT_TRUE(request);
  EXPECT_EQ(*request, a_prolog());
}

TEST(HookEnvironment, TheEpilogsRequestCarriesTheJobAndThePolicyOnly) {
  const std::map<std::string, std::string> vars{{"SLURM_JOB_ID", "42"},
                                                {"SLURM_JOB_USER", "alice"},
                                                {"SLURM_JOB_UID", "1000"},
                                                {"VGPU_ALLOC", "1g.10gb:2"},
                                                {"VGPU_POLICY", "/tmp/p.json"}};
  auto request = hook_request_from_env(HookKind::epilog, env_of(vars), 7);
  ASSERT_TRUE(request);
  EXPECT_EQ(*request, (HookRequest{HookKind::epilog, 42, "", std::nullopt, "", "", "/tmp/p.json", 7}));
}

TEST(HookEnvironment, NoJobIdNoRequestAndABadUidIsNoUid) {
  EXPECT_FALSE(hook_request_from_env(HookKind::prolog, env_of({}), 0));
  EXPECT_FALSE(hook_request_from_env(HookKind::epilog, env_of({{"SLURM_JOB_ID", "042"}}), 0));
  const std::map<std::string, std::string> vars{{"SLURM_JOB_ID", "42"}, {"SLURM_JOB_UID", "-1"}};
  auto request = hook_request_from_env(HookKind::prolog, env_of(vars), 0);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->uid, std::nullopt);
}

TEST(HookEnvironment, JobIdsAndUidsAreWholeDecimals) {
  EXPECT_EQ(parse_job_id("42"), JobId{42});
  EXPECT_EQ(parse_job_id("0"), std::nullopt);
  EXPECT_EQ(parse_job_id(" 42"), std::nullopt);
  EXPECT_EQ(parse_job_uid("0"), 0u);
  EXPECT_EQ(parse_job_uid("4294967295"), 4294967295u);
  EXPECT_EQ(parse_job_uid("4294967296"), std::nullopt);
  EXPECT_EQ(parse_job_uid(""), std::nullopt);
}

}  // namespace
}  // namespace vgpu::contract
