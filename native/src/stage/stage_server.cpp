// `worker --stage`: serve one layer range of a model to the previous stage
// (or the driver) and forward the boundary state to --next. Its command line
// is read in stage_main.cpp.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <thread>

#include "checkpoint.hpp"
#include "engine.hpp"
#include "stage_server.hpp"
#include "worker/checksum.hpp"
#include "worker/deadline.hpp"
#include "worker/json.hpp"
#include "worker/net.hpp"
#include "worker/tls.hpp"

namespace worker::stage {
namespace {

struct Stats {
  std::int64_t requests = 0, tokens = 0, bytes_in = 0, bytes_to_next = 0, frames_to_next = 0;
  std::int64_t compute_us = 0, replays = 0, reconnects = 0, fed_back = 0;
};

std::uint64_t frame_hash(const Frame& f) {
  const std::vector<std::uint8_t> wire = encode_frame(f);
  return fnv1a64(wire.data(), wire.size());
}

class Stage {
 public:
  Stage(StageOptions o, std::unique_ptr<Engine> e, Replay last)
      : o_(std::move(o)), engine_(std::move(e)), replay_(std::move(last)) {}
  int serve();

 private:
  int fail(const WireError& e);
  // With --key, the TLS handshake on a link just accepted (server) or made.
  std::optional<WireError> secure(net::Socket& s, bool server, const std::string& who) {
    if (!o_.key || !s.valid()) return std::nullopt;
    return net::start_tls(s, *o_.key, server, o_.timeout_ms, who);
  }
  std::optional<WireError> exchange(const Frame& out, Frame& reply, std::size_t* sent = nullptr);
  std::optional<WireError> send_part(const Frame& part);
  // Where the engine hands a step's earlier chunks: the next stage, if any.
  Engine::PartSink sink() {
    if (!o_.next) return nullptr;
    return [this](const Frame& part) { return send_part(part); };
  }
  std::optional<WireError> take_part(const Frame& in);
  std::optional<WireError> decode(const Frame& in, Frame& out, const Engine::TokenSink& on_token = nullptr);
  std::string who_up() const { return engine_->first() ? "the driver" : "the previous stage"; }
  std::string who_down() const { return "the next stage at " + net::to_string(*o_.next); }
  bool direct() const { return o_.direct || o_.answers.has_value(); }
  // The last stage of a ring: the step's token goes back to the first stage
  // as soon as it is known, before the reply is made and goes to the driver,
  // so the next step starts at once.
  std::optional<WireError> feed_back(const Frame& in, std::int32_t token);
  // The first stage of a ring: after a step that asks for more, the next
  // frame comes from the last stage's ring link, not from the driver.
  std::optional<WireError> expect_ring(const Frame& step);
  std::optional<WireError> check_ring(const Frame& in);
  // Where this stage's replies (and its error, on failure) go: the driver's
  // answer link on the last stage of a direct chain, else the previous hop.
  net::Socket& reply_link() { return o_.answers ? answers_ : up_; }
  // Where a failure is reported: whoever waits for this stage's reply, which
  // in a direct chain is down the chain, towards the driver.
  net::Socket& error_link() { return o_.direct ? down_ : reply_link(); }
  // Sends a frame to the next stage without waiting for a reply, and counts it.
  std::optional<WireError> forward(const Frame& out);

