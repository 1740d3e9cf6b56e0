#include "worker/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>
#include <type_traits>

namespace worker::json {

std::string quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string Value::dump() const {
  std::string out;
  write(out, 0);
  return out;
}

void Value::write(std::string& out, int depth) const {
  const auto newline = [&out](int level) {
    out.push_back('\n');
    out.append(static_cast<std::size_t>(level) * 2, ' ');
  };
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          out += std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.6g", std::isfinite(v) ? v : 0.0);
          out += buf;
        } else if constexpr (std::is_same_v<T, std::string>) {
          out += quote(v);
        } else if constexpr (std::is_same_v<T, Array>) {
          if (v.empty()) {
            out += "[]";
            return;
          }
          out.push_back('[');
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (i > 0) out.push_back(',');
            newline(depth + 1);
            v[i].write(out, depth + 1);
          }
          newline(depth);
          out.push_back(']');
        } else {
          static_assert(std::is_same_v<T, Object>);
          if (v.empty()) {
            out += "{}";
            return;
          }
          out.push_back('{');
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (i > 0) out.push_back(',');
            newline(depth + 1);
            out += quote(v[i].first);
            out += ": ";
            v[i].second.write(out, depth + 1);
          }
          newline(depth);
          out.push_back('}');
        }
      },
      data_);
}

}  // namespace worker::json

namespace worker::json {

const Value* Value::get(std::string_view key) const {
  const Object* object = as_object();
  if (object == nullptr) return nullptr;
  for (const auto& [name, value] : *object) {
    if (name == key) return &value;
  }
  return nullptr;
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  ParseResult run() {
    ParseResult result;
    skip_space();
    std::optional<Value> v = value(0);
    if (v) {
      skip_space();
      if (pos_ != text_.size()) fail("unexpected text after the value");
    }
    if (!error_.empty()) {
      result.error = error_ + " at byte " + std::to_string(pos_);
    } else {
      result.value = std::move(v);
    }
    return result;
  }

 private:
  std::optional<Value> value(int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    if (pos_ >= text_.size()) return fail("unexpected end of text");
    const char c = text_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      std::optional<std::string> s = string();
      if (!s) return std::nullopt;
      return Value(std::move(*s));
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (literal("true")) return Value(true);
    if (literal("false")) return Value(false);
    if (literal("null")) return Value(nullptr);
    return fail("unexpected character");
  }

  std::optional<Value> object(int depth) {
    ++pos_;  // {
    Object members;
    skip_space();
    if (peek('}')) {
      ++pos_;
      return Value(std::move(members));
    }
    for (;;) {
      skip_space();
      if (!peek('"')) return fail("expected a string key");
      std::optional<std::string> key = string();
      if (!key) return std::nullopt;
      for (const auto& member : members) {
        if (member.first == *key) return fail("duplicate key \"" + *key + "\"");
      }
      skip_space();
      if (!peek(':')) return fail("expected ':'");
      ++pos_;
      skip_space();
      std::optional<Value> v = value(depth + 1);
      if (!v) return std::nullopt;
      members.emplace_back(std::move(*key), std::move(*v));
      skip_space();
      if (peek(',')) {
        ++pos_;
        continue;
      }
      if (peek('}')) {
        ++pos_;
        return Value(std::move(members));
      }
      return fail("expected ',' or '}'");
    }
  }

  std::optional<Value> array(int depth) {
    ++pos_;  // [
    Array items;
    skip_space();
    if (peek(']')) {
      ++pos_;
      return Value(std::move(items));
    }
    for (;;) {
      skip_space();
      std::optional<Value> v = value(depth + 1);
      if (!v) return std::nullopt;
      items.push_back(std::move(*v));
      skip_space();
      if (peek(',')) {
        ++pos_;
        continue;
      }
      if (peek(']')) {
        ++pos_;
        return Value(std::move(items));
      }
      return fail("expected ',' or ']'");
    }
  }

  std::optional<Value> number() {
    const std::size_t start = pos_;
    if (peek('-')) ++pos_;
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
      return fail("expected a digit");
    }
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' &&
        text_[pos_ + 1] <= '9') {
      return fail("leading zero");
    }
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      return fail("only integers are supported");
    }
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (ec != std::errc() || end != text_.data() + pos_) return fail("integer out of range");
    return Value(v);
  }

  std::optional<std::string> string() {
    ++pos_;  // "
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return fail_s("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char e = text_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          std::optional<std::uint32_t> cp = hex4();
          if (!cp) return std::nullopt;
          if (*cp >= 0xD800 && *cp <= 0xDBFF) {  // a surrogate pair
            if (!(pos_ + 1 < text_.size() && text_[pos_] == '\\' && text_[pos_ + 1] == 'u')) {
              return fail_s("unpaired surrogate");
            }
            pos_ += 2;
            std::optional<std::uint32_t> low = hex4();
            if (!low) return std::nullopt;
            if (*low < 0xDC00 || *low > 0xDFFF) return fail_s("unpaired surrogate");
            *cp = 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00);
          } else if (*cp >= 0xDC00 && *cp <= 0xDFFF) {
            return fail_s("unpaired surrogate");
          }
          utf8(*cp, out);
          break;
        }
        default:
          return fail_s("bad escape");
      }
    }
    return fail_s("unterminated string");
  }

  std::optional<std::uint32_t> hex4() {
    if (pos_ + 4 > text_.size()) {
      fail("short \\u escape");
      return std::nullopt;
    }
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<std::uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<std::uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<std::uint32_t>(h - 'A' + 10);
      else {
        fail("bad \\u escape");
        return std::nullopt;
      }
    }
    return v;
  }

  static void utf8(std::uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::nullopt_t fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return std::nullopt;
  }
  std::nullopt_t fail_s(std::string message) { return fail(std::move(message)); }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string error_;
};

}  // namespace

ParseResult parse(std::string_view text) { return Parser(text).run(); }

}  // namespace worker::json
