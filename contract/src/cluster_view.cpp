#include "vgpu/contract/cluster_view.h"

#include <algorithm>
#include <charconv>

#include "vgpu/base/text_split.h"
#include "vgpu/contract/names.h"
#include "vgpu/contract/node_files.h"

namespace vgpu::contract {
namespace {

constexpr std::string_view kSignaturePrefix = "signature ed25519 ";

// Lines one at a time, each without its newline; a body must end in one.
class LineReader {
 public:
  LineReader(std::string_view text, std::string_view where) : text_(text), where_(where) {}

  Result<std::string_view> next(std::string_view expecting) {
    if (pos_ >= text_.size()) return corrupt("ends before " + std::string(expecting));
    const auto end = text_.find('\n', pos_);
    if (end == std::string_view::npos) return corrupt("line " + std::to_string(line_ + 1) + ": no newline at its end");
    auto line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++line_;
    return line;
  }
  [[nodiscard]] bool done() const { return pos_ >= text_.size(); }
  [[nodiscard]] std::unexpected<Error> corrupt(const std::string& why) const {
    return fail(ErrorCode::corrupt, std::string(where_) + ": " + why);
  }
  [[nodiscard]] std::string at(const std::string& why) const { return "line " + std::to_string(line_) + ": " + why; }

 private:
  std::string_view text_, where_;
  std::size_t pos_ = 0, line_ = 0;
};

std::optional<std::int64_t> whole_number(std::string_view text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || v < 0) return std::nullopt;
  return v;
}

// "<key> <whole number>".
Result<std::int64_t> keyed_number(LineReader& in, std::string_view key, std::int64_t max) {
  auto line = in.next(std::string(key));
  if (!line) return std::unexpected(line.error());
  const auto blank = line->find(' ');
  if (blank == std::string_view::npos || line->substr(0, blank) != key)
    return in.corrupt(
        in.at("expected \"" + std::string(key) + " <number>\", found \"" + std::string(line->substr(0, 60)) + "\""));
  auto n = whole_number(line->substr(blank + 1));
  if (!n || *n > max)
    return in.corrupt(in.at(std::string(key) + ": \"" + std::string(line->substr(blank + 1, 30)) +
                            "\" is not a number from 0 to " + std::to_string(max)));
  return *n;
}

bool has_control_character(std::string_view line) {
  return std::ranges::any_of(line, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

Result<std::string_view> content_line(LineReader& in, std::string_view section) {
  auto line = in.next("the " + std::string(section) + " lines");
  if (!line) return line;
  if (line->empty() || has_control_character(*line))
    return in.corrupt(in.at(std::string(section) + ": an empty line or a control character"));
  return line;
}

// NodeName=<name> is the first field of scontrol's one-line form.
std::optional<std::string_view> node_name_of(std::string_view line) {
  constexpr std::string_view key = "NodeName=";
  if (!line.starts_with(key)) return std::nullopt;
  auto name = line.substr(
      key.size(), line.find(' ') == std::string_view::npos ? std::string_view::npos : line.find(' ') - key.size());
  if (name.empty()) return std::nullopt;
  return name;
}

// "for <node name>" or "for *".
Result<std::string_view> for_line(LineReader& in) {
  auto line = in.next("for");
  if (!line) return line;
  constexpr std::string_view key = "for ";
  const auto name = line->starts_with(key) ? line->substr(key.size()) : std::string_view();
  if (!is_view_node_name(name))
    return in.corrupt(
        in.at("expected \"for <node name>\" or \"for *\", found \"" + std::string(line->substr(0, 60)) + "\""));
  return name;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

bool is_view_node_name(std::string_view name) { return name == kWholeCluster || is_valid_node_name(name); }

std::int64_t ClusterView::stale_after_s() const {
  return std::max(kClusterViewMinStaleS, kClusterViewStalePeriods * period_s);
}

std::string render_cluster_view(const ClusterView& view) {
  std::string out = std::string(kClusterViewFormat) + " " + std::to_string(kClusterViewVersion) + "\n";
  out += "taken_at " + std::to_string(view.taken_at) + "\n";
  out += "period_s " + std::to_string(view.period_s) + "\n";
  out += "for " + view.for_node + "\n";
  out += "pending " + std::to_string(view.pending.size()) + "\n";
  for (const auto& line : view.pending) out += line + "\n";
  out += "nodes " + std::to_string(view.nodes.size()) + "\n";
  for (const auto& [name, line] : view.nodes) out += line + "\n";
  out += "running " + std::to_string(view.running.size()) + "\n";
  for (const auto& r : view.running) out += std::to_string(r.job) + "|" + r.nodes + "\n";
  return out;
}

std::string signature_line(std::string_view signature) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(kSignaturePrefix);
  for (unsigned char c : signature) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out + "\n";
}

Result<SignedView> split_view_signature(std::string_view text, std::string_view where) {
  if (text.empty() || text.back() != '\n')
    return fail(ErrorCode::corrupt, std::string(where) + ": does not end in a newline");
  const auto last_start = text.rfind('\n', text.size() - 2);
  const auto from = last_start == std::string_view::npos ? 0 : last_start + 1;
  const auto last = text.substr(from, text.size() - 1 - from);
  if (!last.starts_with(kSignaturePrefix)) return SignedView{text, std::nullopt};
  const auto hex = last.substr(kSignaturePrefix.size());
  if (hex.size() != 128)
    return fail(ErrorCode::corrupt, std::string(where) + ": signature: " + std::to_string(hex.size()) +
                                        " hex digits, an ed25519 signature has 128");
  std::string raw;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return fail(ErrorCode::corrupt, std::string(where) + ": signature: not lower-case hex digits");
    raw += static_cast<char>(hi * 16 + lo);
  }
  return SignedView{text.substr(0, from), std::move(raw)};
}

Result<ClusterView> parse_cluster_view(std::string_view body, std::string_view where) {
  LineReader in(body, where);
  auto header = in.next("the header");
  if (!header) return std::unexpected(header.error());
  const std::string want = std::string(kClusterViewFormat) + " " + std::to_string(kClusterViewVersion);
  const bool whole_only = *header == std::string(kClusterViewFormat) + " 1";
  if (*header != want && !whole_only)
    return in.corrupt("line 1: \"" + std::string(header->substr(0, 60)) + "\" is not \"" + want +
                      "\" (a publisher of another release?)");
  ClusterView view;
  auto taken = keyed_number(in, "taken_at", INT64_MAX / 2);
  if (!taken) return std::unexpected(taken.error());
  view.taken_at = *taken;
  auto period = keyed_number(in, "period_s", 3600);
  if (!period) return std::unexpected(period.error());
  if (*period < 1) return in.corrupt(in.at("period_s: 0 is not a period"));
  view.period_s = *period;
  if (!whole_only) {
    auto owner = for_line(in);
    if (!owner) return std::unexpected(owner.error());
    view.for_node = std::string(*owner);
  }

  auto pending = keyed_number(in, "pending", kClusterViewMaxBytes);
  if (!pending) return std::unexpected(pending.error());
  for (std::int64_t i = 0; i < *pending; ++i) {
    auto line = content_line(in, "pending");
    if (!line) return std::unexpected(line.error());
    view.pending.emplace_back(*line);
  }
  auto nodes = keyed_number(in, "nodes", kClusterViewMaxBytes);
  if (!nodes) return std::unexpected(nodes.error());
  for (std::int64_t i = 0; i < *nodes; ++i) {
    auto line = content_line(in, "nodes");
    if (!line) return std::unexpected(line.error());
    auto name = node_name_of(*line);
    if (!name) return in.corrupt(in.at("nodes: a line that does not start with NodeName=<name>"));
    if (!view.nodes.emplace(std::string(*name), std::string(*line)).second)
      return in.corrupt(in.at("nodes: node " + std::string(*name) + " listed twice"));
  }
  auto running = keyed_number(in, "running", kClusterViewMaxBytes);
  if (!running) return std::unexpected(running.error());
  for (std::int64_t i = 0; i < *running; ++i) {
    auto line = content_line(in, "running");
    if (!line) return std::unexpected(line.error());
    const auto bar = line->find('|');
    auto job = bar == std::string_view::npos ? std::nullopt : parse_job_id(line->substr(0, bar));
    if (!job || bar + 1 >= line->size())
      return in.corrupt(in.at("running: \"" + std::string(line->substr(0, 60)) + "\" is not <job id>|<nodes>"));
    view.running.push_back({*job, std::string(line->substr(bar + 1))});
  }
  if (!in.done()) return in.corrupt(in.at("text after the running jobs"));
  return view;
}

}  // namespace vgpu::contract