  StageOptions o_;
  std::unique_ptr<Engine> engine_;
  net::Socket listener_, up_, down_;
  net::Socket answers_listener_, answers_;
  net::Socket ring_listener_, ring_;
  // The first stage of a ring, between steps: the step and count the ring's
  // next frame must carry (reading from ring_ while set).
  std::optional<std::pair<std::uint32_t, std::int32_t>> ring_next_;
  Stats stats_;
  Replay replay_;
  // With --recover-ms, the parts of the current step sent to the next stage:
  // after a reconnect they are resent before the step's state frame.
  std::vector<Frame> parts_sent_;
  // The last stage: the logits rows of the current step's parts (--reply all),
  // answered with the rows of its state frame.
  Frame pending_;
};

int Stage::fail(const WireError& e) {
  const std::string prefix = "stage " + engine_->range_text() + ": ";
  const std::string line = e.message.rfind(prefix, 0) == 0 ? e.message : prefix + e.message;
  // Best effort: the peer learns why, then sees the disconnect.
  if (error_link().valid()) net::write_frame(error_link(), error_frame(0, line), 1000);
  std::cerr << "worker: " << line << "\n";
  return e.code;
}

std::optional<WireError> Stage::exchange(const Frame& out, Frame& reply, std::size_t* sent) {
  std::optional<Deadline> recovery;
  for (;;) {
    std::optional<WireError> e;
    if (recovery) {
      for (const Frame& part : parts_sent_) {
        if ((e = net::write_frame(down_, part, o_.timeout_ms))) break;
      }
    }
    if (!e) e = net::write_frame(down_, out, o_.timeout_ms, sent);
    if (!e) {
      net::FrameRead r = net::read_frame(down_, o_.timeout_ms, who_down(), engine_->limits_down());
      if (r.frame) {
        reply = std::move(*r.frame);
        if (recovery) stats_.reconnects += 1;  // once per recovery, however many tries
        return std::nullopt;
      }
      e = r.error;
    }
    if (o_.recover_ms <= 0 || e->code != kExitPeer) return e;
    // --recover-ms: the next stage may be restarting from its checkpoint. A
    // reconnect can reach the killed stage's listener while its process is
    // still being torn down (then it is reset): retry, within recover_ms of
    // the first failure (the resent frame is replayed, not decoded twice).
    if (!recovery) {
      recovery.emplace(o_.recover_ms);
    } else if (recovery->remaining_ms() == 0) {
      return e;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // The dying process's listener may also take the connection and then
    // drop the handshake: that is retried the same way.
    for (;;) {
      WireError why;
      down_ = net::connect_to(*o_.next, std::max(recovery->remaining_ms(), 1), why);
      std::optional<WireError> bad = down_.valid() ? secure(down_, false, who_down()) : why;
      if (!bad) break;
      if (recovery->remaining_ms() == 0) {
        return WireError{kExitPeer, e->message + "; reconnecting failed: " + bad->message};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

std::optional<WireError> Stage::forward(const Frame& out) {
  std::size_t sent = 0;
  std::optional<WireError> e = net::write_frame(down_, out, o_.timeout_ms, &sent);
  if (!e) {
    stats_.bytes_to_next += static_cast<std::int64_t>(sent);
    stats_.frames_to_next += 1;
  }
  return e;
}

std::optional<WireError> Stage::send_part(const Frame& part) {
  std::optional<WireError> e = forward(part);
  if (o_.recover_ms > 0) parts_sent_.push_back(part);
  if (!e || e->code != kExitPeer) return e;
  // A next stage that went away is reconnected to in exchange(), which
  // resends every part of the step before its state frame.
  if (o_.recover_ms > 0) return std::nullopt;
  // Nothing answers a part: a next stage that refused one said why before it went away.
  net::FrameRead r = net::read_frame(down_, 1000, who_down(), engine_->limits_down());
  if (r.frame && r.frame->kind == FrameKind::kError) {
    return WireError{kExitRemote, who_down() + " reported: " + r.frame->text};
  }
  return e;
}

// Runs the engine on a frame (its earlier chunks go to the next stage) and counts it.
std::optional<WireError> Stage::decode(const Frame& in, Frame& out, const Engine::TokenSink& on_token) {
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<WireError> e = engine_->run(in, out, sink(), on_token);
  stats_.compute_us += std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - t0).count();
  if (!e) stats_.tokens += in.n_tokens;
  return e;
}

std::optional<WireError> Stage::feed_back(const Frame& in, std::int32_t token) {
  if (in.ring_steps <= 0) return std::nullopt;
  if (!ring_.valid()) {
    return WireError{kExitFrame, "the driver asked for " + std::to_string(in.ring_steps) +
                                     " greedy steps fed back, and this stage has no --ring"};
  }
  Frame next = tokens_frame(in.seq_id, in.step + 1, in.positions.back() + 1, {token});
  next.ring_steps = in.ring_steps - 1;
  std::optional<WireError> e = net::write_frame(ring_, next, o_.timeout_ms);
  if (!e) stats_.fed_back += 1;
  return e;
}

std::optional<WireError> Stage::expect_ring(const Frame& step) {
  ring_next_.reset();
  if (step.ring_steps <= 0) return std::nullopt;
  if (!ring_.valid()) {
    return WireError{kExitFrame, who_up() + " asked for " + std::to_string(step.ring_steps) +
                                     " greedy steps fed back, and this stage has no --ring"};
  }
  ring_next_.emplace(step.step + 1, step.ring_steps - 1);
  return std::nullopt;
}

std::optional<WireError> Stage::check_ring(const Frame& in) {
  const auto [step, steps] = *ring_next_;
  if (in.kind == FrameKind::kTokens && in.n_tokens == 1 && in.step == step && in.ring_steps == steps) {
    return std::nullopt;
  }
  return WireError{kExitFrame, "the ring link sent a " + std::string(kind_name(in.kind)) + " frame of " +
                                   std::to_string(in.n_tokens) + " row(s) for step " +
                                   std::to_string(in.step) + " with " + std::to_string(in.ring_steps) +
                                   " steps to go; expected one token for step " + std::to_string(step) +
                                   " with " + std::to_string(steps)};
}

std::optional<WireError> Stage::take_part(const Frame& in) {
  // After a reconnect or a resume, the previous stage resends the parts of
  // its step; those this stage decoded before are skipped.
  const bool resent = o_.recover_ms > 0 || !o_.resume.empty();
  if (resent && !in.positions.empty() && in.positions.back() < engine_->n_past()) return std::nullopt;
  Frame out;
  if (auto e = decode(in, out)) return e;
  if (o_.next) return send_part(out);
  if (pending_.step != in.step || pending_.positions.empty()) pending_ = Frame();
  pending_.step = in.step;
  pending_.positions.insert(pending_.positions.end(), out.positions.begin(), out.positions.end());
  pending_.values.insert(pending_.values.end(), out.values.begin(), out.values.end());
  return std::nullopt;
}

int Stage::serve() {
  WireError e;
  listener_ = net::listen_on(o_.listen, e);
  if (!listener_.valid()) return fail(e);
  std::cout << "listening " << o_.listen.host << ":" << net::local_port(listener_) << std::endl;
  if (o_.answers) {
    answers_listener_ = net::listen_on(*o_.answers, e);
    if (!answers_listener_.valid()) return fail(e);
    std::cout << "answers " << o_.answers->host << ":" << net::local_port(answers_listener_) << std::endl;
  }
  if (o_.ring && o_.answers) {
    ring_listener_ = net::listen_on(*o_.ring, e);
    if (!ring_listener_.valid()) return fail(e);
    std::cout << "ring " << o_.ring->host << ":" << net::local_port(ring_listener_) << std::endl;
  }
  if (o_.next) {
    down_ = net::connect_to(*o_.next, o_.timeout_ms, e);
    if (!down_.valid()) return fail(e);
    if (auto bad = secure(down_, false, who_down())) return fail(*bad);
  }
  const std::string who_ring = o_.answers ? "the first stage's ring link" : "the last stage's ring link";
  if (o_.ring && !o_.answers) {
    ring_ = net::connect_to(*o_.ring, o_.timeout_ms, e);
    if (!ring_.valid()) return fail(e);
    if (auto bad = secure(ring_, false, who_ring)) return fail(*bad);
  }
  up_ = net::accept_one(listener_, o_.timeout_ms, e);
  if (!up_.valid()) return fail(e);
  if (auto bad = secure(up_, true, who_up())) return fail(*bad);
  // The ring before the answer link: the first stage joins it before it
  // takes the driver, which connects to the answer link last.
  if (ring_listener_.valid()) {
    ring_ = net::accept_one(ring_listener_, o_.timeout_ms, e);
    if (!ring_.valid()) return fail(e);
    if (auto bad = secure(ring_, true, who_ring)) return fail(*bad);
    ring_listener_.close();
  }
  if (o_.answers) {
    answers_ = net::accept_one(answers_listener_, o_.timeout_ms, e);
    if (!answers_.valid()) return fail(e);
    if (auto bad = secure(answers_, true, "the driver's answer link")) return fail(*bad);
    answers_listener_.close();
  }
  // One peer at a time: without --recover-ms nobody else is ever accepted, so
  // the port closes and a second connection is refused at once; with it, a
  // successor waits in the listener's backlog of 1 until the peer goes away.
  if (o_.recover_ms <= 0) listener_.close();
  for (;;) {
    const bool from_ring = ring_next_.has_value();
    net::FrameRead r = from_ring ? net::read_frame(ring_, o_.timeout_ms, who_ring, engine_->limits_up())
                                 : net::read_frame(up_, o_.timeout_ms, who_up(), engine_->limits_up());
    if (r.frame && from_ring) {
      if (auto err = check_ring(*r.frame)) return fail(*err);
    }
    if (!r.frame) {
      if (o_.recover_ms > 0 && r.error.code == kExitPeer) {
        // The previous stage went away; wait for its successor.
        up_ = net::accept_one(listener_, o_.recover_ms, e);
        if (!up_.valid()) return fail(WireError{kExitPeer, r.error.message + "; nobody reconnected: " + e.message});
        if (auto bad = secure(up_, true, who_up())) return fail(*bad);
        stats_.reconnects += 1;
        continue;
      }
      return fail(r.error);
    }
    stats_.bytes_in += static_cast<std::int64_t>(r.bytes);
    const Frame& in = *r.frame;
    if (in.kind == FrameKind::kEnd) {
      Frame ack = end_frame(in.seq_id);
      if (o_.direct) {
        // The last stage acknowledges to the driver; this one is done once it is sent on.
        if (auto err = net::write_frame(down_, in, o_.timeout_ms)) return fail(*err);
      } else if (o_.next) {
        if (auto err = exchange(in, ack)) return fail(*err);
        if (ack.kind != FrameKind::kEnd) {
          return fail(WireError{kExitFrame, who_down() + " answered end with a " +
                                                std::string(kind_name(ack.kind)) + " frame"});
        }
      }
      if (!o_.direct) {
        if (auto err = net::write_frame(reply_link(), ack, o_.timeout_ms)) return fail(*err);
      }
      json::Object stats{{"stage", engine_->range_text()},
                         {"requests", stats_.requests},
                         {"tokens", stats_.tokens},
                         {"bytes_in", stats_.bytes_in},
                         {"bytes_to_next", stats_.bytes_to_next},
                         {"frames_to_next", stats_.frames_to_next},
                         {"n_embd_boundary", static_cast<std::int64_t>(engine_->n_embd_boundary())},
                         {"compute_us", stats_.compute_us},
                         {"replays", stats_.replays},
                         {"reconnects", stats_.reconnects},
                         {"fed_back", stats_.fed_back}};
      std::cout << json::dump(json::Value(std::move(stats))) << std::endl;
      return 0;
    }
    if (in.kind == FrameKind::kError) {
      if (direct()) {
        // In a direct chain an earlier stage's failure comes down the chain: passed on as it is.
        if (error_link().valid()) net::write_frame(error_link(), in, 1000);
        std::cerr << "worker: stage " << engine_->range_text() << ": an earlier stage reported: " << in.text << "\n";
        return kExitRemote;
      }
      return fail(WireError{kExitFrame, who_up() + " sent an error frame: " + in.text});
    }
    if (in.kind == FrameKind::kStatePart) {
      if (auto err = take_part(in)) return fail(*err);
      continue;
    }
    if (o_.direct) {
      // Checked before anything goes on: the refusal is the one error down the chain.
      if (engine_->first()) {
        if (auto err = expect_ring(in)) return fail(*err);
      }
      Frame out;
      if (auto err = decode(in, out)) return fail(*err);
      stats_.requests += 1;
      if (auto err = forward(out)) return fail(*err);
      continue;
    }
    const std::uint64_t hash = frame_hash(in);
    Frame reply;
    if (replay_.valid && in.step == replay_.step && in.positions == replay_.positions &&
        hash == replay_.input_hash) {
      reply = replay_.reply;
      stats_.replays += 1;
    } else {
      Frame out;
      const Engine::TokenSink ring = [this, &in](std::int32_t token) { return feed_back(in, token); };
      if (auto err = decode(in, out, o_.next ? nullptr : ring)) return fail(*err);
      stats_.requests += 1;
      if (o_.next) {
        std::size_t sent = 0;
        if (auto err = exchange(out, reply, &sent)) return fail(*err);
        stats_.bytes_to_next += static_cast<std::int64_t>(sent);
        stats_.frames_to_next += 1;
        if (reply.kind == FrameKind::kError) {
          net::write_frame(up_, reply, 1000);
          std::cerr << "worker: stage " << engine_->range_text() << ": " << who_down()
                    << " reported: " << reply.text << "\n";
          return kExitRemote;
        }
        if (std::string bad = check_frame(reply, FrameKind::kLogits, engine_->reply_width()); !bad.empty()) {
          return fail(WireError{kExitFrame, "reply from " + who_down() + ": " + bad});
        }
        parts_sent_.clear();
      } else {
        reply = std::move(out);
        if (pending_.step == in.step && !pending_.positions.empty()) {
          // The step's parts came first: their rows lead the reply.
          reply.positions.insert(reply.positions.begin(), pending_.positions.begin(), pending_.positions.end());
          reply.values.insert(reply.values.begin(), pending_.values.begin(), pending_.values.end());
          reply.n_tokens = static_cast<std::uint32_t>(reply.positions.size());
        }
        pending_ = Frame();
      }
      replay_ = Replay{true, in.step, in.positions, hash, reply};
      if (!o_.checkpoint.empty()) {
        if (auto err = save_checkpoint(o_.checkpoint, o_.engine.model, *engine_, replay_)) {
          return fail(*err);
        }
      }
    }
    if (auto err = net::write_frame(reply_link(), reply, o_.timeout_ms)) return fail(*err);
  }
}

}  // namespace

int serve_stage(StageOptions o, std::unique_ptr<Engine> engine, Replay last) {
  Stage stage(std::move(o), std::move(engine), std::move(last));
  return stage.serve();
}

}  // namespace worker::stage
