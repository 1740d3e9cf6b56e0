#include "checkpoint.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "worker/checksum.hpp"
#include "worker/sha256.hpp"

namespace worker::stage {
namespace {

constexpr char kMagic[4] = {'W', 'K', 'C', 'P'};
constexpr std::uint32_t kFormat = 1;
constexpr std::size_t kHeader = 4 + 4 * 6 + 64 + 64 + 8 + 8;

std::string& fingerprint() {
  static std::string value;
  return value;
}

// The model's sha256, computed once per path.
std::optional<std::string> model_sha256(const std::string& model) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  auto hex = sha256_file_hex(model);
  if (hex) cache[model] = *hex;
  return hex;
}

void put(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint64_t get(const std::uint8_t* in, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
  return v;
}

WireError refuse(const std::string& file, const std::string& why) {
  return WireError{kExitCheckpoint, "checkpoint " + file + " refused: " + why};
}

std::string range(std::int64_t a, std::int64_t b) {
  return "[" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

}  // namespace

void set_stack_fingerprint(const std::string& value) { fingerprint() = value; }

std::optional<WireError> save_checkpoint(const std::string& file, const std::string& model,
                                         const Engine& engine, const Replay& last) {
  const std::uint32_t step = last.step;
  const auto sha = model_sha256(model);
  if (!sha) return WireError{kExitCheckpoint, "cannot hash the model " + model};
  const std::vector<std::uint8_t> state = engine.save_sequence();
  std::vector<std::uint8_t> out(kMagic, kMagic + 4);
  put(out, kFormat, 4);
  put(out, static_cast<std::uint32_t>(engine.layer_start()), 4);
  put(out, static_cast<std::uint32_t>(engine.layer_end()), 4);
  put(out, static_cast<std::uint32_t>(engine.n_layer()), 4);
  put(out, step, 4);
  put(out, static_cast<std::uint32_t>(engine.n_past()), 4);
  out.insert(out.end(), sha->begin(), sha->end());
  std::string fp = fingerprint();
  fp.resize(64, '0');
  out.insert(out.end(), fp.begin(), fp.end());
  put(out, state.size(), 8);
  put(out, fnv1a64(state.data(), state.size()), 8);
  out.insert(out.end(), state.begin(), state.end());
  const std::vector<std::uint8_t> reply = encode_frame(last.reply);
  put(out, last.input_hash, 8);
  put(out, reply.size(), 8);
  out.insert(out.end(), reply.begin(), reply.end());
  const std::string tmp = file + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
    if (!f) return WireError{kExitCheckpoint, "cannot write checkpoint " + tmp};
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) {
    return WireError{kExitCheckpoint, "cannot rename " + tmp + " to " + file};
  }
  return std::nullopt;
}

std::optional<WireError> resume_checkpoint(const std::string& file, const std::string& model,
                                           Engine& engine, Replay& last) {
  std::ifstream f(file, std::ios::binary);
  if (!f) return refuse(file, "cannot read it");
  const std::vector<std::uint8_t> data((std::istreambuf_iterator<char>(f)),
                                       std::istreambuf_iterator<char>());
  if (data.size() < kHeader || std::string(data.begin(), data.begin() + 4) != "WKCP") {
    return refuse(file, "not a worker checkpoint");
  }
  const std::uint8_t* p = data.data() + 4;
  if (get(p, 4) != kFormat) return refuse(file, "format " + std::to_string(get(p, 4)) + ", expected 1");
  const auto start = static_cast<std::int32_t>(get(p + 4, 4));
  const auto end = static_cast<std::int32_t>(get(p + 8, 4));
  const auto n_layer = static_cast<std::int32_t>(get(p + 12, 4));
  const auto step = static_cast<std::uint32_t>(get(p + 16, 4));
  const auto n_past = static_cast<std::int32_t>(get(p + 20, 4));
  const std::string sha(data.begin() + 28, data.begin() + 92);
  const std::string fp(data.begin() + 92, data.begin() + 156);
  const std::uint64_t size = get(data.data() + 156, 8);
  const std::uint64_t sum = get(data.data() + 164, 8);
  if (start != engine.layer_start() || end != engine.layer_end() || n_layer != engine.n_layer()) {
    return refuse(file, "it is for layers " + range(start, end) + " of " + std::to_string(n_layer) +
                            ", this stage runs " + engine.range_text() + " of " +
                            std::to_string(engine.n_layer()));
  }
  const auto model_sha = model_sha256(model);
  if (!model_sha || *model_sha != sha) {
    return refuse(file, "it is for the model with sha256 " + sha.substr(0, 16) + ", " + model +
                            " has " + (model_sha ? model_sha->substr(0, 16) : "none"));
  }
  std::string mine = fingerprint();
  mine.resize(64, '0');
  if (fp != mine) {
    return refuse(file, "it was written with stack fingerprint " + fp.substr(0, 16) +
                            ", this worker has " + mine.substr(0, 16));
  }
  const std::size_t body = data.size() - kHeader;
  if (size > body || body - size < 16) {
    return refuse(file, "truncated: " + std::to_string(body) + " bytes after the header, the state alone is " +
                            std::to_string(size));
  }
  const auto state_begin = data.begin() + static_cast<std::ptrdiff_t>(kHeader);
  const std::vector<std::uint8_t> state(state_begin, state_begin + static_cast<std::ptrdiff_t>(size));
  if (fnv1a64(state.data(), state.size()) != sum) return refuse(file, "checksum mismatch (corrupted)");
  const std::uint8_t* tail = data.data() + kHeader + size;
  const std::uint64_t input_hash = get(tail, 8);
  const std::uint64_t reply_size = get(tail + 8, 8);
  if (reply_size != body - size - 16) return refuse(file, "truncated: the last reply is cut off");
  DecodedFrame reply = decode_frame(tail + 16, static_cast<std::size_t>(reply_size));
  if (!reply.frame) return refuse(file, "its last reply is damaged: " + reply.error);
  if (auto e = engine.restore_sequence(state, n_past)) return e;
  last = Replay{true, step, reply.frame->positions, input_hash, std::move(*reply.frame)};
  return std::nullopt;
}

}  // namespace worker::stage
