// Argument reading for the stage and driver modes: `--flag VALUE` pairs,
// each value parsed strictly, every problem one usage line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "worker/tls.hpp"

namespace worker::stage {

class Args {
 public:
  explicit Args(const std::vector<std::string>& args) : args_(args) {}
  bool done() const { return i_ >= args_.size(); }
  const std::string& flag() { return args_[i_++]; }
  // The value after the flag just read; false (and error set) when missing.
  bool value(const std::string& flag, std::string& out);
  bool integer(const std::string& flag, long long lo, long long hi, long long& out);
  std::string error;

 private:
  const std::vector<std::string>& args_;
  std::size_t i_ = 0;
};

// "A:B" with 0 <= A < B: the layers [A, B).
std::optional<std::pair<std::int32_t, std::int32_t>> parse_range(const std::string& text,
                                                                 std::string& error);
// "A:B,B:C,...": contiguous ranges.
std::optional<std::vector<std::pair<std::int32_t, std::int32_t>>> parse_split(
    const std::string& text, std::string& error);

// "N" or "N,N,...": --n-gpu-layers, each 0 <= N <= 2^20.
std::optional<std::vector<std::int32_t>> parse_gpu_layers(const std::string& text, std::string& error);

// --key FILE and --insecure-plain for a stage's or a driver's links (flag and
// endpoint each): loads the key, or, without one, requires every endpoint to
// be loopback. Empty when the links may go ahead, else one line naming --key.
std::string link_security(const std::string& key_file, bool insecure_plain,
                          const std::vector<std::pair<std::string, net::Endpoint>>& links,
                          std::optional<net::TlsKey>& key);

}  // namespace worker::stage
