// JSON for the worker, through nlohmann/json (https://github.com/nlohmann/json,
// MIT): its identity and reports are built in code and written with dump();
// the package manifest and the runtime recipe are read with parse(), which
// adds the worker's own limits to nlohmann's strict RFC 8259 parser.
// Objects keep insertion order (ordered_json) so output is stable and reads
// in a sensible order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace worker::json {

using Value = nlohmann::ordered_json;
using Array = Value::array_t;
using Object = Value::object_t;

// Two-space indented, one member per line, ending without a newline; bytes
// that are not UTF-8 are written as U+FFFD.
std::string dump(const Value& value);

// An object's member; nullptr when `value` is no object or has no such key.
const Value* get(const Value& value, std::string_view key);
// Typed views: nullptr / nullopt when the value is of another type.
const std::string* as_string(const Value& value);
std::optional<std::int64_t> as_int(const Value& value);

struct ParseResult {
  std::optional<Value> value;  // empty when the text is refused
  std::string error;           // one line: what, and where when the syntax is wrong
};

// Strict RFC 8259 JSON in UTF-8, except that numbers must be integers that
// fit in 64 bits (nothing the worker reads has fractions) and nesting stops
// at 64 levels (checked before any document is built, so no input can
// exhaust the stack). A duplicate object key is an error, so a recipe cannot
// say two things at once. Never throws for bad input.
ParseResult parse(std::string_view text);

}  // namespace worker::json
