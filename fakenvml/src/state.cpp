#include "state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

namespace fakenvml {
namespace {

using nlohmann::json;

json activity_json(const Activity& a) {
  return {{"sm_pct", a.sm_pct},     {"dram_pct", a.dram_pct},   {"memory_used_mib", a.memory_used_mib},
          {"since_ns", a.since_ns}, {"sm_pct_ns", a.sm_pct_ns}, {"dram_pct_ns", a.dram_pct_ns}};
}

Activity activity_from(const json& j) {
  return {j.at("sm_pct").get<double>(),
          j.at("dram_pct").get<double>(),
          j.at("memory_used_mib").get<std::uint64_t>(),
          j.at("since_ns").get<std::int64_t>(),
          j.at("sm_pct_ns").get<double>(),
          j.at("dram_pct_ns").get<double>()};
}

json to_json(const State& s) {
  json gpus = json::object();
  for (const auto& [uuid, gis] : s.gpus) {
    json arr = json::array();
    for (const auto& gi : gis) {
      json cis = json::array();
      for (const auto& ci : gi.cis)
        cis.push_back({{"id", ci.id},
                       {"profile_id", ci.profile_id},
                       {"start", ci.start},
                       {"size", ci.size},
                       {"serial", ci.serial}});
      arr.push_back({{"id", gi.id},
                     {"profile_id", gi.profile_id},
                     {"placement", {{"start", gi.placement.start}, {"size", gi.placement.size}}},
                     {"serial", gi.serial},
                     {"compute_instances", cis},
                     {"activity", activity_json(gi.activity)}});
    }
    gpus[uuid] = arr;
  }
  json whole = json::object();
  for (const auto& [uuid, a] : s.whole_gpus) whole[uuid] = activity_json(a);
  json modes = json::object();
  for (const auto& [uuid, m] : s.mig_modes) modes[uuid] = {{"current", m.current}, {"pending", m.pending}};
  return {{"format", "vgpu-fake-nvml-state"},
          {"version", 3},
          {"next_serial", s.next_serial},
          {"gpus", gpus},
          {"whole_gpus", whole},
          {"mig_modes", modes}};
}

State from_json(const json& j) {
  // Version 1 predates the activity records: its instances and GPUs are idle. Version 2 predates
  // MIG-mode changes: every GPU is in its fixture's mode.
  int version = j.at("version").get<int>();
  if (j.at("format").get<std::string>() != "vgpu-fake-nvml-state" || version < 1 || version > 3)
    throw std::runtime_error("not a version 1 to 3 vgpu-fake-nvml-state file");
  State s;
  s.next_serial = j.at("next_serial").get<std::uint64_t>();
  for (const auto& [uuid, arr] : j.at("gpus").items()) {
    auto& gis = s.gpus[uuid];
    for (const auto& g : arr) {
      GiState gi;
      gi.id = g.at("id").get<unsigned>();
      gi.profile_id = g.at("profile_id").get<unsigned>();
      gi.placement.start = g.at("placement").at("start").get<unsigned>();
      gi.placement.size = g.at("placement").at("size").get<unsigned>();
      gi.serial = g.at("serial").get<std::uint64_t>();
      for (const auto& c : g.at("compute_instances"))
        gi.cis.push_back({c.at("id").get<unsigned>(), c.at("profile_id").get<unsigned>(), c.at("start").get<unsigned>(),
                          c.at("size").get<unsigned>(), c.at("serial").get<std::uint64_t>()});
      if (version >= 2) gi.activity = activity_from(g.at("activity"));
      gis.push_back(std::move(gi));
    }
  }
  if (version >= 2)
    for (const auto& [uuid, a] : j.at("whole_gpus").items()) s.whole_gpus[uuid] = activity_from(a);
  if (version >= 3)
    for (const auto& [uuid, m] : j.at("mig_modes").items())
      s.mig_modes[uuid] = {m.at("current").get<unsigned>(), m.at("pending").get<unsigned>()};
  return s;
}

// Closes the descriptor (and so drops the flock) on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string state_to_text(const State& state) { return to_json(state).dump(2) + "\n"; }

nvmlReturn_t StateStore::with(bool write, const std::function<nvmlReturn_t(State&)>& fn) {
  if (path_.empty()) return fn(memory_);
  Fd f;
  // A reader opens read-only: a job's process (another user) may look at what the driver holds.
  f.fd =
      write ? ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644) : ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0 && !write && errno == ENOENT) {
    State empty;
    return fn(empty);
  }
  if (f.fd < 0) {
    std::fprintf(stderr, "fake-nvml: state %s: open: %s\n", path_.c_str(), std::strerror(errno));
    return NVML_ERROR_UNKNOWN;
  }
  while (::flock(f.fd, write ? LOCK_EX : LOCK_SH) != 0)
    if (errno != EINTR) return NVML_ERROR_UNKNOWN;
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return NVML_ERROR_UNKNOWN;
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  State state;
  if (!text.empty() && text == cached_text_) {
    state = cached_state_;
  } else if (!text.empty()) {
    try {
      state = from_json(json::parse(text));
      cached_text_ = text;
      cached_state_ = state;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fake-nvml: state %s: corrupt: %s\n", path_.c_str(), e.what());
      return NVML_ERROR_UNKNOWN;
    }
  }
  nvmlReturn_t rc = fn(state);
  if (!write || rc != NVML_SUCCESS) return rc;
  std::string out = state_to_text(state);
  // Rewritten in place under the exclusive lock: readers take the shared lock, so none sees a
  // half-written file. Overwritten, then cut to length: truncating to zero first made ext4 free
  // and allocate the blocks again on every change.
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pwrite(f.fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return NVML_ERROR_UNKNOWN;
    done += static_cast<std::size_t>(n);
  }
  if (::ftruncate(f.fd, static_cast<off_t>(out.size())) != 0) return NVML_ERROR_UNKNOWN;
  cached_text_ = std::move(out);
  cached_state_ = std::move(state);
  return rc;
}

}  // namespace fakenvml
