#include "worker/json.hpp"

#include <cstdio>
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
