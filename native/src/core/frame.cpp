#include "worker/frame.hpp"

#include <algorithm>
#include <cmath>
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
constexpr std::size_t kOffKind = 8;
constexpr std::size_t kOffReserved = 10;
constexpr std::size_t kOffTokens = 12;
constexpr std::size_t kOffEmbd = 16;
constexpr std::size_t kOffSeq = 20;
constexpr std::size_t kOffStep = 24;
constexpr std::size_t kOffNext = 28;
constexpr std::size_t kOffPayload = 32;
constexpr std::size_t kOffChecksum = 40;

std::uint64_t frame_checksum(const std::uint8_t* frame, std::size_t payload) {
  const std::uint64_t head = fnv1a64(frame, kOffChecksum);
  return fnv1a64(frame + kFrameHeaderSize, payload, head);
}

std::size_t dtype_size(DType dtype) { return dtype == DType::kBytes ? 1 : 4; }

std::vector<std::int32_t> positions_from(std::int32_t pos0, std::uint32_t n) {
  std::vector<std::int32_t> out(n);
  for (std::uint32_t i = 0; i < n; ++i) out[i] = pos0 + static_cast<std::int32_t>(i);
  return out;
}

}  // namespace

const char* kind_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::kTokens: return "tokens";
    case FrameKind::kState: return "state";
    case FrameKind::kLogits: return "logits";
    case FrameKind::kEnd: return "end";
    case FrameKind::kError: return "error";
    case FrameKind::kStatePart: return "state part";
  }
  return "unknown";
}

DType dtype_of(FrameKind kind) {
  switch (kind) {
    case FrameKind::kTokens: return DType::kInt32;
    case FrameKind::kError: return DType::kBytes;
    default: return DType::kFloat32;
  }
}

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

Frame tokens_frame(std::uint32_t seq_id, std::uint32_t step, std::int32_t pos0,
                   std::vector<std::int32_t> tokens) {
  Frame f;
  f.kind = FrameKind::kTokens;
  f.seq_id = seq_id;
  f.step = step;
  f.n_tokens = static_cast<std::uint32_t>(tokens.size());
  f.n_embd = 1;
  f.positions = positions_from(pos0, f.n_tokens);
  f.tokens = std::move(tokens);
  return f;
}

Frame state_frame(FrameKind kind, std::uint32_t seq_id, std::uint32_t step,
                  std::int32_t pos0, const HiddenState& state) {
  Frame f;
  f.kind = kind;
  f.seq_id = seq_id;
  f.step = step;
  f.n_tokens = state.n_tokens;
  f.n_embd = state.n_embd;
  f.positions = positions_from(pos0, state.n_tokens);
  f.values = state.values;
  return f;
}

Frame end_frame(std::uint32_t seq_id) {
  Frame f;
  f.kind = FrameKind::kEnd;
  f.seq_id = seq_id;
  return f;
}

Frame error_frame(std::uint32_t seq_id, std::string message) {
  Frame f;
  f.kind = FrameKind::kError;
  f.seq_id = seq_id;
  f.n_tokens = 1;
  f.n_embd = static_cast<std::uint32_t>(message.size());
  f.positions = {0};
  f.text = std::move(message);
  return f;
}

std::vector<std::uint8_t> encode_frame(const Frame& f) {
  const DType dtype = dtype_of(f.kind);
  const std::size_t count = static_cast<std::size_t>(f.n_tokens) * f.n_embd;
  const std::size_t have = dtype == DType::kFloat32 ? f.values.size()
                           : dtype == DType::kInt32 ? f.tokens.size()
                                                    : f.text.size();
  if (have != count || f.positions.size() != f.n_tokens) {
    throw std::invalid_argument(std::string(kind_name(f.kind)) + " frame holds " +
                                std::to_string(have) + " values and " +
                                std::to_string(f.positions.size()) + " positions, dims say " +
                                std::to_string(f.n_tokens) + "x" + std::to_string(f.n_embd));
  }
  const std::size_t payload = 4 * static_cast<std::size_t>(f.n_tokens) + count * dtype_size(dtype);
  std::vector<std::uint8_t> frame(kFrameHeaderSize + payload);
  std::uint8_t* p = frame.data();
  std::memcpy(p, kFrameMagic.data(), kFrameMagic.size());
  put_le(p + kOffVersion, kProtocolVersion, 2);
  put_le(p + kOffDType, static_cast<std::uint16_t>(dtype), 2);
  put_le(p + kOffKind, static_cast<std::uint16_t>(f.kind), 2);
  put_le(p + kOffReserved, 0, 2);
  put_le(p + kOffTokens, f.n_tokens, 4);
  put_le(p + kOffEmbd, f.n_embd, 4);
  put_le(p + kOffSeq, f.seq_id, 4);
  put_le(p + kOffStep, f.step, 4);
  const bool ring = f.kind == FrameKind::kTokens || f.kind == FrameKind::kState;
  put_le(p + kOffNext, static_cast<std::uint32_t>(ring ? f.ring_steps : f.next_token), 4);
  put_le(p + kOffPayload, payload, 8);
  std::uint8_t* out = p + kFrameHeaderSize;
  for (std::int32_t pos : f.positions) {
    put_le(out, static_cast<std::uint32_t>(pos), 4);
    out += 4;
  }
  if (dtype == DType::kFloat32) {
    for (float v : f.values) {
      put_le(out, float_bits(v), 4);
      out += 4;
    }
  } else if (dtype == DType::kInt32) {
    for (std::int32_t t : f.tokens) {
      put_le(out, static_cast<std::uint32_t>(t), 4);
      out += 4;
    }
  } else if (!f.text.empty()) {
    std::memcpy(out, f.text.data(), f.text.size());
  }
  put_le(p + kOffChecksum, frame_checksum(p, payload), 8);
  return frame;
}

