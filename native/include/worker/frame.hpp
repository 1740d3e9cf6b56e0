// The worker's wire frame for a block of hidden states (n_tokens x n_embd).
//
// Layout, all integers little-endian whatever the host:
//
//   offset  size  field
//        0     4  magic "WKHS"
//        4     2  version (kProtocolVersion)
//        6     2  dtype (1 = float32)
//        8     4  n_tokens
//       12     4  n_embd
//       16     8  payload size in bytes (n_tokens * n_embd * 4)
//       24     8  checksum: FNV-1a 64 of bytes 0..23, then of the payload
//       32     -  payload: the values row by row, each as its IEEE-754
//                 binary32 bit pattern
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace worker {

// Bumped whenever the frame layout (or anything else on the wire) changes;
// `worker --version` reports it so peers can refuse a mismatch.
inline constexpr std::uint16_t kProtocolVersion = 1;

inline constexpr std::array<std::uint8_t, 4> kFrameMagic{'W', 'K', 'H', 'S'};
inline constexpr std::size_t kFrameHeaderSize = 32;

enum class DType : std::uint16_t { kFloat32 = 1 };

struct HiddenState {
  std::uint32_t n_tokens = 0;
  std::uint32_t n_embd = 0;
  std::vector<float> values;  // row-major, n_tokens * n_embd
};

// n_tokens x n_embd values from SplitMix64(seed), row by row.
HiddenState make_test_hidden_state(std::uint32_t n_tokens,
                                   std::uint32_t n_embd, std::uint64_t seed);

// Throws std::invalid_argument when values.size() != n_tokens * n_embd.
std::vector<std::uint8_t> encode_frame(const HiddenState& state);

struct DecodedFrame {
  std::optional<HiddenState> state;  // empty when the frame is rejected
  std::uint64_t checksum = 0;        // as stored in the header
  std::string error;                 // why it was rejected
};

// Never throws on bad input: a peer's bytes are data, not a programming error.
DecodedFrame decode_frame(const std::uint8_t* data, std::size_t size);

}  // namespace worker
