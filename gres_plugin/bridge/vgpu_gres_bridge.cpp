// The only place C++ meets the C ABI layer: every entry point catches everything, because an
// exception escaping into slurmd/slurmctld/slurmstepd would abort the daemon.
#include "vgpu_gres_bridge.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "vgpu/contract/advertisement.h"
#include "vgpu/contract/atomic_file.h"
#include "vgpu/contract/alloc_codec.h"
#include "vgpu/contract/job_env.h"
#include "vgpu/contract/job_record.h"
#include "vgpu/contract/node_files.h"
#include "vgpu/contract/reported_counts.h"
#include "vgpu/contract/slurmd_report.h"
#include "vgpu/contract/strict_json.h"
#include "vgpu/core/catalog.h"

namespace {

using namespace vgpu::contract;

void copy_out(std::string_view text, char* out, std::size_t out_len) {
  if (out == nullptr || out_len == 0) return;
  const std::size_t n = std::min(text.size(), out_len - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Types reported at 0 unless advertised: every profile of the builtin catalog (slurmd drops
// zero-count slurm.conf records before the plugin sees them, and slurmctld keeps the last count of
// any type a registration leaves out), plus any other type this process reported before (slurmd
// keeps the plugin loaded across SIGHUP). See reported_counts.h.
std::set<std::string, std::less<>>& reported_before() {
  static std::set<std::string, std::less<>> types = [] {
    std::set<std::string, std::less<>> all;
    for (const auto& model : vgpu::Catalog::builtin().models())
      for (const auto& profile : model.profiles) all.insert(profile.name);
    return all;
  }();
  return types;
}

vgpu::Result<std::string> this_node() {
  std::string cmdline;
  if (auto text = read_small_file("/proc/self/cmdline", 16 * 1024)) cmdline = *text;
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return resolve_node_name({std::getenv("VGPU_NODENAME"), std::getenv("SLURMD_NODENAME"), cmdline, host.data()});
}

struct LoadedAdvertisement {
  std::string node;
  std::string path;
  vgpu::Result<Advertisement> advertisement;
};

LoadedAdvertisement load_advertisement() {
  auto node = this_node();
  if (!node) return {"", "", std::unexpected(node.error())};
  std::string path = advertisement_path(resolve_state_dir(std::getenv("VGPU_STATE_DIR")), *node);
  auto text = read_small_file(path);  // its errors already name the path
  if (!text) return {*node, path, std::unexpected(text.error())};
  auto adv = parse_advertisement(*text, *node);
  if (!adv) return {*node, path, std::unexpected(adv.error().within(path))};
  return {*node, path, std::move(adv)};
}

}  // namespace

extern "C" void vgpu_gres_reported_counts(uint64_t configured_total, vgpu_reported_t* out) {
  try {
    *out = vgpu_reported_t{};
    out->free_cnt = configured_total;
    auto [node, path, adv] = load_advertisement();
    copy_out(node, out->node, sizeof(out->node));
    ReportedCounts counts = reported_counts(adv, configured_total, reported_before());
    if (counts.advertised.size() > VGPU_GRES_MAX_TYPES) {
      counts = reported_counts(
          vgpu::fail(vgpu::ErrorCode::corrupt, path + ": more than " + std::to_string(VGPU_GRES_MAX_TYPES) + " types"),
          configured_total, reported_before());
      counts.advertised.resize(std::min<std::size_t>(counts.advertised.size(), VGPU_GRES_MAX_TYPES));
    }
    for (const auto& tc : counts.advertised) reported_before().insert(tc.type);
    for (const auto& tc : counts.advertised) {
      vgpu_type_count_t& slot = out->advertised[out->advertised_cnt++];
      copy_out(tc.type, slot.type, sizeof(slot.type));
      slot.count = tc.count;
    }
    out->free_cnt = counts.free;
    out->used_advertisement = counts.problem.empty() ? 1 : 0;
    if (adv && counts.problem.empty()) {
      out->generation = adv->generation;
      copy_out(path + ": generation " + std::to_string(adv->generation), out->message, sizeof(out->message));
    } else if (adv) {
      copy_out(path + ": " + counts.problem, out->message, sizeof(out->message));
    } else {
      copy_out(counts.problem, out->message, sizeof(out->message));
    }
  } catch (const std::exception& e) {
    *out = vgpu_reported_t{};
    out->free_cnt = configured_total;
    copy_out(std::string("internal error: ") + e.what(), out->message, sizeof(out->message));
  } catch (...) {
    *out = vgpu_reported_t{};
    out->free_cnt = configured_total;
    copy_out("internal error", out->message, sizeof(out->message));
  }
}

extern "C" int vgpu_gres_advertisement_path(char* out, size_t out_len) {
  try {
    auto node = this_node();
    if (!node) {
      copy_out(node.error().message, out, out_len);
      return -1;
    }
    std::string path = advertisement_path(resolve_state_dir(std::getenv("VGPU_STATE_DIR")), *node);
    if (path.size() >= out_len) {
      copy_out("advertisement path too long", out, out_len);
      return -1;
    }
    copy_out(path, out, out_len);
    return 0;
  } catch (...) {
    copy_out("internal error", out, out_len);
    return -1;
  }
}

extern "C" int vgpu_gres_write_slurmd_report(const vgpu_reported_t* rep, char* message, size_t message_len) {
  copy_out("", message, message_len);
  try {
    if (!rep->used_advertisement) return 0;
    SlurmdReport report;
    report.node = rep->node;
    report.generation = rep->generation;
    report.total = rep->free_cnt;
    for (int i = 0; i < rep->advertised_cnt; ++i) {
      report.total += rep->advertised[i].count;
      if (rep->advertised[i].count > 0) report.counts.emplace(rep->advertised[i].type, rep->advertised[i].count);
    }
    // Not durable: after a power cut slurmd starts again and rewrites it.
    std::string dir = resolve_state_dir(std::getenv("VGPU_STATE_DIR")) + "/" + report.node;
    if (auto ok = atomic_replace(vgpu::posix_file_system(), dir, "slurmd-report.json", render_slurmd_report(report),
                                 ReplaceOptions::rebuildable_file(0644));
        !ok) {
      copy_out(ok.error().message, message, message_len);
      return -1;
    }
    return 0;
  } catch (const std::exception& e) {
    copy_out(std::string("internal error: ") + e.what(), message, message_len);
    return -1;
  } catch (...) {
    copy_out("internal error", message, message_len);
    return -1;
  }
}

extern "C" int vgpu_gres_job_env(const char* process_title, const char* env_job_id, vgpu_setenv_fn set, void* ctx,
                                 char* message, size_t message_len) {
  copy_out("", message, message_len);
  try {
    // Called only for a job that holds vgpu on this node: whatever goes wrong, it must not be
    // left with an unset CUDA_VISIBLE_DEVICES, which means "every GPU" to CUDA.
    auto hide = [&](const std::string& why) {
      copy_out(why, message, message_len);
      for (const auto& var : hidden_environment()) set(ctx, var.name.c_str(), var.value.c_str());
      return -1;
    };
    // The job comes from slurmstepd's own title, never from the environment the step sent: a step
    // pointed at another job's record must get nothing (docs/security.md).
    const std::string title = process_title ? printable(process_title) : std::string("(unreadable)");
    auto job_id = job_of_stepd_title(process_title ? process_title : "");
    if (!job_id) return hide("process title '" + title + "' is not slurmstepd's for a job");
    if (env_job_id) {
      auto claimed = parse_job_id(env_job_id);
      if (!claimed || *claimed != *job_id)
        return hide("the step's SLURM_JOB_ID '" + printable(env_job_id) + "' is not this step's job " +
                    std::to_string(*job_id) + " (" + title + ")");
    }
    auto node = this_node();
    if (!node) return hide(node.error().message);
    const std::string path = job_record_path(resolve_state_dir(std::getenv("VGPU_STATE_DIR")), *node, *job_id);
    auto text = read_small_file(path);
    if (!text && text.error().code == vgpu::ErrorCode::not_found)
      return hide(path + ": no job record (the prolog did not give this job its instances)");
    auto record = text ? parse_job_record(*text, *job_id) : std::unexpected(text.error());
    if (!record) return hide(record.error().within(path).message);
    for (const auto& var : job_environment(*record)) set(ctx, var.name.c_str(), var.value.c_str());
    return 1;
  } catch (const std::exception& e) {
    copy_out(std::string("internal error: ") + e.what(), message, message_len);
  } catch (...) {
    copy_out("internal error", message, message_len);
  }
  return -1;
}

extern "C" size_t vgpu_gres_type_bits(const char* type, unsigned char* bits, size_t cap) {
  try {
    if (type == nullptr) return 0;
    const std::vector<bool> encoded = encode_type_bits(type);
    if (encoded.size() > cap) return 0;
    for (std::size_t i = 0; i < encoded.size(); ++i) bits[i] = encoded[i] ? 1 : 0;
    return encoded.size();
  } catch (...) {
    return 0;
  }
}

extern "C" int vgpu_gres_alloc_append(const char* previous, const unsigned char* bits, size_t nbits, uint64_t count,
                                      char* out, size_t out_len) {
  try {
    std::string type(kUntypedAlloc);
    if (nbits > 0) {
      std::vector<bool> decoded(nbits);
      for (std::size_t i = 0; i < nbits; ++i) decoded[i] = bits[i] != 0;
      auto name = decode_type_bits(decoded);
      if (!name) {
        copy_out(name.error().message, out, out_len);
        return -1;
      }
      type = *name;
    }
    const std::string value = append_alloc_item(previous ? previous : "", type, count);
    if (value.size() + 1 > out_len) {
      copy_out("VGPU_ALLOC value too long", out, out_len);
      return -1;
    }
    copy_out(value, out, out_len);
    return 0;
  } catch (...) {
    copy_out("internal error", out, out_len);
    return -1;
  }
}
