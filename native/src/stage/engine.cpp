#include "engine.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "llama.h"
#include "tiny_model.hpp"

namespace worker::stage {
namespace {

// llama.cpp's log: errors are kept for our one-line messages; everything is
// shown only with WORKER_LLAMA_LOG=1.
std::string g_llama_errors;

void log_callback(ggml_log_level level, const char* text, void* /*user*/) {
  if (level == GGML_LOG_LEVEL_ERROR) g_llama_errors += text;
  static const bool verbose = [] {
    const char* v = std::getenv("WORKER_LLAMA_LOG");
    return v != nullptr && std::string(v) == "1";
  }();
  if (verbose) std::fputs(text, stderr);
}

std::string last_llama_error() {
  std::string e = g_llama_errors;
  while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
  const auto nl = e.rfind('\n');
  return nl == std::string::npos ? e : e.substr(nl + 1);
}

bool silent_progress(float /*progress*/, void* /*user*/) { return true; }

WireError model_error(std::string message) { return WireError{kExitModel, std::move(message)}; }

}  // namespace

std::int32_t argmax(const float* row, std::uint32_t n) {
  return n == 0 ? -1 : static_cast<std::int32_t>(std::max_element(row, row + n) - row);
}

const char* reply_name(EngineOptions::Reply reply) {
  switch (reply) {
    case EngineOptions::Reply::kAll: return "all";
    case EngineOptions::Reply::kLast: return "last";
    case EngineOptions::Reply::kDigest: return "digest";
  }
  return "all";
}

const char* flash_attn_name(EngineOptions::FlashAttn mode) {
  switch (mode) {
    case EngineOptions::FlashAttn::kAuto: return "auto";
    case EngineOptions::FlashAttn::kOn: return "on";
    case EngineOptions::FlashAttn::kOff: return "off";
  }
  return "auto";
}

bool parse_flash_attn(const std::string& text, EngineOptions::FlashAttn& out) {
  for (auto m : {EngineOptions::FlashAttn::kAuto, EngineOptions::FlashAttn::kOn, EngineOptions::FlashAttn::kOff}) {
    if (text == flash_attn_name(m)) {
      out = m;
      return true;
    }
  }
  return false;
}

bool parse_reply(const std::string& text, EngineOptions::Reply& out) {
  for (auto r : {EngineOptions::Reply::kAll, EngineOptions::Reply::kLast, EngineOptions::Reply::kDigest}) {
    if (text == reply_name(r)) {
      out = r;
      return true;
    }
  }
  return false;
}

std::uint32_t Engine::reply_width() const {
  return reply_ == EngineOptions::Reply::kDigest ? kDigestWidth : n_vocab_;
}

std::uint32_t Engine::n_ctx() const { return llama_n_ctx(ctx_); }

std::string Engine::range_text() const {
  return "[" + std::to_string(layer_start_) + ", " + std::to_string(layer_end_) + ")";
}

void init_llama() {
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(log_callback, nullptr);
    llama_backend_init();
  });
}

