// A stage's checkpoint: its sequence state (llama_state_seq_get_data) after a
// step, with a header naming what it belongs to, so that another worker
// process on the same layer range resumes from it, and any other refuses it.
//
// File layout (little-endian; docs/FORMATS.md):
//   "WKCP", format u32 (1), layer_start i32, layer_end i32, n_layer i32,
//   step u32, n_past i32, model sha256 (64 hex), stack fingerprint (64 hex),
//   state size u64, state FNV-1a 64 u64, the state bytes, then the last
//   request's FNV-1a 64 (u64) and the reply to it (u64 size, then the reply
//   as a wire frame), so a request replayed after a restart is answered.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine.hpp"
#include "worker/net.hpp"

namespace worker::stage {

// The last request and its reply, so that a request replayed after a
// neighbour restarted is answered again instead of decoded twice.
struct Replay {
  bool valid = false;
  std::uint32_t step = 0;
  std::vector<std::int32_t> positions;
  std::uint64_t input_hash = 0;
  Frame reply;
};

// The stack fingerprint this binary embeds (set once by main) and used for
// checkpoints; a checkpoint of another build of the stack is refused.
void set_stack_fingerprint(const std::string& fingerprint);

// Writes FILE atomically (a temporary file, then rename).
std::optional<WireError> save_checkpoint(const std::string& file, const std::string& model,
                                         const Engine& engine, const Replay& last);

// Checks the header against this stage (range, model, fingerprint) and
// restores the sequence; every refusal is one kExitCheckpoint line.
std::optional<WireError> resume_checkpoint(const std::string& file, const std::string& model,
                                           Engine& engine, Replay& last);

}  // namespace worker::stage
