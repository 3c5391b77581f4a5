#include "vgpu/policy/json_source_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <span>
#include <system_error>

namespace vgpu {
namespace {

bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

int hex_value(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  auto byte = [&](std::uint32_t b) { out.push_back(static_cast<char>(b)); };
  if (cp < 0x80) {
    byte(cp);
  } else if (cp < 0x800) {
    byte(0xC0 | (cp >> 6));
    byte(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    byte(0xE0 | (cp >> 12));
    byte(0x80 | ((cp >> 6) & 0x3F));
    byte(0x80 | (cp & 0x3F));
  } else {
    byte(0xF0 | (cp >> 18));
    byte(0x80 | ((cp >> 12) & 0x3F));
    byte(0x80 | ((cp >> 6) & 0x3F));
    byte(0x80 | (cp & 0x3F));
  }
}

}  // namespace

// Recursive descent over the text; depth is bounded so hostile input cannot exhaust the stack.
class JsonScanner {
 public:
  JsonScanner(std::string_view text, JsonSourceMap& map) : text_(text), map_(map) {}

  std::optional<JsonSyntaxError> run() {
    if (text_.starts_with("\xEF\xBB\xBF")) i_ = 3;  // a UTF-8 BOM, which nlohmann also skips
    skip_ws();
    if (at_end()) return JsonSyntaxError{here(), "empty document, expected a JSON value"};
    std::string pointer;
    if (!value(pointer, 0, SourcePos{})) return error_;
    skip_ws();
    if (!at_end()) {
      fail(fmt::format("unexpected {} after the end of the JSON document", what()), here());
      return error_;
    }
    // Found object by object, innermost first: put back in the order of the repeats.
    std::ranges::stable_sort(map_.duplicates_, {}, [](const JsonDuplicateKey& d) { return d.again.offset; });
    return std::nullopt;
  }

 private:
  [[nodiscard]] SourcePos here() const { return {line_, col_, i_}; }
  [[nodiscard]] bool at_end() const { return i_ >= text_.size(); }
  [[nodiscard]] unsigned char peek() const { return static_cast<unsigned char>(text_[i_]); }

  void advance() {
    unsigned char c = peek();
    ++i_;
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else if ((c & 0xC0) != 0x80) {  // UTF-8 continuation bytes belong to the previous column
      ++col_;
    }
  }

  bool fail(std::string message, SourcePos at) {
    if (!error_) error_ = JsonSyntaxError{at, std::move(message)};
    return false;
  }

  [[nodiscard]] std::string what() const {
    if (at_end()) return "end of input";
    unsigned char c = peek();
    if (c >= 0x20 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02X}", c);
  }

  void skip_ws() {
    while (!at_end()) {
      unsigned char c = peek();
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      advance();
    }
  }

  // Records the value about to be read as the next node, a child of the container at `depth`
  // (0: the root), then reads it. A member's key is already in keys_.
  bool value(std::string& pointer, int depth, SourcePos key_pos, std::uint32_t key_offset = 0,
             std::uint32_t key_size = 0) {
    skip_ws();
    if (at_end()) return fail("unexpected end of input, expected a value", here());
    const auto node = static_cast<std::uint32_t>(map_.nodes_.size());
    map_.nodes_.push_back(JsonSourceMap::Node{JsonLocation{key_pos, here()}, key_offset, key_size, 0, 0, false});
    if (depth > 0) children_at(depth).push_back(node);
    switch (peek()) {
      case '{': return object(pointer, depth + 1, node);
      case '[': return array(pointer, depth + 1, node);
      case '"': return string(nullptr);
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default:
        if (peek() == '-' || is_digit(peek())) return number();
        return fail(fmt::format("expected a value (object, array, string, number, true, false or "
                                "null), got {}",
                                what()),
                    here());
    }
  }

  bool too_deep() { return fail(fmt::format("nesting deeper than {} levels", JsonSourceMap::kMaxDepth), here()); }

  // The children found so far of the container being read at `depth`; one list per depth, reused
  // from one container to the next so a list of a million small objects allocates little.
  std::vector<std::uint32_t>& children_at(int depth) {
    if (pending_.size() <= static_cast<std::size_t>(depth)) pending_.resize(static_cast<std::size_t>(depth) + 1);
    return pending_[static_cast<std::size_t>(depth)];
  }

  // The container `node`, read to its end: its children move to the map, in order.
  bool close(std::uint32_t node, int depth, bool is_array) {
    auto& children = children_at(depth);
    auto& n = map_.nodes_[node];
    n.first_child = static_cast<std::uint32_t>(map_.children_.size());
    n.child_count = static_cast<std::uint32_t>(children.size());
    n.is_array = is_array;
    map_.children_.insert(map_.children_.end(), children.begin(), children.end());
    children.clear();
    return true;
  }

