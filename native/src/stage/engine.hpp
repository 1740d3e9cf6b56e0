// One stage of a pipeline: a layer range of a GGUF model loaded through the
// patched llama.cpp (patches 0001 range loading and 0002 boundary I/O), and
// the decode of one frame into the next.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker/frame.hpp"
#include "worker/net.hpp"

struct llama_model;
struct llama_context;

namespace worker::stage {

struct EngineOptions {
  std::string model;
  std::int32_t layer_start = 0;  // 0/0: the whole model
  std::int32_t layer_end = 0;
  int threads = 1;
  std::uint32_t n_ctx = 256;
  std::uint32_t n_batch = 64;  // llama.cpp's n_batch and n_ubatch
  // What the last stage answers (every stage of a pipeline must agree with
  // its driver; the reply is checked against it):
  //   all:    the logits of every row (the default);
  //   last:   the logits of the last row only (the others are not computed);
  //   digest: the last row's greedy token and the FNV-1a 64 of its logits
  //           (kDigestWidth exact floats, 16 bits each, low word first)
  //           instead of n_vocab floats: the driver can still compare the
  //           bits with a reference run, at 16 bytes a step.
  enum class Reply { kAll, kLast, kDigest };
  Reply reply = Reply::kAll;
  // Layers llama.cpp places on its devices (llama_model_params.n_gpu_layers):
  // 0 (the default) keeps everything on the CPU backend, as before; N > the
  // model's n_layer offloads every layer and the output to the first device
  // (Vulkan, CUDA, ...) the build has. A partial N counts within the range:
  // the last N layers it holds (the output, on the last stage, counting as
  // the layer after the last).
  std::int32_t n_gpu_layers = 0;
  // llama.cpp's op_offload: with a device, large-batch operations on weights
  // kept on the CPU run on the device (--check-local's reference turns it off
  // when the stages holding its CPU layers run without a device).
  bool op_offload = true;
  // llama.cpp's flash attention (llama_context_params.flash_attn_type): auto
  // (its default: on where the backends support it), on or off. On a CPU
  // decoding one token at a depth of hundreds, off can be much faster.
  enum class FlashAttn { kAuto, kOn, kOff };
  FlashAttn flash_attn = FlashAttn::kAuto;
};

const char* reply_name(EngineOptions::Reply reply);
bool parse_reply(const std::string& text, EngineOptions::Reply& out);
const char* flash_attn_name(EngineOptions::FlashAttn mode);
bool parse_flash_attn(const std::string& text, EngineOptions::FlashAttn& out);

class Engine {
 public:
  // Loads the range; on failure returns null with a kExitModel error.
  static std::unique_ptr<Engine> load(const EngineOptions& options, WireError& error);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  bool first() const { return layer_start_ == 0; }
  bool last() const { return layer_end_ == n_layer_; }
  std::int32_t layer_start() const { return layer_start_; }
  std::int32_t layer_end() const { return layer_end_; }
  std::int32_t n_layer() const { return n_layer_; }
  std::uint32_t n_vocab() const { return n_vocab_; }
  // Floats per token of the boundary state this stage takes in (when not
  // first: llama_model_n_embd_inp()) and hands out (when not last:
  // llama_model_n_embd_out()).
  std::uint32_t n_embd_boundary() const { return n_embd_boundary_; }
  std::int32_t n_past() const { return n_past_; }
  // The context in tokens: no frame this stage takes or relays has more rows.
  std::uint32_t n_ctx() const;
  // What this stage takes from the previous stage or the driver, and from the
  // next stage's replies: checked on each header before its payload is read.
  FrameLimits limits_up() const { return {n_ctx(), first() ? 1U : n_embd_boundary_}; }
  FrameLimits limits_down() const { return {n_ctx(), reply_width()}; }
  std::string range_text() const;  // "[2, 4)"
  // The width of this stage's reply rows when last: n_vocab or kDigestWidth.
  std::uint32_t reply_width() const;

  // Takes the rows of each n_batch chunk of a frame but its last, as a state
  // part, as soon as they are decoded: a stage before the last forwards them
  // while it decodes the next chunk (a prompt streams down the chain).
  using PartSink = std::function<std::optional<WireError>(const Frame& part)>;
  // Takes the greedy next token (last stage, a step's frame) as soon as it is
  // known, before the step's rows are copied or digested: a ring sends it on
  // while the reply is still being made.
  using TokenSink = std::function<std::optional<WireError>(std::int32_t token)>;

  // Decodes a tokens frame (first stage), a boundary-state frame or a state
  // part, whose positions must continue this stage's sequence, into a
  // boundary-state frame (not last; a state part for a state part) or a
  // logits frame with the greedy next token (last). A part ends no step: the
  // last stage hands out its rows with --reply all only, and no next token.
  // With a sink (not last), every chunk but the last goes to it and out holds
  // the last one. With on_token (last), the next token goes to it first.
  std::optional<WireError> run(const Frame& in, Frame& out, const PartSink& sink = nullptr,
                               const TokenSink& on_token = nullptr);

  // The sequence's state (llama_state_seq_get_data), and its restore.
  std::vector<std::uint8_t> save_sequence() const;
  std::optional<WireError> restore_sequence(const std::vector<std::uint8_t>& data,
                                            std::int32_t n_past);

 private:
  Engine() = default;
  llama_model* model_ = nullptr;
  llama_context* ctx_ = nullptr;
  std::int32_t layer_start_ = 0;
  std::int32_t layer_end_ = 0;
  std::int32_t n_layer_ = 0;
  std::uint32_t n_vocab_ = 0;
  std::uint32_t n_embd_boundary_ = 0;
  std::int32_t n_past_ = 0;
  EngineOptions::Reply reply_ = EngineOptions::Reply::kAll;
};

// Routes llama.cpp's and ggml's log into our one-line errors (everything is
// shown with WORKER_LLAMA_LOG=1) and initialises the backend; idempotent.
void init_llama();

// The greedy choice: the first index of the largest value.
std::int32_t argmax(const float* row, std::uint32_t n);

}  // namespace worker::stage