std::string parse_header(const std::uint8_t* data, std::size_t size, FrameHeader& h) {
  if (data == nullptr || size < kFrameHeaderSize) {
    return "frame too short: " + std::to_string(size) + " bytes, header is " +
           std::to_string(kFrameHeaderSize);
  }
  if (std::memcmp(data, kFrameMagic.data(), kFrameMagic.size()) != 0) {
    return "bad magic (not a worker frame)";
  }
  const auto version = get_le(data + kOffVersion, 2);
  if (version != kProtocolVersion) {
    return "protocol version " + std::to_string(version) + ", expected " +
           std::to_string(kProtocolVersion);
  }
  const auto kind = get_le(data + kOffKind, 2);
  if (kind < 1 || kind > 6) return "unknown frame kind " + std::to_string(kind);
  h.kind = static_cast<FrameKind>(kind);
  const auto dtype = get_le(data + kOffDType, 2);
  if (dtype != static_cast<std::uint16_t>(dtype_of(h.kind))) {
    return "dtype " + std::to_string(dtype) + " does not fit a " + kind_name(h.kind) + " frame";
  }
  h.dtype = static_cast<DType>(dtype);
  if (get_le(data + kOffReserved, 2) != 0) return "reserved header field is not 0";
  h.n_tokens = static_cast<std::uint32_t>(get_le(data + kOffTokens, 4));
  h.n_embd = static_cast<std::uint32_t>(get_le(data + kOffEmbd, 4));
  h.seq_id = static_cast<std::uint32_t>(get_le(data + kOffSeq, 4));
  h.step = static_cast<std::uint32_t>(get_le(data + kOffStep, 4));
  h.next_token = static_cast<std::int32_t>(static_cast<std::uint32_t>(get_le(data + kOffNext, 4)));
  h.payload = get_le(data + kOffPayload, 8);
  h.checksum = get_le(data + kOffChecksum, 8);
  // 32-bit dims multiply to at most 2^64 - 2^33 + 1; times 4 could wrap, so
  // bound the dims first.
  const std::uint64_t count = static_cast<std::uint64_t>(h.n_tokens) * h.n_embd;
  const std::uint64_t expect = count > kMaxPayloadBytes
                                   ? 0
                                   : 4ULL * h.n_tokens + count * dtype_size(h.dtype);
  if (count > kMaxPayloadBytes || expect > kMaxPayloadBytes) {
    return "frame dims " + std::to_string(h.n_tokens) + "x" + std::to_string(h.n_embd) +
           " exceed the payload limit of " + std::to_string(kMaxPayloadBytes) + " bytes";
  }
  if (h.payload != expect) {
    return "payload size " + std::to_string(h.payload) + " does not match dims " +
           std::to_string(h.n_tokens) + "x" + std::to_string(h.n_embd);
  }
  const bool rows_ok = h.kind == FrameKind::kEnd     ? h.n_tokens == 0
                       : h.kind == FrameKind::kError ? h.n_tokens == 1
                       : h.kind == FrameKind::kTokens ? h.n_tokens > 0 && h.n_embd == 1
                                                      : h.n_tokens > 0 && h.n_embd > 0;
  if (!rows_ok) {
    return std::string(kind_name(h.kind)) + " frame with dims " + std::to_string(h.n_tokens) +
           "x" + std::to_string(h.n_embd);
  }
  return {};
}