  // Keys the object (at `pointer`) repeats, each repeat against the first occurrence: its members
  // sorted by key, the sort stable so the first of equal keys is the earliest.
  void find_duplicates(const std::string& pointer, const std::vector<std::uint32_t>& members) {
    if (members.size() < 2) return;
    auto key = [&](std::uint32_t n) { return map_.key_of(map_.nodes_[n]); };
    order_.assign(members.begin(), members.end());
    std::ranges::stable_sort(order_, {}, key);
    for (std::size_t k = 1, first = 0; k < order_.size(); ++k) {
      if (key(order_[k]) != key(order_[first])) {
        first = k;
        continue;
      }
      map_.duplicates_.push_back(JsonDuplicateKey{pointer + '/' + json_pointer_token(key(order_[k])),
                                                  map_.nodes_[order_[first]].location.key,
                                                  map_.nodes_[order_[k]].location.key});
    }
  }

  bool object(std::string& pointer, int depth, std::uint32_t node) {
    if (depth > JsonSourceMap::kMaxDepth) return too_deep();
    SourcePos open = here();
    advance();
    skip_ws();
    if (!at_end() && peek() == '}') {
      advance();
      return close(node, depth, false);
    }
    for (;;) {
      skip_ws();
      if (at_end()) return fail("unexpected end of input inside the object opened here", open);
      if (peek() == '}') return fail("trailing comma before '}'", here());
      if (peek() != '"') return fail(fmt::format("expected a member name in double quotes, got {}", what()), here());
      SourcePos key_pos = here();
      const auto key_offset = static_cast<std::uint32_t>(map_.keys_.size());
      if (!string(&map_.keys_)) return false;
      const auto key_size = static_cast<std::uint32_t>(map_.keys_.size() - key_offset);
      const std::string_view key = std::string_view(map_.keys_).substr(key_offset);  // until keys_ grows
      skip_ws();
      if (at_end() || peek() != ':')
        return fail(fmt::format("expected ':' after member name \"{}\", got {}", key, what()), here());
      advance();
      std::size_t base = pointer.size();
      pointer += '/';
      pointer += json_pointer_token(key);
      if (!value(pointer, depth, key_pos, key_offset, key_size)) return false;
      pointer.resize(base);
      skip_ws();
      if (at_end()) return fail("unexpected end of input inside the object opened here", open);
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        find_duplicates(pointer, children_at(depth));
        return close(node, depth, false);
      }
      return fail(fmt::format("expected ',' or '}}' after an object member, got {}", what()), here());
    }
  }

  bool array(std::string& pointer, int depth, std::uint32_t node) {
    if (depth > JsonSourceMap::kMaxDepth) return too_deep();
    SourcePos open = here();
    advance();
    skip_ws();
    if (!at_end() && peek() == ']') {
      advance();
      return close(node, depth, true);
    }
    for (std::size_t index = 0;; ++index) {
      skip_ws();
      if (!at_end() && peek() == ']') return fail("trailing comma before ']'", here());
      std::size_t base = pointer.size();
      pointer += '/';
      pointer += std::to_string(index);
      if (!value(pointer, depth, SourcePos{})) return false;
      pointer.resize(base);
      skip_ws();
      if (at_end()) return fail("unexpected end of input inside the array opened here", open);
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == ']') {
        advance();
        return close(node, depth, true);
      }
      return fail(fmt::format("expected ',' or ']' after an array element, got {}", what()), here());
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(i_, word.size()) != word) return fail(fmt::format("invalid literal, expected {}", word), here());
    for (std::size_t k = 0; k < word.size(); ++k) advance();
    return true;
  }

  bool digits() {
    if (at_end() || !is_digit(peek()))
      return fail(fmt::format("invalid number: expected a digit, got {}", what()), here());
    while (!at_end() && is_digit(peek())) advance();
    return true;
  }

  bool number() {
    SourcePos start = here();
    if (peek() == '-') advance();
    if (!at_end() && peek() == '0') {
      advance();
      if (!at_end() && is_digit(peek())) return fail("invalid number: leading zero", start);
    } else if (!digits()) {
      return false;
    }
    bool integer = true;
    if (!at_end() && peek() == '.') {
      integer = false;
      advance();
      if (!digits()) return false;
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      integer = false;
      advance();
      if (!at_end() && (peek() == '+' || peek() == '-')) advance();
      if (!digits()) return false;
    }
    return in_double_range(text_.substr(start.offset, i_ - start.offset), integer, start);
  }

