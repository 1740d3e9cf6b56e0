#include "worker/frame.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>

#include "worker/checksum.hpp"
#include "worker/prng.hpp"

namespace worker {
namespace {

// Explicit byte order: the frame must read the same on any host.
void put_le(std::uint8_t* out, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) {
    out[i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
}

std::uint64_t get_le(const std::uint8_t* in, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    value |= static_cast<std::uint64_t>(in[i]) << (8 * i);
  }
  return value;
}

std::uint32_t float_bits(float f) {
  static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559,
                "the wire format carries IEEE-754 binary32");
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

float bits_float(std::uint32_t bits) {
  float f = 0.0f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Header fields, in layout order, so encode and decode cannot drift apart.
constexpr std::size_t kOffVersion = 4;
constexpr std::size_t kOffDType = 6;
constexpr std::size_t kOffTokens = 8;
constexpr std::size_t kOffEmbd = 12;
constexpr std::size_t kOffPayload = 16;
constexpr std::size_t kOffChecksum = 24;

std::uint64_t frame_checksum(const std::uint8_t* frame, std::size_t payload) {
  const std::uint64_t head = fnv1a64(frame, kOffChecksum);
  return fnv1a64(frame + kFrameHeaderSize, payload, head);
}

}  // namespace

HiddenState make_test_hidden_state(std::uint32_t n_tokens,
                                   std::uint32_t n_embd, std::uint64_t seed) {
  HiddenState state;
  state.n_tokens = n_tokens;
  state.n_embd = n_embd;
  state.values.resize(static_cast<std::size_t>(n_tokens) * n_embd);
  SplitMix64 rng(seed);
  for (float& v : state.values) v = rng.next_signed_unit();
  return state;
}

std::vector<std::uint8_t> encode_frame(const HiddenState& state) {
  const std::size_t count = static_cast<std::size_t>(state.n_tokens) * state.n_embd;
  if (state.values.size() != count) {
    throw std::invalid_argument("hidden state holds " +
                                std::to_string(state.values.size()) +
                                " values, dims say " + std::to_string(count));
  }
  const std::size_t payload = count * sizeof(float);
  std::vector<std::uint8_t> frame(kFrameHeaderSize + payload);
  std::uint8_t* p = frame.data();
  std::memcpy(p, kFrameMagic.data(), kFrameMagic.size());
  put_le(p + kOffVersion, kProtocolVersion, 2);
  put_le(p + kOffDType, static_cast<std::uint16_t>(DType::kFloat32), 2);
  put_le(p + kOffTokens, state.n_tokens, 4);
  put_le(p + kOffEmbd, state.n_embd, 4);
  put_le(p + kOffPayload, payload, 8);
  for (std::size_t i = 0; i < count; ++i) {
    put_le(p + kFrameHeaderSize + 4 * i, float_bits(state.values[i]), 4);
  }
  put_le(p + kOffChecksum, frame_checksum(p, payload), 8);
  return frame;
}

DecodedFrame decode_frame(const std::uint8_t* data, std::size_t size) {
  DecodedFrame out;
  if (data == nullptr || size < kFrameHeaderSize) {
    out.error = "frame too short: " + std::to_string(size) + " bytes, header is " +
                std::to_string(kFrameHeaderSize);
    return out;
  }
  if (std::memcmp(data, kFrameMagic.data(), kFrameMagic.size()) != 0) {
    out.error = "bad magic (not a worker hidden-state frame)";
    return out;
  }
  out.checksum = get_le(data + kOffChecksum, 8);
  const auto version = get_le(data + kOffVersion, 2);
  if (version != kProtocolVersion) {
    out.error = "protocol version " + std::to_string(version) + ", expected " +
                std::to_string(kProtocolVersion);
    return out;
  }
  const auto dtype = get_le(data + kOffDType, 2);
  if (dtype != static_cast<std::uint16_t>(DType::kFloat32)) {
    out.error = "unsupported dtype " + std::to_string(dtype);
    return out;
  }
  const auto n_tokens = static_cast<std::uint32_t>(get_le(data + kOffTokens, 4));
  const auto n_embd = static_cast<std::uint32_t>(get_le(data + kOffEmbd, 4));
  const std::uint64_t payload = get_le(data + kOffPayload, 8);
  // 32-bit dims multiply to at most 2^64 - 2^33 + 1; times 4 could wrap.
  const std::uint64_t count = static_cast<std::uint64_t>(n_tokens) * n_embd;
  if (count > (std::numeric_limits<std::uint64_t>::max() - kFrameHeaderSize) / 4 ||
      payload != count * 4) {
    out.error = "payload size " + std::to_string(payload) + " does not match dims " +
                std::to_string(n_tokens) + "x" + std::to_string(n_embd);
    return out;
  }
  if (size - kFrameHeaderSize != payload) {
    out.error = "frame size " + std::to_string(size) + " bytes, header says " +
                std::to_string(kFrameHeaderSize + payload);
    return out;
  }
  if (frame_checksum(data, static_cast<std::size_t>(payload)) != out.checksum) {
    out.error = "checksum mismatch (frame corrupted)";
    return out;
  }
  HiddenState state;
  state.n_tokens = n_tokens;
  state.n_embd = n_embd;
  state.values.resize(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < state.values.size(); ++i) {
    state.values[i] = bits_float(
        static_cast<std::uint32_t>(get_le(data + kFrameHeaderSize + 4 * i, 4)));
  }
  out.state = std::move(state);
  return out;
}

}  // namespace worker
