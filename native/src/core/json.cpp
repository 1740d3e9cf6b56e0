#include "worker/json.hpp"

#include <limits>
#include <set>
#include <vector>

namespace worker::json {

std::string dump(const Value& value) {
  return value.dump(2, ' ', false, Value::error_handler_t::replace);
}

const Value* get(const Value& value, std::string_view key) {
  if (!value.is_object()) return nullptr;
  for (const auto& member : value.get_ref<const Object&>()) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

const std::string* as_string(const Value& value) {
  return value.get_ptr<const Value::string_t*>();
}

std::optional<std::int64_t> as_int(const Value& value) {
  if (const auto* u = value.get_ptr<const Value::number_unsigned_t*>()) {
    if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(*u);
  }
  if (const auto* i = value.get_ptr<const Value::number_integer_t*>()) return *i;
  return std::nullopt;
}

namespace {

constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxErrorBytes = 200;

// nlohmann's message without its "[json.exception.parse_error.101] " tag,
// and short: the token it quotes can be as long as the input.
std::string message_of(const std::string& what) {
  std::string text = what;
  if (!text.empty() && text.front() == '[') {
    const std::size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  if (text.size() > kMaxErrorBytes) {
    std::size_t cut = kMaxErrorBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

std::string dump_line(const std::string& text) {
  return Value(text).dump(-1, ' ', false, Value::error_handler_t::replace);
}

// The first pass: nlohmann's SAX parser (iterative, so deep input cannot
// overflow the stack) with the worker's limits, before any value is built.
class Limits final : public nlohmann::json_sax<Value> {
 public:
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return fail("integer out of range: " + std::to_string(v));
    }
    return value();
  }
  bool number_float(number_float_t, const string_t& text) override {
    // nlohmann reads an integer too large for 64 bits as a float.
    if (text.find_first_of(".eE") == std::string::npos) {
      return fail("integer out of range: " + message_of(text));
    }
    return fail("only integers are supported: " + message_of(text));
  }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    if (!value()) return false;
    ++depth_;
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& name) override {
    if (!keys_.back().insert(name).second) {
      // Quoted as JSON: a key's escapes may decode to a line break.
      return fail("duplicate key " + message_of(dump_line(name)));
    }
    return true;
  }
  bool end_object() override {
    --depth_;
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (!value()) return false;
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const Value::exception& e) override {
    return fail(message_of(e.what()));
  }

  const std::string& error() const { return error_; }

 private:
  // A value inside `depth_` arrays or objects.
  bool value() {
    if (depth_ > kMaxDepth) {
      return fail("nested too deeply: more than " + std::to_string(kMaxDepth) + " levels");
    }
    return true;
  }
  bool fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }

  int depth_ = 0;
  std::vector<std::set<std::string>> keys_;  // of each open object
  std::string error_;
};

}  // namespace

ParseResult parse(std::string_view text) {
  ParseResult result;
  // nlohmann's lexer takes a NUL byte for the end of input, which would
  // hide whatever follows it; valid JSON has none outside \u escapes.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    result.error = "NUL byte at byte " + std::to_string(nul);
    return result;
  }
  Limits limits;
  try {
    if (!Value::sax_parse(text.begin(), text.end(), &limits)) {
      result.error = limits.error().empty() ? "not valid JSON" : limits.error();
      return result;
    }
    result.value = Value::parse(text.begin(), text.end());
  } catch (const Value::exception& e) {
    result.value.reset();
    result.error = message_of(e.what());
  }
  return result;
}

}  // namespace worker::json