  // nlohmann holds a number that is not a 64-bit integer as a double and refuses one beyond a
  // double's range, such as 1e400 or a 400-digit integer, without saying where it is: refused
  // here instead, at its position. One too small for a double is 0 to nlohmann, and fine here.
  bool in_double_range(std::string_view number, bool integer, SourcePos start) {
    const std::size_t digits = number.size() - (number.front() == '-' ? 1 : 0);
    if (integer && digits <= 19) return true;  // an int64 or a uint64, or a double well inside range
    double value = 0;
    const auto parsed = std::from_chars(number.data(), number.data() + number.size(), value);
    if (parsed.ec != std::errc::result_out_of_range || !magnitude_above_one(number)) return true;
    std::string shown(number.substr(0, 40));
    if (shown.size() < number.size()) shown += "...";
    return fail(fmt::format("number {} is out of range: larger than a double holds (about 1.8e308)", shown), start);
  }

  // Whether a JSON number beyond a double's range is too large rather than too small: whether the
  // decimal exponent of its first nonzero digit is positive ("1e400", not "1e-400").
  static bool magnitude_above_one(std::string_view number) {
    if (number.front() == '-') number.remove_prefix(1);
    const std::size_t e_at = std::min(number.find_first_of("eE"), number.size());
    const std::string_view mantissa = number.substr(0, e_at);
    const auto point = static_cast<long long>(std::min(mantissa.find('.'), mantissa.size()));
    long long lead = point - 1;  // "12.5": 1; JSON allows no leading zero before another digit
    if (mantissa.front() == '0') {
      const std::size_t nonzero = mantissa.find_first_not_of("0.");
      if (nonzero == std::string_view::npos) return false;  // zero
      lead = point - static_cast<long long>(nonzero);       // "0.05": -2
    }
    long long exponent = 0;  // saturated: only its sign and rough size matter
    std::string_view e_part = number.substr(std::min(e_at + 1, number.size()));
    const bool negative = e_part.starts_with('-');
    if (e_part.starts_with('-') || e_part.starts_with('+')) e_part.remove_prefix(1);
    for (char c : e_part) exponent = std::min<long long>(exponent * 10 + (c - '0'), 1'000'000'000);
    return lead + (negative ? -exponent : exponent) > 0;
  }

  // Four hex digits after "\u"; -1 on error (already reported).
  long hex4() {
    long cp = 0;
    for (int k = 0; k < 4; ++k) {
      if (at_end() || hex_value(peek()) < 0) {
        fail(fmt::format("\\u escape needs four hex digits, got {}", what()), here());
        return -1;
      }
      cp = cp * 16 + hex_value(peek());
      advance();
    }
    return cp;
  }

  bool escape(std::string* out) {
    SourcePos at = here();
    advance();  // the backslash
    if (at_end()) return fail("unterminated string (input ends after '\\')", at);
    unsigned char e = peek();
    advance();
    char plain = 0;
    switch (e) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': {
        long cp = hex4();
        if (cp < 0) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("unpaired UTF-16 low surrogate", at);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(i_, 2) != "\\u") return fail("UTF-16 high surrogate not followed by a low surrogate", at);
          advance();
          advance();
          long low = hex4();
          if (low < 0) return false;
          if (low < 0xDC00 || low > 0xDFFF) return fail("UTF-16 high surrogate not followed by a low surrogate", at);
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (out) append_utf8(*out, static_cast<std::uint32_t>(cp));
        return true;
      }
      default:
        return fail(e >= 0x20 && e < 0x7F ? fmt::format("invalid escape '\\{}' in a string", static_cast<char>(e))
                                          : std::string("invalid escape in a string"),
                    at);
    }
    if (out) out->push_back(plain);
    return true;
  }

  // One multi-byte UTF-8 sequence, checked for overlong forms and surrogates as RFC 3629 demands.
  bool utf8_sequence(std::string* out) {
    SourcePos at = here();
    unsigned char lead = peek();
    int extra = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      extra = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      extra = 2;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      extra = 3;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      return fail(fmt::format("invalid UTF-8 byte 0x{:02X} in a string", lead), at);
    }
    std::size_t start = i_;
    advance();
    for (int k = 0; k < extra; ++k) {
      unsigned char min = 0x80, max = 0xBF;
      if (k == 0) {
        min = lo;
        max = hi;
      }
      if (at_end() || peek() < min || peek() > max) return fail("invalid UTF-8 sequence in a string", at);
      advance();
    }
    if (out) out->append(text_.substr(start, i_ - start));
    return true;
  }

  bool string(std::string* out) {
    SourcePos open = here();
    advance();
    for (;;) {
      if (at_end()) return fail("unterminated string (missing closing '\"')", open);
      unsigned char c = peek();
      if (c == '"') {
        advance();
        return true;
      }
      if (c < 0x20) return fail(fmt::format("control character U+{:04X} in a string must be escaped", c), here());
      if (c == '\\') {
        if (!escape(out)) return false;
      } else if (c >= 0x80) {
        if (!utf8_sequence(out)) return false;
      } else {
        if (out) out->push_back(static_cast<char>(c));
        advance();
      }
    }
  }

  std::string_view text_;
  JsonSourceMap& map_;
  std::vector<std::vector<std::uint32_t>> pending_;  // children_at()
  std::vector<std::uint32_t> order_;                 // find_duplicates()' scratch
  std::size_t i_ = 0;
  int line_ = 1;
  int col_ = 1;
  std::optional<JsonSyntaxError> error_;
};

