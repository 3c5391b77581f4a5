// The node's contract files with the gres plugin (formats in gres_plugin/contract and
// docs/slurm.md): advertisement.json and jobs/<id>.json, always replaced atomically.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "vgpu/node_agent.h"

namespace vgpu {
namespace {

Result<void> write_file_atomically(const std::string& dir, const std::string& name, const std::string& text) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail(ErrorCode::io, fmt::format("mkdir {}: {}", dir, std::strerror(errno)));
  std::string tmp = fmt::format("{}/.{}.tmp.{}", dir, name, ::getpid());
  std::string path = dir + "/" + name;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(ErrorCode::io, fmt::format("open {}: {}", tmp, std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail(ErrorCode::io, fmt::format("write {}: {}", tmp, std::strerror(e)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return fail(ErrorCode::io, fmt::format("fsync {}: {}", tmp, std::strerror(errno)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail(ErrorCode::io, fmt::format("rename {} -> {}: {}", tmp, path, std::strerror(e)));
  }
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

}  // namespace

std::map<std::string, int> advertised_counts(const Ledger& ledger) {
  std::map<std::string, int> counts;
  for (const auto& inst : ledger.instances)
    if (inst.job) ++counts[inst.profile];
  for (const auto& slot : ledger.plan.slots) ++counts[slot.profile];
  return counts;
}

std::map<std::string, int> node_advertisement(const NodeContext& ctx, const Ledger& ledger) {
  auto counts = advertised_counts(ledger);
  for (const auto& [profile, n] : ctx.slurm_uncounted)
    if (auto it = counts.find(profile); it != counts.end()) it->second = std::max(0, it->second - n);
  if (ctx.policy == nullptr || ctx.viz == nullptr) return counts;
  for (const auto* part : node_partitions(*ctx.policy, ctx.node))
    for (const auto& pool : part->viz_pools) counts[pool.name] = pool.max_sessions;
  return counts;
}

std::map<std::string, int> held_by_jobs(const Ledger& ledger) {
  std::map<std::string, int> held;
  for (const auto& inst : ledger.instances)
    if (inst.job) ++held[inst.profile];
  for (const auto& slot : ledger.plan.slots)
    if (slot.claimed_by_job) ++held[slot.profile];
  return held;
}

std::map<std::string, int> uncounted_by_slurm(const Ledger& ledger, const NodeGres& slurm) {
  std::map<std::string, int> uncounted;
  for (const auto& [profile, n] : held_by_jobs(ledger)) {
    auto used = slurm.used.find(profile);
    int counted = used == slurm.used.end() ? 0 : used->second;
    if (n > counted) uncounted[profile] = n - counted;
  }
  return uncounted;
}

Result<void> write_advertisement(const NodeContext& ctx, std::uint64_t generation,
                                 const std::map<std::string, int>& counts) {
  nlohmann::json j = {{"format", "slurm-vgpu-advertisement"},
                      {"version", 1},
                      {"node", ctx.node},
                      {"generation", generation},
                      {"counts", nlohmann::json::object()}};
  for (const auto& [profile, n] : counts)
    if (n > 0) j["counts"][profile] = n;
  return within(write_file_atomically(ctx.node_dir(), "advertisement.json", j.dump(2) + "\n"),
                fmt::format("node {}: advertisement", ctx.node));
}

Result<std::map<std::string, int>> read_advertised_counts(const NodeContext& ctx) {
  std::ifstream in(ctx.node_dir() + "/advertisement.json");
  if (!in) return fail(ErrorCode::not_found, "no advertisement yet");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.contains("counts") || !j["counts"].is_object())
    return fail(ErrorCode::corrupt, fmt::format("{}/advertisement.json: unreadable", ctx.node_dir()));
  std::map<std::string, int> counts;
  for (const auto& [k, v] : j["counts"].items())
    if (v.is_number_integer()) counts[k] = v.get<int>();
  return counts;
}

Result<void> write_job_record(const NodeContext& ctx, JobId job, const std::vector<LedgerInstance>& instances) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& inst : instances)
    arr.push_back({{"profile", inst.profile}, {"mig_uuid", inst.mig_uuid}, {"gpu", inst.gpu}});
  nlohmann::json j = {{"format", "slurm-vgpu-job"}, {"version", 1}, {"job_id", job}, {"instances", arr}};
  return within(write_file_atomically(ctx.node_dir() + "/jobs", fmt::format("{}.json", job), j.dump(2) + "\n"),
                fmt::format("job {}: job record", job));
}

}  // namespace vgpu
