// A tiny llama-architecture GGUF model with seeded random weights, written by
// the worker itself (never downloaded) for the stage CTests and the
// self-test's pipeline.two_stage check. Only the public gguf/ggml API is used.
#pragma once

#include <cstdint>
#include <string>

namespace worker::stage {

struct TinyModelSpec {
  std::uint32_t n_layer = 4;
  std::uint32_t n_vocab = 256;
  std::uint32_t n_embd = 128;
  std::uint32_t n_head = 4;
  std::uint32_t n_head_kv = 2;
  std::uint32_t n_ff = 256;
  std::uint32_t n_ctx = 256;
  std::uint64_t seed = 0x7199a11aULL;
  // The matrices' type (norms stay f32); values are drawn in f32 and
  // converted (f16) or quantized (q8_0) by ggml.
  enum class Type { kF32, kF16, kQ8_0 };
  Type type = Type::kF32;
};

// Writes the model to path (the same bytes for the same spec, on any host).
// Returns an empty string on success, else why not.
std::string write_tiny_model(const std::string& path, const TinyModelSpec& spec = {});

// n_vocab and the layer count as the GGUF metadata gives them, and the sum of
// its tensors' sizes (the weights' bytes). Returns why not, or empty.
struct GgufSummary {
  std::uint32_t n_vocab = 0;
  std::uint32_t n_layer = 0;
  std::uint64_t weight_bytes = 0;
  std::string architecture;
};
std::string read_gguf_summary(const std::string& path, GgufSummary& out);

}  // namespace worker::stage
