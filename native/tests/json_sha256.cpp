// The worker's JSON reader and SHA-256, pinned by their behaviour, whatever
// implements them: SHA-256 known-answer vectors (FIPS 180-4 / NIST examples
// and block-boundary lengths), streaming in odd chunks, files; and the
// JSON refusals the start-up gate relies on (malformed text, duplicate keys,
// fractions, out-of-range integers, nesting deeper than 64 levels, including
// nesting deep enough to overflow a recursive parser's stack), each a
// one-line error.
//
// usage: worker_json_sha256 SCRATCH_DIR

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "worker/json.hpp"
#include "worker/sha256.hpp"

#include "check.hpp"

namespace {

std::string shown(const std::string& text) {
  return text.size() > 40 ? text.substr(0, 40) + "... (" + std::to_string(text.size()) + " bytes)"
                          : text;
}

void accepts(const std::string& text) {
  const worker::json::ParseResult r = worker::json::parse(text);
  check(r.value.has_value() && r.error.empty(), "refused `" + shown(text) + "`: " + r.error);
}

void refuses(const std::string& text, const std::string& needle = "") {
  const worker::json::ParseResult r = worker::json::parse(text);
  check(!r.value.has_value(), "accepted `" + shown(text) + "`");
  check(!r.error.empty() && r.error.find('\n') == std::string::npos,
        "`" + shown(text) + "`: error is not one line: `" + r.error + "`");
  check(r.error.find(needle) != std::string::npos,
        "`" + shown(text) + "`: error `" + r.error + "` lacks `" + needle + "`");
}

std::string nested(int levels, const std::string& inner) {
  return std::string(static_cast<std::size_t>(levels), '[') + inner +
         std::string(static_cast<std::size_t>(levels), ']');
}

void test_json_refusals() {
  accepts("{}");
  accepts(" [ ] ");
  accepts("{\"a\": [1, -2, {\"b\": null}], \"c\": true, \"d\": false, \"e\": \"x\\u00e9\"}");
  accepts("9223372036854775807");
  accepts("-9223372036854775808");
  accepts("\"\\ud83d\\ude00\"");  // a surrogate pair
  accepts("{\"a\": 1, \"A\": 2}");
  accepts("{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}}");  // the same key in two objects

  for (const char* text : {"", " ", "{", "[", "}", "[1,]", "{\"a\": 1,}", "{\"a\" 1}",
                           "{'a': 1}", "{a: 1}", "01", "-", "+1", "tru", "nul", "True", "[1] x",
                           "{} {}", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"a\nb\"",
                           "\"a\tb\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
                           "/* c */ {}", "NaN", "Infinity", "[1 2]", "{\"a\": 1 \"b\": 2}"}) {
    refuses(text);
  }
  // Text after a NUL byte is not hidden from the parser.
  refuses(std::string("{\"a\": 1}\0", 9));
  refuses(std::string("{\"a\": 1}\0{\"b\": 2}", 17));
  refuses(std::string("\"a\0b\"", 5));
  refuses("{\"pin\": \"a\", \"pin\": \"b\"}", "duplicate key \"pin\"");
  refuses("[{\"x\": {\"k\": 1, \"k\": 1}}]", "duplicate key \"k\"");
  refuses("{\"a\\nb\": 1, \"a\\nb\": 2}", "duplicate key \"a\\nb\"");  // still one line
  for (const char* text : {"1.5", "2.0", "1e3", "-0.0", "[1, 2.5]"}) {
    refuses(text, "only integers");
  }
  for (const char* text : {"9223372036854775808", "-9223372036854775809",
                           "123456789012345678901234567890"}) {
    refuses(text, "out of range");
  }

  // 64 levels: a value may sit inside at most 64 arrays or objects.
  accepts(nested(64, "1"));
  accepts(nested(65, ""));
  refuses(nested(65, "1"), "nested too deeply");
  refuses(nested(66, ""), "nested too deeply");
  std::string objects;
  for (int i = 0; i < 64; ++i) objects += "{\"a\": ";
  accepts(objects + "1" + std::string(64, '}'));
  refuses(objects + "{\"a\": 1" + std::string(65, '}'), "nested too deeply");
  // Deep enough to overflow the stack of a parser that recurses per level,
  // well-formed or not: refused, not a crash.
  refuses(nested(1000000, ""), "nested too deeply");
  refuses(std::string(1000000, '['), "nested too deeply");
  std::string many;
  for (int i = 0; i < 200000; ++i) many += "{\"a\":";
  refuses(many, "nested too deeply");
}

// What a parsed document holds, and how the worker writes one.
void test_json_values() {
  namespace json = worker::json;
  const json::ParseResult r = json::parse(
      "{\"s\": \"x\\u00e9\\ud83d\\ude00\\n\", \"n\": -7, \"big\": 9223372036854775807,"
      " \"a\": [1, \"two\"], \"o\": {\"k\": null}}");
  check(r.value.has_value(), "sample document refused: " + r.error);
  if (!r.value) return;
  const json::Value& v = *r.value;
  const std::string* s = json::get(v, "s") ? json::as_string(*json::get(v, "s")) : nullptr;
  check(s != nullptr && *s == "x\xc3\xa9\xf0\x9f\x98\x80\n", "escapes decode to UTF-8");
  check(json::as_int(*json::get(v, "n")) == -7, "a negative integer");
  check(json::as_int(*json::get(v, "big")) == 9223372036854775807LL, "the largest integer");
  check(!json::as_int(*json::get(v, "a")) && !json::as_string(*json::get(v, "n")),
        "typed views of another type are empty");
  check(json::get(v, "missing") == nullptr && json::get(*json::get(v, "a"), "k") == nullptr,
        "get() of a missing key or a non-object");
  check(json::get(*json::get(v, "o"), "k")->is_null(), "a nested null");

  // Insertion order, two-space indent, no trailing newline; control bytes
  // escaped, bytes that are not UTF-8 replaced rather than thrown on.
  const json::Value out = json::Object{{"z", 1}, {"a", json::Array{true, nullptr}},
                                       {"e", json::Object{}}, {"t", "q\"\\\x01\xff"}};
  const std::string want =
      "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    null\n  ],\n  \"e\": {},\n"
      "  \"t\": \"q\\\"\\\\\\u0001\xef\xbf\xbd\"\n}";
  check(json::dump(out) == want, "dump() wrote `" + json::dump(out) + "`");

  // Text that is not UTF-8 is refused; an unterminated megabyte string gives
  // a short error.
  refuses("\"\xff\"");
  refuses("\"\xc3\"");
  refuses("{\"\xed\xa0\x80\": 1}");  // an encoded surrogate
  const json::ParseResult long_string = json::parse("\"" + std::string(1 << 20, 'a'));
  check(!long_string.value && long_string.error.size() < 300,
        "unterminated long string: error of " + std::to_string(long_string.error.size()) +
            " bytes");
}

void test_sha256_vectors(const std::string& scratch) {
  const auto expect = [](const std::string& data, const char* want, const std::string& what) {
    const std::string got = worker::sha256_hex(data);
    check(got == want, "sha256(" + what + ") = " + got + ", expected " + want);
  };
  // FIPS 180-4 / NIST CSRC examples.
  expect("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc");
  expect("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448-bit");
  expect("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
         "klmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1", "896-bit");
  const std::string million(1000000, 'a');
  expect(million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
         "10^6 x a");
  // Lengths around the 64-byte block and its 56-byte padding limit.
  const std::vector<std::pair<std::size_t, const char*>> lengths = {
      {0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"}};
  for (const auto& [n, want] : lengths) {
    expect(std::string(n, 'a'), want, std::to_string(n) + " x a");
  }

  // Streaming in uneven chunks gives the one-shot digest.
  std::string bytes;
  for (int i = 0; i < 37; ++i) {
    for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  }
  const char* bytes_want = "480d8641d6c1055a8755af19a919c09c6b3f4f57ee7615d67da1f902e8e4c782";
  expect(bytes, bytes_want, "37 x bytes 0..255");
  worker::Sha256 s;
  std::size_t at = 0;
  for (std::size_t chunk = 1; at < bytes.size(); chunk = chunk * 3 % 157 + 1) {
    const std::size_t take = std::min(chunk, bytes.size() - at);
    s.update(std::string_view(bytes).substr(at, take));
    at += take;
  }
  check(s.hex() == bytes_want, "streamed sha256 differs from the one-shot digest");

  // Files: the same digest; a missing file is nullopt, not a digest.
  const std::string path = scratch + "/sha256-input.bin";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  const auto file_hex = worker::sha256_file_hex(path);
  check(file_hex && *file_hex == bytes_want, "sha256_file_hex of " + path);
  check(!worker::sha256_file_hex(scratch + "/no-such-file"), "sha256_file_hex of a missing file");
  std::remove(path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: worker_json_sha256 SCRATCH_DIR\n");
    return 2;
  }
  test_json_refusals();
  test_json_values();
  test_sha256_vectors(argv[1]);
  std::printf("json and sha256: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
