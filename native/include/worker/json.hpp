// Just enough JSON to print the worker's identity: values are built in code
// and written out; nothing is parsed. Objects keep insertion order so the
// output is stable and reads in a sensible order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace worker::json {

class Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;

class Value {
 public:
  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : data_(b) {}
  Value(int i) : data_(static_cast<std::int64_t>(i)) {}
  Value(std::int64_t i) : data_(i) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(std::string_view s) : data_(std::string(s)) {}
  Value(const char* s) : data_(std::string(s)) {}
  Value(Array a) : data_(std::move(a)) {}
  Value(Object o) : data_(std::move(o)) {}

  // Two-space indented, one member per line, ending without a newline.
  std::string dump() const;

 private:
  void write(std::string& out, int depth) const;

  std::variant<std::nullptr_t, bool, std::int64_t, std::string, Array, Object>
      data_ = nullptr;
};

// `text` as a JSON string literal; control characters become \uXXXX. Bytes
// >= 0x80 pass through, so UTF-8 input gives UTF-8 output.
std::string quote(std::string_view text);

}  // namespace worker::json