std::unique_ptr<Engine> Engine::load(const EngineOptions& o, WireError& error) {
  init_llama();
  GgufSummary summary;
  if (std::string why = read_gguf_summary(o.model, summary); !why.empty()) {
    error = model_error(why);
    return nullptr;
  }
  const auto n_layer = static_cast<std::int32_t>(summary.n_layer);
  std::int32_t start = o.layer_start;
  std::int32_t end = o.layer_end == 0 && start == 0 ? n_layer : o.layer_end;
  if (start < 0 || start >= end || end > n_layer) {
    error = model_error("layer range [" + std::to_string(start) + ", " + std::to_string(end) +
                        ") does not fit the model's " + std::to_string(n_layer) + " layers");
    return nullptr;
  }
  std::unique_ptr<Engine> e(new Engine());
  e->layer_start_ = start;
  e->layer_end_ = end;
  e->n_layer_ = n_layer;
  e->reply_ = o.reply;

  // The whole range loads the whole model the ordinary way (layer_end -1).
  const bool whole = start == 0 && end == n_layer;
  llama_model_params mp = llama_model_default_params();
  mp.progress_callback = silent_progress;
  ggml_backend_dev_t cpu_only[] = {nullptr};
  if (o.n_gpu_layers > 0) {
    mp.n_gpu_layers = o.n_gpu_layers;  // mp.devices stays null: every device built in
  } else {
    mp.devices = cpu_only;
    mp.n_gpu_layers = 0;
  }
  mp.layer_start = whole ? 0 : start;
  mp.layer_end = whole ? -1 : end;
  g_llama_errors.clear();
  e->model_ = llama_model_load_from_file(o.model.c_str(), mp);
  if (e->model_ == nullptr) {
    error = model_error("cannot load layers " + e->range_text() + " of " + o.model + ": " +
                        last_llama_error());
    return nullptr;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = o.n_ctx;
  cp.n_batch = o.n_batch;
  cp.n_ubatch = o.n_batch;
  cp.n_seq_max = 1;
  cp.n_threads = o.threads;
  cp.n_threads_batch = o.threads;
  cp.op_offload = o.op_offload;
  cp.flash_attn_type = o.flash_attn == EngineOptions::FlashAttn::kOn    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : o.flash_attn == EngineOptions::FlashAttn::kOff ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                                         : LLAMA_FLASH_ATTN_TYPE_AUTO;
  // A stage before the last hands out the boundary state of every token as
  // its embeddings; llama.cpp refuses the context otherwise.
  if (!e->last()) {
    cp.embeddings = true;
    cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
  }
  e->ctx_ = llama_init_from_model(e->model_, cp);
  if (e->ctx_ == nullptr) {
    error = model_error("cannot run layers " + e->range_text() + " of " + o.model + ": " +
                        last_llama_error());
    return nullptr;
  }
  e->n_vocab_ = static_cast<std::uint32_t>(llama_vocab_n_tokens(llama_model_get_vocab(e->model_)));
  // The boundary state: what a stage before the last hands out, what a stage
  // after the first takes in (the same width between two stages).
  e->n_embd_boundary_ = static_cast<std::uint32_t>(e->last() ? llama_model_n_embd_inp(e->model_)
                                                             : llama_model_n_embd_out(e->model_));
  return e;
}

Engine::~Engine() {
  if (ctx_ != nullptr) llama_free(ctx_);
  if (model_ != nullptr) llama_model_free(model_);
}

std::optional<WireError> Engine::run(const Frame& in, Frame& out, const PartSink& sink,
                                     const TokenSink& on_token) {
  const bool part = in.kind == FrameKind::kStatePart;
  const std::string bad =
      first() ? check_frame(in, FrameKind::kTokens, 1)
              : check_frame(in, part ? FrameKind::kStatePart : FrameKind::kState, n_embd_boundary_);
  if (!bad.empty()) return WireError{kExitFrame, "stage " + range_text() + ": " + bad};
  const auto n = static_cast<std::int32_t>(in.n_tokens);
  if (n_past_ + n > static_cast<std::int32_t>(llama_n_ctx(ctx_))) {
    return WireError{kExitFrame, "stage " + range_text() + ": " + std::to_string(n) +
                                     " more tokens overflow the context of " +
                                     std::to_string(llama_n_ctx(ctx_))};
  }
  for (std::int32_t j = 0; j < n; ++j) {
    if (in.positions[static_cast<std::size_t>(j)] != n_past_ + j) {
      return WireError{kExitFrame, "stage " + range_text() + ": token " + std::to_string(j) +
                                       " has position " +
                                       std::to_string(in.positions[static_cast<std::size_t>(j)]) +
                                       ", the sequence is at " + std::to_string(n_past_ + j)};
    }
  }
  if (!first()) {
    // llama.cpp would carry a NaN or an infinity through every later layer
    // into the logits: a peer's state is refused instead.
    if (std::string where = first_non_finite(in); !where.empty()) {
      return WireError{kExitFrame, "stage " + range_text() + ": " + kind_name(in.kind) +
                                       " frame " + where + " (boundary state must be finite)"};
    }
  }
  if (first()) {
    for (std::int32_t t : in.tokens) {
      if (t < 0 || static_cast<std::uint32_t>(t) >= n_vocab_) {
        return WireError{kExitFrame, "stage " + range_text() + ": token id " + std::to_string(t) +
                                         " is outside the vocabulary of " +
                                         std::to_string(n_vocab_)};
      }
    }
  }
  out = Frame();
  out.kind = last() ? FrameKind::kLogits : part ? FrameKind::kStatePart : FrameKind::kState;
  out.seq_id = in.seq_id;
  out.step = in.step;
  // A ring's count travels down the chain with the step's state frame.
  if (out.kind == FrameKind::kState) out.ring_steps = in.ring_steps;
  // The rows handed on: all of them, or (last, not all) the last one of a
  // step (none of a part).
  const bool one_row = last() && reply_ != EngineOptions::Reply::kAll;
  const std::int32_t first_row = !one_row ? 0 : part ? n : n - 1;
  out.n_tokens = static_cast<std::uint32_t>(n - first_row);
  const std::uint32_t width = last() ? n_vocab_ : n_embd_boundary_;
  out.n_embd = last() ? reply_width() : n_embd_boundary_;
  out.positions.assign(in.positions.begin() + first_row, in.positions.end());
  out.values.resize(static_cast<std::size_t>(out.n_tokens) * out.n_embd);
  // llama_decode takes at most n_batch tokens (it asserts, so a longer frame
  // would abort the stage): the frame is decoded n_batch rows at a time, the
  // same ubatches llama.cpp would have cut from it.
  const auto n_batch = static_cast<std::int32_t>(llama_n_batch(ctx_));
  std::int32_t handed = 0;  // rows already given to the sink
  for (std::int32_t c0 = 0; c0 < n; c0 += n_batch) {
    const std::int32_t m = std::min(n_batch, n - c0);
    llama_batch batch = llama_batch_init(m, first() ? 0 : static_cast<std::int32_t>(n_embd_boundary_), 1);
    for (std::int32_t j = 0; j < m; ++j) {
      if (first()) batch.token[j] = in.tokens[static_cast<std::size_t>(c0 + j)];
      batch.pos[j] = n_past_ + j;
      batch.n_seq_id[j] = 1;
      batch.seq_id[j][0] = 0;
      // Not last: every row's boundary state is needed. Last: every row's
      // logits, or (last, not all) the last row's only.
      batch.logits[j] = c0 + j >= first_row;
    }
    if (!first()) {
      std::memcpy(batch.embd, in.values.data() + static_cast<std::size_t>(c0) * n_embd_boundary_,
                  static_cast<std::size_t>(m) * n_embd_boundary_ * sizeof(float));
    }
    batch.n_tokens = m;
    g_llama_errors.clear();
    const int rc = llama_decode(ctx_, batch);
    llama_batch_free(batch);
    if (rc != 0) {
      return model_error("stage " + range_text() + ": llama_decode failed (" + std::to_string(rc) +
                         "): " + last_llama_error());
    }
    n_past_ += m;
    for (std::int32_t j = std::max(0, first_row - c0); j < m; ++j) {
      const float* row = last() ? llama_get_logits_ith(ctx_, j) : llama_get_embeddings_ith(ctx_, j);
      if (row == nullptr) {
        return model_error("stage " + range_text() + " hands out no " +
                           (last() ? "logits" : "boundary state") + " for token " +
                           std::to_string(c0 + j));
      }
      if (last() && !part && c0 + j == n - 1) {
        out.next_token = argmax(row, width);
        if (on_token) {
          if (auto e = on_token(out.next_token)) return e;
        }
      }
      float* dst = out.values.data() + static_cast<std::size_t>(c0 + j - first_row) * out.n_embd;
      if (last() && reply_ == EngineOptions::Reply::kDigest) {
        digest_row(row, width, dst);
      } else {
        std::memcpy(dst, row, width * sizeof(float));
      }
    }
    if (sink && !last() && c0 + m < n) {
      // Rows [handed, c0 + m) go on now; a stage before the last hands out every row.
      Frame chunk;
      chunk.kind = FrameKind::kStatePart;
      chunk.seq_id = out.seq_id;
      chunk.step = out.step;
      chunk.n_tokens = static_cast<std::uint32_t>(c0 + m - handed);
      chunk.n_embd = out.n_embd;
      chunk.positions.assign(out.positions.begin() + handed, out.positions.begin() + c0 + m);
      chunk.values.assign(out.values.begin() + static_cast<std::ptrdiff_t>(handed) * out.n_embd,
                          out.values.begin() + static_cast<std::ptrdiff_t>(c0 + m) * out.n_embd);
      if (auto e = sink(chunk)) return e;
      handed = c0 + m;
    }
  }
  if (handed > 0) {
    out.positions.erase(out.positions.begin(), out.positions.begin() + handed);
    out.values.erase(out.values.begin(), out.values.begin() + static_cast<std::ptrdiff_t>(handed) * out.n_embd);
    out.n_tokens -= static_cast<std::uint32_t>(handed);
  }
  return std::nullopt;
}

std::vector<std::uint8_t> Engine::save_sequence() const {
  std::vector<std::uint8_t> data(llama_state_seq_get_size(ctx_, 0));
  const std::size_t n = llama_state_seq_get_data(ctx_, data.data(), data.size(), 0);
  data.resize(n);
  return data;
}

std::optional<WireError> Engine::restore_sequence(const std::vector<std::uint8_t>& data,
                                                  std::int32_t n_past) {
  llama_memory_clear(llama_get_memory(ctx_), true);
  g_llama_errors.clear();
  if (llama_state_seq_set_data(ctx_, data.data(), data.size(), 0) != data.size()) {
    return WireError{kExitCheckpoint, "stage " + range_text() +
                                          ": llama.cpp refused the checkpoint's sequence state: " +
                                          last_llama_error()};
  }
  n_past_ = n_past;
  return std::nullopt;
}

}  // namespace worker::stage
