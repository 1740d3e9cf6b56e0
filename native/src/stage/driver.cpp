// `worker --drive`: run a prompt and greedy single-token steps through a
// pipeline (stage processes it spawns, one it connects to, or the whole model
// in this process) and report the logits, the tokens and the measurements.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "args.hpp"
#include "driver.hpp"
#include "engine.hpp"
#include "pipeline.hpp"
#include "tiny_model.hpp"
#include "worker/checksum.hpp"
#include "worker/deadline.hpp"
#include "worker/prng.hpp"
#include "worker/spawn.hpp"

namespace worker::stage {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One request/response to the head of the pipeline.
class Hop {
 public:
  virtual ~Hop() = default;
  virtual std::optional<WireError> request(const Frame& in, Frame& reply) = 0;
  // A ring's later steps: the reply to a step the chain fed itself.
  virtual std::optional<WireError> receive(Frame& reply) = 0;
};

class LocalHop : public Hop {
 public:
  explicit LocalHop(Engine& e) : engine_(e) {}
  std::optional<WireError> request(const Frame& in, Frame& reply) override {
    return engine_.run(in, reply);
  }
  std::optional<WireError> receive(Frame&) override {
    return WireError{kExitFrame, "the whole model in one process has no ring"};
  }

 private:
  Engine& engine_;
};

class SocketHop : public Hop {
 public:
  SocketHop(net::Endpoint head, std::optional<net::Endpoint> answers, const DriveOptions& o,
            FrameLimits limits)
      : head_(std::move(head)), answers_at_(std::move(answers)),
        who_("the stage at " + net::to_string(head_)),
        who_answers_(answers_at_ ? "the last stage at " + net::to_string(*answers_at_) : who_),
        timeout_ms_(o.timeout_ms), recover_ms_(o.recover_ms), key_(o.key ? &*o.key : nullptr),
        limits_(limits) {}
  // Connects to the first stage and, for a direct chain, to the last stage's
  // answer endpoint (with --key, each with the TLS handshake).
  std::optional<WireError> open(int timeout_ms) {
    if (auto e = connect(s_, head_, who_, timeout_ms)) return e;
    if (answers_at_) return connect(answers_, *answers_at_, who_answers_, timeout_ms);
    return std::nullopt;
  }
  std::optional<WireError> request(const Frame& in, Frame& reply) override {
    std::optional<Deadline> recovery;
    for (;;) {
      std::optional<WireError> e = net::write_frame(s_, in, timeout_ms_);
      if (!e) {
        net::FrameRead r = read();
        if (r.frame) {
          if (recovery) reconnects += 1;  // once per recovery, however many tries
          return take(std::move(*r.frame), reply);
        }
        e = r.error;
      }
      // --recover-ms: the first stage may be restarting from its checkpoint;
      // retried within recover_ms of the first failure (a reconnect can reach
      // the killed stage's listener while its process is torn down).
      if (recover_ms_ <= 0 || e->code != kExitPeer) return e;
      if (!recovery) {
        recovery.emplace(recover_ms_);
      } else if (recovery->remaining_ms() == 0) {
        return e;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      // The dying process's listener may take the connection and drop the
      // handshake: retried the same way.
      while (auto why = open(std::max(recovery->remaining_ms(), 1))) {
        if (recovery->remaining_ms() == 0) {
          return WireError{kExitPeer, e->message + "; reconnecting failed: " + why->message};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
  std::optional<WireError> receive(Frame& reply) override {
    net::FrameRead r = read();
    if (!r.frame) return r.error;
    return take(std::move(*r.frame), reply);
  }
  int reconnects = 0;

 private:
  // A reply comes on the answer link of a direct chain, else on the request's.
  net::FrameRead read() {
    return answers_at_ ? net::read_frame(answers_, timeout_ms_, who_answers_, limits_)
                       : net::read_frame(s_, timeout_ms_, who_, limits_);
  }
  static std::optional<WireError> take(Frame&& in, Frame& reply) {
    reply = std::move(in);
    if (reply.kind == FrameKind::kError) return WireError{kExitRemote, "a stage reported: " + reply.text};
    return std::nullopt;
  }
  std::optional<WireError> connect(net::Socket& s, const net::Endpoint& at, const std::string& who,
                                   int timeout_ms) {
    WireError e;
    s = net::connect_to(at, timeout_ms, e);
    if (!s.valid()) return e;
    if (key_ != nullptr) return net::start_tls(s, *key_, false, timeout_ms_, who);
    return std::nullopt;
  }

  net::Socket s_, answers_;
  net::Endpoint head_;
  std::optional<net::Endpoint> answers_at_;
  std::string who_, who_answers_;
  int timeout_ms_;
  int recover_ms_;
  const net::TlsKey* key_;
  FrameLimits limits_;
};

std::optional<WireError> run_sequence(Hop& hop, const DriveOptions& o, std::uint32_t n_vocab,
                                      DriveResult& r) {
  const bool all = o.reply == EngineOptions::Reply::kAll;
  const std::uint32_t width = o.reply == EngineOptions::Reply::kDigest ? kDigestWidth : n_vocab;
  SplitMix64 rng(o.seed);
  std::vector<std::int32_t> prompt;
  for (int i = 0; i < o.prompt; ++i) prompt.push_back(static_cast<std::int32_t>(rng.next() % n_vocab));
  r.tokens = prompt;
  std::int32_t pos = 0;
  const auto t0 = Clock::now();
  for (int step = 0; step <= o.steps; ++step) {
    if (step > 0 && o.step_delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.step_delay_ms));
    }
    std::vector<std::int32_t> batch = step == 0 ? prompt : std::vector<std::int32_t>{r.tokens.back()};
    Frame req = tokens_frame(o.seq_id, static_cast<std::uint32_t>(step), pos, batch);
    Frame reply;
    // A ring takes the prompt with the number of steps and feeds each
    // greedy token back itself: every later step is only read.
    if (o.ring && step == 0) req.ring_steps = o.steps;
    if (auto e = o.ring && step > 0 ? hop.receive(reply) : hop.request(req, reply)) return e;
    if (std::string bad = check_frame(reply, FrameKind::kLogits, width); !bad.empty()) {
      return WireError{kExitFrame, "reply to step " + std::to_string(step) + ": " + bad};
    }
    const std::vector<std::int32_t> rows =
        all ? req.positions : std::vector<std::int32_t>{req.positions.back()};
    if (reply.positions != rows || reply.step != req.step) {
      return WireError{kExitFrame, "reply to step " + std::to_string(step) +
                                       " is for other tokens (positions or step differ)"};
    }
    // A digest cannot be checked here: the reference run's digests are.
    const std::int32_t greedy =
        o.reply == EngineOptions::Reply::kDigest
            ? reply.next_token
            : argmax(reply.values.data() + static_cast<std::size_t>(reply.n_tokens - 1) * n_vocab, n_vocab);
    if (greedy < 0 || static_cast<std::uint32_t>(greedy) >= n_vocab) {
      return WireError{kExitFrame, "reply to step " + std::to_string(step) + " names token " +
                                       std::to_string(reply.next_token) + ", outside the vocabulary"};
    }
    if (reply.next_token != greedy) {
      return WireError{kExitFrame, "reply to step " + std::to_string(step) + " names token " +
                                       std::to_string(reply.next_token) + ", its logits give " +
                                       std::to_string(greedy)};
    }
    r.logits.insert(r.logits.end(), reply.values.begin(), reply.values.end());
    r.tokens.push_back(greedy);
    pos += static_cast<std::int32_t>(req.n_tokens);
    if (step == 0) r.prompt_s = seconds_since(t0);
  }
  r.total_s = seconds_since(t0);
  r.tokens.pop_back();  // the choice after the last step was never fed back
  return std::nullopt;
}

struct Pipeline {
  std::vector<Child> children;  // last stage first
  net::Endpoint head;
  std::optional<net::Endpoint> answers;  // a direct chain's last stage
  ~Pipeline() {
    for (Child& c : children) kill_child(c);
  }
};

std::optional<WireError> spawn_pipeline(const std::string& exe, const DriveOptions& o,
                                        Pipeline& p, DriveResult& r) {
  std::optional<net::Endpoint> next, ring;
  for (auto it = o.split.rbegin(); it != o.split.rend(); ++it) {
    const std::int32_t n_gpu = stage_gpu_layers(o, static_cast<std::size_t>(o.split.rend() - it) - 1);
    const std::string range = std::to_string(it->first) + ":" + std::to_string(it->second);
    std::vector<std::string> argv = {exe, "--stage", "--model", o.model, "--layers", range,
                                     "--listen", "127.0.0.1:0", "--threads",
                                     std::to_string(o.threads), "--ctx", std::to_string(o.n_ctx),
                                     "--batch", std::to_string(o.n_batch), "--reply", reply_name(o.reply),
                                     "--flash-attn", flash_attn_name(o.flash_attn),
                                     "--timeout-ms", std::to_string(o.timeout_ms),
                                     "--n-gpu-layers", std::to_string(n_gpu)};
    if (next) {
      argv.push_back("--next");
      argv.push_back(net::to_string(*next));
    }
    if (o.direct) {
      argv.push_back(next ? "--direct" : "--answers");
      if (!next) argv.push_back("127.0.0.1:0");
    }
    if (o.ring && (!next || it->first == 0)) {
      argv.push_back("--ring");
      argv.push_back(next ? net::to_string(*ring) : "127.0.0.1:0");
    }
    if (!o.key_file.empty()) {
      argv.push_back("--key");  // the file's name, never its bytes, on the command line
      argv.push_back(o.key_file);
    }
    std::string error;
    // The stages' stderr is ours to read: a stage that fails tells the driver
    // (an error frame, relayed), so the driver prints the one line.
    Child c = spawn_child(argv, true, error);
    if (c.pid < 0) return WireError{kExitPeer, "cannot start stage " + range + ": " + error};
    p.children.push_back(c);
    std::string line;
    if (!read_line(c.stdout_fd, o.timeout_ms, line, error) || line.rfind("listening ", 0) != 0) {
      std::string why = read_all(c.stderr_fd, 2000);
      while (!why.empty() && why.back() == '\n') why.pop_back();
      const int code = wait_child(p.children.back(), 2000);
      if (why.rfind("worker: ", 0) == 0) why = why.substr(8);
      return WireError{code > 0 && code < 128 ? code : kExitModel,
                       "stage " + range + " did not start (exit " + std::to_string(code) + "): " +
                           (why.empty() ? error : why)};
    }
    std::string bad;
    auto ep = net::parse_endpoint(line.substr(10), bad);
    if (!ep) return WireError{kExitPeer, "stage " + range + " printed `" + line + "`"};
    if (o.direct && !next) {
      std::string answers;
      std::optional<net::Endpoint> at;
      if (read_line(c.stdout_fd, o.timeout_ms, answers, error) && answers.rfind("answers ", 0) == 0) {
        at = net::parse_endpoint(answers.substr(8), bad);
      }
      if (!at) return WireError{kExitPeer, "stage " + range + " did not say where it answers: `" + answers + "`"};
      p.answers = *at;
      if (o.ring) {
        std::string joins;
        if (read_line(c.stdout_fd, o.timeout_ms, joins, error) && joins.rfind("ring ", 0) == 0) {
          ring = net::parse_endpoint(joins.substr(5), bad);
        }
        if (!ring) return WireError{kExitPeer, "stage " + range + " did not say where its ring is: `" + joins + "`"};
      }
    }
    next = *ep;
    r.stages.push_back({it->first, it->second, n_gpu, net::to_string(*ep), -1, ""});
  }
  std::reverse(r.stages.begin(), r.stages.end());
  p.head = *next;
  return std::nullopt;
}

std::uint64_t logits_hash(const std::vector<float>& logits) {
  std::vector<std::uint8_t> bytes(logits.size() * 4);
  for (std::size_t i = 0; i < logits.size(); ++i) {
    std::uint32_t b = 0;
    std::memcpy(&b, &logits[i], 4);
    for (int k = 0; k < 4; ++k) bytes[4 * i + static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(b >> (8 * k));
  }
  return fnv1a64(bytes.data(), bytes.size());
}

}  // namespace

std::int32_t stage_gpu_layers(const DriveOptions& o, std::size_t i) {
  return i < o.stage_gpu_layers.size() ? o.stage_gpu_layers[i] : o.n_gpu_layers;
}

std::optional<Placement> same_placement(const DriveOptions& o, std::int32_t n_layer, std::string& why) {
  // Units: the layers 0..n_layer-1, then the output as unit n_layer.
  std::int32_t total = 0;
  bool offloading = false, suffix = true;
  std::string placed, beside;  // beside: a stage with CPU layers next to the device
  for (std::size_t i = 0; i < o.split.size(); ++i) {
    const auto [start, end] = o.split[i];
    const std::int32_t units = end - start + (end == n_layer ? 1 : 0);
    const std::int32_t off = std::min(stage_gpu_layers(o, i), units);
    // Once a stage offloads, every later stage must offload all its units.
    if (offloading && off < units) suffix = false;
    offloading = offloading || off > 0;
    total += off;
    if (off > 0 && off < units && beside.empty()) {
      beside = "[" + std::to_string(start) + "," + std::to_string(end) + ")";
    }
    const std::int32_t from = start + units - off;
    placed += (i ? ", [" : "[") + std::to_string(start) + "," + std::to_string(end) + ") " +
              (off == 0 ? "none"
               : off == 1 ? "layer " + std::to_string(from)
                          : "layers " + std::to_string(from) + "-" + std::to_string(from + off - 1));
  }
  const bool cpu_first = !o.split.empty() && stage_gpu_layers(o, 0) == 0;
  if (suffix && cpu_first && !beside.empty()) {
    why = "stage " + beside + " keeps CPU layers beside the device (llama.cpp runs their large batches there) "
          "while the first stage runs without one: no full model does both";
    return std::nullopt;
  }
  if (suffix) return Placement{total, !cpu_first};
  why = "the stages offload " + placed + " (layer " + std::to_string(n_layer) +
        " is the output): not the model's last layers, so no full model is placed the same way";
  return std::nullopt;
}

std::optional<WireError> drive(const DriveOptions& o, const std::string& exe, DriveResult& r) {
  GgufSummary summary;
  if (std::string why = read_gguf_summary(o.model, summary); !why.empty()) {
    return WireError{kExitModel, why};
  }
  r.n_vocab = summary.n_vocab;
  r.n_layer = summary.n_layer;
  r.weight_bytes = summary.weight_bytes;
  if (o.mode == DriveOptions::kSpawn && o.split.back().second != static_cast<std::int32_t>(summary.n_layer)) {
    return WireError{kExitModel, "--split ends at layer " + std::to_string(o.split.back().second) +
                                     ", the model has " + std::to_string(summary.n_layer)};
  }
  if (o.mode == DriveOptions::kLocal) {
    WireError e;
    EngineOptions eo{o.model, 0, 0, o.threads, o.n_ctx, o.n_batch, o.reply};
    eo.n_gpu_layers = o.n_gpu_layers;
    eo.op_offload = o.op_offload;
    eo.flash_attn = o.flash_attn;
    auto engine = Engine::load(eo, e);
    if (!engine) return e;
    LocalHop hop(*engine);
    return run_sequence(hop, o, summary.n_vocab, r);
  }
  Pipeline p;
  net::Endpoint head = o.connect;
  std::optional<net::Endpoint> answers = o.answers;
  if (o.mode == DriveOptions::kSpawn) {
    if (auto e = spawn_pipeline(exe, o, p, r)) return e;
    head = p.head;
    answers = p.answers;
  }
  // A reply has at most a step's rows (--ctx) of logits or digests.
  const std::uint32_t width = o.reply == EngineOptions::Reply::kDigest ? kDigestWidth : summary.n_vocab;
  SocketHop hop(head, answers, o, FrameLimits{o.n_ctx, width});
  if (auto e = hop.open(o.timeout_ms)) return e;
  std::optional<WireError> failed = run_sequence(hop, o, summary.n_vocab, r);
  r.reconnects = hop.reconnects;
  if (failed) return failed;
  Frame ack;
  if (auto err = hop.request(end_frame(o.seq_id), ack)) return err;
  if (ack.kind != FrameKind::kEnd) {
    return WireError{kExitFrame, std::string("the pipeline answered end with a ") + kind_name(ack.kind) + " frame"};
  }
  // The stages print their statistics and exit once the end is acknowledged.
  for (std::size_t i = 0; i < p.children.size(); ++i) {
    Child& c = p.children[i];
    StageReport& sr = r.stages[r.stages.size() - 1 - i];
    sr.stats = read_all(c.stdout_fd, o.timeout_ms);
    sr.exit_code = wait_child(c, o.timeout_ms);
    if (sr.exit_code != 0) {
      return WireError{kExitRemote, "stage [" + std::to_string(sr.start) + ", " + std::to_string(sr.end) +
                                        ") exited with " + std::to_string(sr.exit_code)};
    }
  }
  p.children.clear();
  return std::nullopt;
}

std::string logits_digest(const std::vector<float>& logits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(logits_hash(logits)));
  return buf;
}

std::optional<WireError> write_logits(const std::string& file, const std::vector<float>& logits) {
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  for (float v : logits) {
    std::uint32_t b = 0;
    std::memcpy(&b, &v, 4);
    const char le[4] = {static_cast<char>(b), static_cast<char>(b >> 8), static_cast<char>(b >> 16),
                        static_cast<char>(b >> 24)};
    f.write(le, 4);
  }
  if (!f) return WireError{kExitModel, "cannot write " + file};
  return std::nullopt;
}

// Empty when a and b are the same bits; else where they first differ.
std::string first_difference(const std::vector<float>& a, const std::vector<float>& b,
                             std::uint32_t n_vocab) {
  if (a.size() != b.size()) {
    return std::to_string(a.size()) + " logits against " + std::to_string(b.size());
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], 4) != 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "row %zu, token %zu: %a against %a", i / n_vocab, i % n_vocab,
                    static_cast<double>(a[i]), static_cast<double>(b[i]));
      return buf;
    }
  }
  return {};
}

}  // namespace worker::stage
