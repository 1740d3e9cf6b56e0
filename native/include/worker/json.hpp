// Just enough JSON for the worker: its identity is built in code and written
// out; the package manifest and the runtime recipe are read with parse().
// Objects keep insertion order so the output is stable and reads in a
// sensible order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
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
  // Written with 6 significant digits (measurements); never parsed back.
  Value(double d) : data_(d) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(std::string_view s) : data_(std::string(s)) {}
  Value(const char* s) : data_(std::string(s)) {}
  Value(Array a) : data_(std::move(a)) {}
  Value(Object o) : data_(std::move(o)) {}

  // Two-space indented, one member per line, ending without a newline.
  std::string dump() const;

  // Typed views: nullptr when the value is of another type.
  const std::string* as_string() const { return std::get_if<std::string>(&data_); }
  const std::int64_t* as_int() const { return std::get_if<std::int64_t>(&data_); }
  const Array* as_array() const { return std::get_if<Array>(&data_); }
  const Object* as_object() const { return std::get_if<Object>(&data_); }
  bool is_null() const { return std::holds_alternative<std::nullptr_t>(data_); }
  // An object's member; nullptr when this is no object or has no such key.
  const Value* get(std::string_view key) const;

 private:
  void write(std::string& out, int depth) const;

  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object>
      data_ = nullptr;
};

struct ParseResult {
  std::optional<Value> value;  // empty when the text is not valid JSON
  std::string error;           // what and where (byte offset)
};

// Strict RFC 8259 JSON, except that numbers must be integers that fit in 64
// bits (nothing the worker reads has fractions) and nesting stops at 64
// levels. A duplicate object key is an error, so a recipe cannot say two
// things at once.
ParseResult parse(std::string_view text);

// `text` as a JSON string literal; control characters become \uXXXX. Bytes
// >= 0x80 pass through, so UTF-8 input gives UTF-8 output.
std::string quote(std::string_view text);

}  // namespace worker::json
