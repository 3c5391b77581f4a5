// The hook request and its replies (vgpu/contract/hook_request.h): one writer and one strict reader
// for each, shared by the hooks (client) and the planner (server).
#include "vgpu/contract/hook_request.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

#include "vgpu/contract/node_files.h"

namespace vgpu::contract {
namespace {

constexpr std::size_t kValueMax = 1024;

bool is_token(std::string_view v) {
  for (unsigned char c : v)
    if (c <= ' ' || c == 0x7f) return false;
  return true;
}

Result<void> check_value(std::string_view key, std::string_view value) {
  if (value.size() > kValueMax)
    return fail(ErrorCode::invalid_argument,
                "hook request: " + std::string(key) + ": longer than " + std::to_string(kValueMax) + " bytes");
  if (!is_token(value))
    return fail(ErrorCode::invalid_argument, "hook request: " + std::string(key) + " '" + std::string(value) +
                                                 "': has a blank or control character");
  return {};
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    const std::size_t end = line.find(' ', i);
    out.push_back(line.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  return out;
}

// The line without its one trailing newline; corrupt when there is none or another inside.
Result<std::string_view> one_line(std::string_view what, std::string_view text) {
  if (text.empty() || text.back() != '\n')
    return fail(ErrorCode::corrupt, std::string(what) + ": not one newline-terminated line");
  text.remove_suffix(1);
  if (text.find('\n') != std::string_view::npos)
    return fail(ErrorCode::corrupt, std::string(what) + ": more than one line");
  return text;
}

template <class Int>
std::optional<Int> whole_number(std::string_view v) {
  Int n{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || p != v.data() + v.size()) return std::nullopt;
  return n;
}

}  // namespace

std::string_view hook_kind_name(HookKind kind) { return kind == HookKind::prolog ? "prolog" : "epilog"; }

Result<std::string> encode_hook_request(const HookRequest& r) {
  const std::string uid = r.uid ? std::to_string(*r.uid) : "-";
  const std::pair<std::string_view, std::string_view> fields[] = {
      {"user", r.user}, {"partition", r.partition}, {"alloc", r.alloc}, {"policy", r.policy}};
  for (const auto& [key, value] : fields)
    if (auto ok = check_value(key, value); !ok) return std::unexpected(ok.error());
  if (r.job == 0) return fail(ErrorCode::invalid_argument, "hook request: job: 0 is not a job id");
  std::string line(kHookProtocol);
  line += " ";
  line += hook_kind_name(r.kind);
  line += " job=" + std::to_string(r.job) + " user=" + r.user + " uid=" + uid + " partition=" + r.partition +
          " alloc=" + r.alloc + " policy=" + r.policy + " since=" + std::to_string(r.since_ns) + "\n";
  if (line.size() > kHookRequestMax)
    return fail(ErrorCode::invalid_argument, "hook request: " + std::to_string(line.size()) + " bytes, more than " +
                                                 std::to_string(kHookRequestMax));
  return line;
}

Result<HookRequest> decode_hook_request(std::string_view text) {
  auto line = one_line("hook request", text);
  if (!line) return std::unexpected(line.error());
  auto w = words(*line);
  if (w.size() < 2 || w[0] != kHookProtocol)
    return fail(ErrorCode::corrupt, "hook request: does not start with '" + std::string(kHookProtocol) + " <kind>'");
  HookRequest r;
  if (w[1] == "prolog") r.kind = HookKind::prolog;
  else if (w[1] == "epilog")
    r.kind = HookKind::epilog;
  else
    return fail(ErrorCode::corrupt, "hook request: kind '" + std::string(w[1]) + "': not prolog or epilog");
  static constexpr std::string_view kKeys[] = {"job", "user", "uid", "partition", "alloc", "policy", "since"};
  std::map<std::string_view, std::string_view> seen;
  for (std::size_t i = 2; i < w.size(); ++i) {
    const auto eq = w[i].find('=');
    const std::string_view key = w[i].substr(0, eq);
    if (eq == std::string_view::npos)
      return fail(ErrorCode::corrupt, "hook request: '" + std::string(w[i]) + "': not key=value");
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
      return fail(ErrorCode::corrupt, "hook request: unknown key '" + std::string(key) + "'");
    if (!seen.emplace(key, w[i].substr(eq + 1)).second)
      return fail(ErrorCode::corrupt, "hook request: key '" + std::string(key) + "' given twice");
  }
  for (auto key : kKeys)
    if (!seen.count(key)) return fail(ErrorCode::corrupt, "hook request: key '" + std::string(key) + "' missing");
  const std::string job_text(seen["job"]);
  auto job = parse_job_id(job_text.c_str());
  if (!job) return fail(ErrorCode::corrupt, "hook request: job '" + job_text + "': not a job id");
  r.job = *job;
  if (seen["uid"] != "-") {
    auto uid = whole_number<unsigned>(seen["uid"]);
    if (!uid) return fail(ErrorCode::corrupt, "hook request: uid '" + std::string(seen["uid"]) + "': not a uid or '-'");
    r.uid = *uid;
  }
  auto since = whole_number<std::int64_t>(seen["since"]);
  if (!since || *since < 0)
    return fail(ErrorCode::corrupt, "hook request: since '" + std::string(seen["since"]) + "': not a monotonic time");
  r.since_ns = *since;
  r.user = seen["user"];
  r.partition = seen["partition"];
  r.alloc = seen["alloc"];
  r.policy = seen["policy"];
  return r;
}

std::string encode_hook_reply(const HookReply& reply) {
  std::string line(kHookProtocol);
  switch (reply.answer) {
    case HookAnswer::serving: line += " serving"; break;
    case HookAnswer::done: line += " done " + std::to_string(reply.output_bytes); break;
    case HookAnswer::declined: {
      std::string why = reply.why;
      for (char& c : why)
        if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) c = ' ';  // one line, whatever the reason says
      line += " declined " + why;
      break;
    }
  }
  return line + "\n";
}

Result<HookReply> decode_hook_reply(std::string_view text) {
  auto line = one_line("hook reply", text);
  if (!line) return std::unexpected(line.error());
  const std::string prefix = std::string(kHookProtocol) + " ";
  if (line->substr(0, prefix.size()) != prefix)
    return fail(ErrorCode::corrupt, "hook reply: does not start with '" + std::string(kHookProtocol) + "'");
  std::string_view rest = line->substr(prefix.size());
  HookReply reply;
  if (rest == "serving") return reply;
  if (rest.substr(0, 5) == "done ") {
    auto n = whole_number<std::size_t>(rest.substr(5));
    if (!n || *n > kHookOutputMax)
      return fail(ErrorCode::corrupt, "hook reply: done '" + std::string(rest.substr(5)) +
                                          "': not a byte count up to " + std::to_string(kHookOutputMax));
    reply.answer = HookAnswer::done;
    reply.output_bytes = *n;
    return reply;
  }
  if (rest.substr(0, 9) == "declined ") {
    reply.answer = HookAnswer::declined;
    reply.why = rest.substr(9);
    return reply;
  }
  return fail(ErrorCode::corrupt,
              "hook reply: '" + std::string(rest.substr(0, 40)) + "': not serving, done or declined");
}

std::optional<unsigned> parse_job_uid(std::string_view text) {
  unsigned uid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), uid);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return uid;
}

std::optional<HookRequest> hook_request_from_env(HookKind kind, const EnvLookup& env, std::int64_t since_ns) {
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? v : "";
  };
  const auto job = parse_job_id(env("SLURM_JOB_ID"));
  if (!job) return std::nullopt;
  HookRequest request;
  request.kind = kind;
  request.job = *job;
  request.policy = resolve_policy_path(env("VGPU_POLICY"));
  request.since_ns = since_ns;
  if (kind == HookKind::prolog) {
    request.user = get("SLURM_JOB_USER");
    request.uid = parse_job_uid(get("SLURM_JOB_UID"));
    request.partition = get("SLURM_JOB_PARTITION");
    request.alloc = get("VGPU_ALLOC");
  }
  return request;
}

std::string hook_socket_path(std::string_view state_dir, std::string_view node) {
  return std::string(state_dir) + "/" + std::string(node) + "/hook.sock";
}

}  // namespace vgpu::contract