std::expected<JsonSourceMap, JsonSyntaxError> JsonSourceMap::scan(std::string_view text) {
  JsonSourceMap map;
  if (text.size() >= std::numeric_limits<std::uint32_t>::max())
    return std::unexpected(JsonSyntaxError{SourcePos{1, 1, 0}, "document of 4 GiB or more"});
  if (auto error = JsonScanner(text, map).run()) return std::unexpected(std::move(*error));
  return map;
}

namespace {

// A JSON pointer's array index: "0", or digits without a leading zero (RFC 6901).
std::optional<std::size_t> pointer_index(std::string_view token) {
  if (token.empty() || token.size() > 10 || (token.size() > 1 && token.front() == '0')) return std::nullopt;
  std::size_t index = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
  if (ec != std::errc{} || end != token.data() + token.size()) return std::nullopt;
  return index;
}

// A reference token's key: "~1" -> '/', "~0" -> '~'; nullopt for another '~' (no key spells so).
std::optional<std::string> pointer_key(std::string_view token) {
  std::string key;
  key.reserve(token.size());
  for (std::size_t k = 0; k < token.size(); ++k) {
    if (token[k] != '~') {
      key += token[k];
    } else if (k + 1 < token.size() && (token[k + 1] == '0' || token[k + 1] == '1')) {
      key += token[++k] == '1' ? '/' : '~';
    } else {
      return std::nullopt;
    }
  }
  return key;
}

}  // namespace

const JsonSourceMap::Node* JsonSourceMap::child(const Node& parent, std::string_view token) const {
  const std::span<const std::uint32_t> children(children_.data() + parent.first_child, parent.child_count);
  if (parent.is_array) {
    auto index = pointer_index(token);
    return index && *index < children.size() ? &nodes_[children[*index]] : nullptr;
  }
  // From the last member: of a repeated key nlohmann keeps the last value, and so does this.
  const auto key = pointer_key(token);
  if (!key) return nullptr;
  for (auto it = children.rbegin(); it != children.rend(); ++it)
    if (key_of(nodes_[*it]) == *key) return &nodes_[*it];
  return nullptr;
}

JsonSourceMap::Walk JsonSourceMap::walk(std::string_view pointer) const {
  if (nodes_.empty() || (!pointer.empty() && pointer.front() != '/')) return {};
  Walk at{&nodes_.front(), true};
  while (!pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    const std::size_t end = std::min(pointer.find('/'), pointer.size());
    const Node* next = child(*at.node, pointer.substr(0, end));
    if (!next) return {at.node, false};
    at.node = next;
    pointer.remove_prefix(end);
  }
  return at;
}

const JsonLocation* JsonSourceMap::find(std::string_view pointer) const {
  const Walk at = walk(pointer);
  return at.exact ? &at.node->location : nullptr;
}

SourcePos JsonSourceMap::value_position(std::string_view pointer) const {
  const Walk at = walk(pointer);
  return at.node ? at.node->location.value : SourcePos{};
}

SourcePos JsonSourceMap::key_position(std::string_view pointer) const {
  if (const auto* loc = find(pointer); loc && loc->key.known()) return loc->key;
  return value_position(pointer);
}

std::string json_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

SourcePos position_at_offset(std::string_view text, std::size_t offset) {
  if (offset > text.size()) offset = text.size();
  SourcePos pos{1, 1, offset};
  for (std::size_t k = 0; k < offset; ++k) {
    auto c = static_cast<unsigned char>(text[k]);
    if (c == '\n') {
      ++pos.line;
      pos.column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++pos.column;
    }
  }
  return pos;
}

}  // namespace vgpu