std::string check_limits(const FrameHeader& h, const FrameLimits& limits) {
  const std::uint32_t width_limit = h.kind == FrameKind::kError ? kMaxErrorText : limits.max_width;
  if (h.n_tokens <= limits.max_rows && h.n_embd <= width_limit) return {};
  return std::string(kind_name(h.kind)) + " frame header declares " + std::to_string(h.n_tokens) +
         " rows of " + std::to_string(h.n_embd) + " (" + std::to_string(h.payload) +
         " payload bytes), over this end's limit of " + std::to_string(limits.max_rows) + " rows of " +
         std::to_string(width_limit) + "; refused before reading it";
}

void digest_row(const float* row, std::uint32_t n, float* out) {
  // A block at a time through a buffer on the stack: the bytes in wire order
  // without a copy of the whole row (32,000 floats for a 32 k vocabulary).
  std::uint8_t bytes[1024];
  std::uint64_t h = kFnv1a64Offset;
  for (std::uint32_t i = 0; i < n;) {
    const std::uint32_t m = std::min<std::uint32_t>(n - i, sizeof bytes / 4);
    for (std::uint32_t j = 0; j < m; ++j, ++i) {
      std::uint32_t b = 0;
      std::memcpy(&b, &row[i], 4);
      for (std::uint32_t k = 0; k < 4; ++k) bytes[4 * j + k] = static_cast<std::uint8_t>(b >> (8 * k));
    }
    h = fnv1a64(bytes, 4 * static_cast<std::size_t>(m), h);
  }
  for (std::uint32_t k = 0; k < kDigestWidth; ++k) {
    out[k] = static_cast<float>((h >> (16 * k)) & 0xffffU);  // exact: below 2^24
  }
}

std::string first_non_finite(const Frame& f) {
  for (std::size_t i = 0; i < f.values.size(); ++i) {
    const float v = f.values[i];
    if (std::isfinite(v)) continue;
    const std::size_t width = f.n_embd == 0 ? 1 : f.n_embd;
    return "row " + std::to_string(i / width) + " column " + std::to_string(i % width) + " is " +
           (std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
  }
  return {};
}

DecodedFrame decode_frame(const std::uint8_t* data, std::size_t size) {
  DecodedFrame out;
  FrameHeader h;
  out.error = parse_header(data, size, h);
  if (size >= kFrameHeaderSize && data != nullptr) out.checksum = get_le(data + kOffChecksum, 8);
  if (!out.error.empty()) return out;
  if (size - kFrameHeaderSize != h.payload) {
    out.error = "frame size " + std::to_string(size) + " bytes, header says " +
                std::to_string(kFrameHeaderSize + h.payload);
    return out;
  }
  if (frame_checksum(data, static_cast<std::size_t>(h.payload)) != h.checksum) {
    out.error = "checksum mismatch (frame corrupted)";
    return out;
  }
  Frame f;
  f.kind = h.kind;
  f.seq_id = h.seq_id;
  f.step = h.step;
  (f.kind == FrameKind::kTokens || f.kind == FrameKind::kState ? f.ring_steps : f.next_token) =
      h.next_token;
  f.n_tokens = h.n_tokens;
  f.n_embd = h.n_embd;
  const std::uint8_t* in = data + kFrameHeaderSize;
  f.positions.resize(h.n_tokens);
  for (auto& pos : f.positions) {
    pos = static_cast<std::int32_t>(static_cast<std::uint32_t>(get_le(in, 4)));
    in += 4;
  }
  const auto count = static_cast<std::size_t>(h.n_tokens) * h.n_embd;
  if (h.dtype == DType::kFloat32) {
    f.values.resize(count);
    for (float& v : f.values) {
      v = bits_float(static_cast<std::uint32_t>(get_le(in, 4)));
      in += 4;
    }
  } else if (h.dtype == DType::kInt32) {
    f.tokens.resize(count);
    for (auto& t : f.tokens) {
      t = static_cast<std::int32_t>(static_cast<std::uint32_t>(get_le(in, 4)));
      in += 4;
    }
  } else {
    f.text.assign(reinterpret_cast<const char*>(in), count);
  }
  out.frame = std::move(f);
  return out;
}

std::string check_frame(const Frame& frame, FrameKind kind, std::uint32_t n_embd) {
  if (frame.kind != kind) {
    return std::string("expected a ") + kind_name(kind) + " frame, got a " +
           kind_name(frame.kind) + " frame";
  }
  if (n_embd != 0 && frame.n_embd != n_embd) {
    return std::string(kind_name(kind)) + " frame is " + std::to_string(frame.n_embd) +
           " floats wide, expected " + std::to_string(n_embd) + " (wrong width)";
  }
  return {};
}

}  // namespace worker
