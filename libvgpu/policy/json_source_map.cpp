#include "vgpu/policy/json_source_map.h"

#include <fmt/format.h>

#include <optional>

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

  bool value(std::string& pointer, int depth, SourcePos key_pos) {
    skip_ws();
    if (at_end()) return fail("unexpected end of input, expected a value", here());
    // A repeated key overwrites the earlier position, as nlohmann keeps the last value.
    map_.locations_[pointer] = JsonLocation{key_pos, here()};
    switch (peek()) {
      case '{': return object(pointer, depth + 1);
      case '[': return array(pointer, depth + 1);
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

  bool too_deep() {
    return fail(fmt::format("nesting deeper than {} levels", JsonSourceMap::kMaxDepth), here());
  }

  bool object(std::string& pointer, int depth) {
    if (depth > JsonSourceMap::kMaxDepth) return too_deep();
    SourcePos open = here();
    advance();
    skip_ws();
    if (!at_end() && peek() == '}') {
      advance();
      return true;
    }
    std::unordered_map<std::string, SourcePos> seen;
    for (;;) {
      skip_ws();
      if (at_end()) return fail("unexpected end of input inside the object opened here", open);
      if (peek() == '}') return fail("trailing comma before '}'", here());
      if (peek() != '"')
        return fail(fmt::format("expected a member name in double quotes, got {}", what()), here());
      SourcePos key_pos = here();
      std::string key;
      if (!string(&key)) return false;
      skip_ws();
      if (at_end() || peek() != ':')
        return fail(fmt::format("expected ':' after member name \"{}\", got {}", key, what()),
                    here());
      advance();
      std::size_t base = pointer.size();
      pointer += '/';
      pointer += json_pointer_token(key);
      if (auto [it, inserted] = seen.emplace(key, key_pos); !inserted)
        map_.duplicates_.push_back(JsonDuplicateKey{pointer, it->second, key_pos});
      if (!value(pointer, depth, key_pos)) return false;
      pointer.resize(base);
      skip_ws();
      if (at_end()) return fail("unexpected end of input inside the object opened here", open);
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        return true;
      }
      return fail(fmt::format("expected ',' or '}}' after an object member, got {}", what()),
                  here());
    }
  }

  bool array(std::string& pointer, int depth) {
    if (depth > JsonSourceMap::kMaxDepth) return too_deep();
    SourcePos open = here();
    advance();
    skip_ws();
    if (!at_end() && peek() == ']') {
      advance();
      return true;
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
        return true;
      }
      return fail(fmt::format("expected ',' or ']' after an array element, got {}", what()),
                  here());
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(i_, word.size()) != word)
      return fail(fmt::format("invalid literal, expected {}", word), here());
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
    if (!at_end() && peek() == '.') {
      advance();
      if (!digits()) return false;
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      advance();
      if (!at_end() && (peek() == '+' || peek() == '-')) advance();
      if (!digits()) return false;
    }
    return true;
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
          if (text_.substr(i_, 2) != "\\u")
            return fail("UTF-16 high surrogate not followed by a low surrogate", at);
          advance();
          advance();
          long low = hex4();
          if (low < 0) return false;
          if (low < 0xDC00 || low > 0xDFFF)
            return fail("UTF-16 high surrogate not followed by a low surrogate", at);
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (out) append_utf8(*out, static_cast<std::uint32_t>(cp));
        return true;
      }
      default:
        return fail(e >= 0x20 && e < 0x7F
                        ? fmt::format("invalid escape '\\{}' in a string", static_cast<char>(e))
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
      if (at_end() || peek() < min || peek() > max)
        return fail("invalid UTF-8 sequence in a string", at);
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
      if (c < 0x20)
        return fail(fmt::format("control character U+{:04X} in a string must be escaped", c),
                    here());
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
  std::size_t i_ = 0;
  int line_ = 1;
  int col_ = 1;
  std::optional<JsonSyntaxError> error_;
};

std::expected<JsonSourceMap, JsonSyntaxError> JsonSourceMap::scan(std::string_view text) {
  JsonSourceMap map;
  if (auto error = JsonScanner(text, map).run()) return std::unexpected(std::move(*error));
  return map;
}

const JsonLocation* JsonSourceMap::find(std::string_view pointer) const {
  auto it = locations_.find(std::string(pointer));
  return it == locations_.end() ? nullptr : &it->second;
}

SourcePos JsonSourceMap::value_position(std::string_view pointer) const {
  for (;;) {
    if (const auto* loc = find(pointer)) return loc->value;
    auto slash = pointer.rfind('/');
    if (slash == std::string_view::npos) return SourcePos{};
    pointer = pointer.substr(0, slash);
  }
}

SourcePos JsonSourceMap::key_position(std::string_view pointer) const {
  if (const auto* loc = find(pointer); loc && loc->key.known()) return loc->key;
  return value_position(pointer);
}

std::string json_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~')
      out += "~0";
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
