// The worker's wire frame (protocol 3): one message between a pipeline's
// driver and its stages, or between two stages.
//
// Layout, all integers little-endian whatever the host (docs/FORMATS.md):
//
//   offset  size  field
//        0     4  magic "WKHS"
//        4     2  version (kProtocolVersion)
//        6     2  dtype: 1 float32, 2 int32, 3 bytes (UTF-8 text)
//        8     2  kind: 1 tokens, 2 boundary state, 3 logits, 4 end, 5 error,
//                 6 state part (the rows of a step's boundary state that are
//                 decoded before its last ones: forwarded at once, never
//                 answered; the step's state frame follows and is answered)
//       10     2  reserved, 0
//       12     4  n_tokens (rows)
//       16     4  n_embd (row width: the residual width n_embd_boundary of a
//                 state, n_vocab of logits, 1 for tokens, the text's length
//                 in bytes for an error)
//       20     4  sequence id
//       24     4  step (0 for the prompt, then one per generated token)
//       28     4  a logits frame's next token (its greedy choice); a tokens
//                 or state frame's ring steps (the greedy steps a ring still
//                 generates after this one: the last stage feeds its choice
//                 back to the first stage while they are > 0); else -1
//       32     8  payload size in bytes
//       40     8  checksum: FNV-1a 64 of bytes 0..39, then of the payload
//       48     -  payload: n_tokens int32 positions, then n_tokens * n_embd
//                 values of dtype (float32 as its IEEE-754 bit pattern)
//
// An end frame has no rows; an error frame has one row (position 0) of text.
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
// 1: hidden-state frames only. 2: kinds, positions, sequence id and step.
// 3: state parts (a step's boundary state streamed as it is decoded).
// 4: ring steps (a chain that feeds its greedy tokens back to its first stage).
inline constexpr std::uint16_t kProtocolVersion = 4;

inline constexpr std::array<std::uint8_t, 4> kFrameMagic{'W', 'K', 'H', 'S'};
inline constexpr std::size_t kFrameHeaderSize = 48;
// Refused before any allocation: a corrupt size field must not exhaust memory.
inline constexpr std::uint64_t kMaxPayloadBytes = 1ULL << 31;

enum class DType : std::uint16_t { kFloat32 = 1, kInt32 = 2, kBytes = 3 };
enum class FrameKind : std::uint16_t {
  kTokens = 1,
  kState = 2,
  kLogits = 3,
  kEnd = 4,
  kError = 5,
  kStatePart = 6,
};

const char* kind_name(FrameKind kind);

struct HiddenState {
  std::uint32_t n_tokens = 0;
  std::uint32_t n_embd = 0;
  std::vector<float> values;  // row-major, n_tokens * n_embd
};

// n_tokens x n_embd values from SplitMix64(seed), row by row.
HiddenState make_test_hidden_state(std::uint32_t n_tokens,
                                   std::uint32_t n_embd, std::uint64_t seed);

struct Frame {
  FrameKind kind = FrameKind::kEnd;
  std::uint32_t seq_id = 0;
  std::uint32_t step = 0;
  std::int32_t next_token = -1;  // logits
  std::int32_t ring_steps = -1;  // tokens, state: greedy steps to generate after this one
  std::uint32_t n_tokens = 0;
  std::uint32_t n_embd = 0;
  std::vector<std::int32_t> positions;  // n_tokens
  std::vector<float> values;            // state, logits: n_tokens * n_embd
  std::vector<std::int32_t> tokens;     // tokens: n_tokens
  std::string text;                     // error: the message
};

// Frames of each kind, consistent by construction.
Frame tokens_frame(std::uint32_t seq_id, std::uint32_t step, std::int32_t pos0,
                   std::vector<std::int32_t> tokens);
Frame state_frame(FrameKind kind, std::uint32_t seq_id, std::uint32_t step,
                  std::int32_t pos0, const HiddenState& state);
Frame end_frame(std::uint32_t seq_id);
Frame error_frame(std::uint32_t seq_id, std::string message);

// The frame's dtype, from its kind.
DType dtype_of(FrameKind kind);

// Throws std::invalid_argument when the frame is inconsistent (sizes that do
// not match the dims, data of the wrong dtype for the kind).
std::vector<std::uint8_t> encode_frame(const Frame& frame);

// The fixed header, checked on its own so a reader knows how many payload
// bytes follow (or refuses before reading them).
struct FrameHeader {
  FrameKind kind = FrameKind::kEnd;
  DType dtype = DType::kFloat32;
  std::uint32_t n_tokens = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t seq_id = 0;
  std::uint32_t step = 0;
  std::int32_t next_token = -1;  // offset 28, raw: a logits frame's next token, else ring steps
  std::uint64_t payload = 0;
  std::uint64_t checksum = 0;
};

// Empty on success, else why the header is refused (never throws).
std::string parse_header(const std::uint8_t* data, std::size_t size, FrameHeader& out);

// What one end of a link takes from its peer, checked on the header before a
// byte of payload is allocated or read: a peer's declared size must not cost
// more memory than the receiver's own context and width allow.
// The defaults take anything up to kMaxPayloadBytes.
inline constexpr std::uint32_t kMaxErrorText = 64 * 1024;  // an error frame's text
struct FrameLimits {
  std::uint32_t max_rows = 0xffffffffU;   // rows of any frame (a stage: its --ctx)
  std::uint32_t max_width = 0xffffffffU;  // floats or tokens per row, error text aside
};
// Empty when the header fits the limits, else why it is refused.
std::string check_limits(const FrameHeader& header, const FrameLimits& limits);

struct DecodedFrame {
  std::optional<Frame> frame;  // empty when the frame is rejected
  std::uint64_t checksum = 0;  // as stored in the header
  std::string error;           // why it was rejected
};

// Never throws on bad input: a peer's bytes are data, not a programming error.
DecodedFrame decode_frame(const std::uint8_t* data, std::size_t size);

// The first row and column of a float frame's values that is NaN or
// infinite, as "row R column C is nan"; empty when every value is finite.
std::string first_non_finite(const Frame& frame);

// A frame that decoded but is not what this end expects: another kind, or a
// row width other than the model's (n_embd 0: any). Empty when it fits.
std::string check_frame(const Frame& frame, FrameKind kind, std::uint32_t n_embd);

// A logits row as the last stage answers it in digest mode: the FNV-1a 64 of
// the row's float32 bytes (little-endian), as kDigestWidth floats of 16 bits
// each, low word first (every one exact in a float).
inline constexpr std::uint32_t kDigestWidth = 4;
void digest_row(const float* row, std::uint32_t n, float* out);

}  // namespace worker
