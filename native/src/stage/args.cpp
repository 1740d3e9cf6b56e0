#include "args.hpp"

#include <charconv>

namespace worker::stage {
namespace {

bool to_int(const std::string& text, long long& out) {
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, out);
  return !text.empty() && r.ec == std::errc() && r.ptr == end;
}

}  // namespace

bool Args::value(const std::string& flag, std::string& out) {
  if (done()) {
    error = flag + " needs a value";
    return false;
  }
  out = args_[i_++];
  return true;
}

bool Args::integer(const std::string& flag, long long lo, long long hi, long long& out) {
  std::string text;
  if (!value(flag, text)) return false;
  if (!to_int(text, out) || out < lo || out > hi) {
    error = flag + " takes an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
            ", got `" + text + "`";
    return false;
  }
  return true;
}

std::optional<std::pair<std::int32_t, std::int32_t>> parse_range(const std::string& text,
                                                                 std::string& error) {
  const auto colon = text.find(':');
  long long a = 0, b = 0;
  if (colon == std::string::npos || !to_int(text.substr(0, colon), a) ||
      !to_int(text.substr(colon + 1), b) || a < 0 || b <= a || b > 1000000) {
    error = "a layer range is START:END with 0 <= START < END, got `" + text + "`";
    return std::nullopt;
  }
  return std::make_pair(static_cast<std::int32_t>(a), static_cast<std::int32_t>(b));
}

std::optional<std::vector<std::pair<std::int32_t, std::int32_t>>> parse_split(
    const std::string& text, std::string& error) {
  std::vector<std::pair<std::int32_t, std::int32_t>> out;
  std::size_t from = 0;
  while (from <= text.size()) {
    const auto comma = text.find(',', from);
    const std::string part = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    auto r = parse_range(part, error);
    if (!r) return std::nullopt;
    if (!out.empty() && out.back().second != r->first) {
      error = "the ranges of --split must be contiguous: " + std::to_string(out.back().second) +
              " is followed by " + std::to_string(r->first);
      return std::nullopt;
    }
    if (out.empty() && r->first != 0) {
      error = "the first range of --split must start at layer 0";
      return std::nullopt;
    }
    out.push_back(*r);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

std::optional<std::vector<std::int32_t>> parse_gpu_layers(const std::string& text, std::string& error) {
  std::vector<std::int32_t> out;
  std::size_t from = 0;
  while (true) {
    const auto comma = text.find(',', from);
    const std::string part = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    long long n = 0;
    if (!to_int(part, n) || n < 0 || n > (1 << 20)) {
      error = "--n-gpu-layers takes an integer from 0 to " + std::to_string(1 << 20) +
              ", or one per stage of --split (N,N,...), got `" + text + "`";
      return std::nullopt;
    }
    out.push_back(static_cast<std::int32_t>(n));
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

std::string link_security(const std::string& key_file, bool insecure_plain,
                          const std::vector<std::pair<std::string, net::Endpoint>>& links,
                          std::optional<net::TlsKey>& key) {
  if (!key_file.empty() && insecure_plain) return "--key and --insecure-plain exclude each other";
  if (key_file.empty()) {
    for (const auto& [flag, endpoint] : links) {
      if (std::string why = net::plain_refused(endpoint, flag, insecure_plain); !why.empty()) return why;
    }
    return {};
  }
  std::string error;
  key = net::load_key(key_file, error);
  return key ? std::string() : error;
}

}  // namespace worker::stage
