// A misbehaving neighbour for the stage mode's negative CTests (consumer
// build only): it runs real worker processes and feeds them broken frames,
// silence or a vanishing peer, then prints how each worker ended:
//
//   exit <code>: <the worker's stderr, one line>
//
// so that the CTest can require the exit code and the message. Every wait has
// a deadline; a worker that hangs is killed and reported as `exit -1`.
//
// usage: worker_bad_peer WORKER MODEL SCENARIO
//   truncated | checksum | width | magic   a broken state frame to stage [2, 4)
//   tokens                                 token ids to stage [2, 4), which has no embeddings
//   silent                                 connect to stage [2, 4), send nothing
//   next-dies                              kill stage [2, 4) of a 2-stage pipeline mid-run
//   head-drops                             the driver's first stage closes mid-reply
//   head-vanishes                          the driver's first stage closes without a reply
//   parts-resent                           a next stage that drops the connection after
//                                          2 state parts of a step gets all of them again
//   parts-skipped                          a last stage sent the same step's parts again
//                                          after a reconnect answers as if sent once
//   huge                                   a state header declaring ~2 GiB, then zeros:
//                                          refused on the header, the stage's peak RSS
//   slow                                   a valid frame one byte per 100 ms: cut at
//                                          --timeout-ms in total
//   second-peer                            a second connection while one is served is
//                                          refused; the first peer is served on
//   nan | inf                              a state frame with a non-finite value
//   positions                              a state frame whose positions skip ahead
//   past-ctx                               a state frame of more rows than --ctx (256)
//   vocab                                  a token id outside the vocabulary to stage [0, 2)
//   tls-ok                                 a stage with --key serves a peer with the same key
//   tls-wrong-key                          ... refuses a peer with another key
//   tls-plain-client                       ... refuses a plain peer
//   tls-on-plain                           a stage without --key refuses a TLS peer
//   tls-silent                             a peer of a stage with --key sends nothing: cut
//                                          at --timeout-ms (1000) in the handshake
//   tls-drive                              --drive --split --key: every link TLS, the logits
//                                          bit-identical, the key in no output
//   key-mode                               a key file readable by others is refused
//   direct-connect                         a direct chain started by hand (--direct,
//                                          --answers) driven with --connect --answers:
//                                          bit-identical, each stage's frames counted
//   direct-error                           a direct chain whose first stage refuses a
//                                          token: the error comes down the chain to the
//                                          driver's answer link
//   direct-no-driver                       the last stage of a direct chain whose previous
//                                          stage connects but nobody takes the answers:
//                                          cut at --timeout-ms
//   ring-connect                           a ring started by hand (--ring on the first and
//                                          last stage) driven with --connect --answers
//                                          --ring: bit-identical, each token fed back once
//   ring-out-of-order                      a first stage whose ring link sends a token for
//                                          another step: refused, the error down the chain
//   ring-missing                           a direct chain without --ring asked for steps
//                                          fed back: refused, the error down the chain

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "worker/frame.hpp"
#include "worker/net.hpp"
#include "worker/spawn.hpp"
#include "worker/tls.hpp"

namespace {

using worker::Child;

constexpr int kWait = 20000;

Child start_stage(const std::string& exe, const std::string& model, const std::string& layers,
                  const std::vector<std::string>& extra, std::string& endpoint) {
  std::vector<std::string> argv = {exe, "--stage", "--model", model, "--layers", layers,
                                   "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::string error;
  Child c = worker::spawn_child(argv, true, error);
  std::string line;
  if (c.pid < 0 || !worker::read_line(c.stdout_fd, kWait, line, error)) {
    std::printf("cannot start stage %s: %s\n", layers.c_str(), error.c_str());
    return c;
  }
  endpoint = line.substr(std::string("listening ").size());
  return c;
}

// The last stage of a direct chain: also reads the `answers HOST:PORT` line
// and, given ring, runs with --ring and reads the `ring HOST:PORT` line.
Child start_last(const std::string& exe, const std::string& model, const std::string& layers,
                 std::string& endpoint, std::string& answers, std::string* ring = nullptr) {
  std::vector<std::string> extra = {"--answers", "127.0.0.1:0", "--timeout-ms", "5000", "--batch", "16"};
  if (ring != nullptr) extra.insert(extra.end(), {"--ring", "127.0.0.1:0"});
  Child c = start_stage(exe, model, layers, extra, endpoint);
  std::string line, error;
  if (c.pid >= 0 && worker::read_line(c.stdout_fd, kWait, line, error) && line.rfind("answers ", 0) == 0) {
    answers = line.substr(std::string("answers ").size());
  } else {
    std::printf("stage %s did not say where it answers: %s%s\n", layers.c_str(), line.c_str(), error.c_str());
  }
  if (ring != nullptr && c.pid >= 0 && worker::read_line(c.stdout_fd, kWait, line, error) &&
      line.rfind("ring ", 0) == 0) {
    *ring = line.substr(std::string("ring ").size());
  }
  return c;
}

// The number after "KEY": in a stage's statistics line, -1 when absent.
long stat_of(const std::string& stats, const std::string& key) {
  const std::size_t at = stats.find("\"" + key + "\":");
  return at == std::string::npos ? -1L : std::strtol(stats.c_str() + at + key.size() + 3, nullptr, 10);
}

int report(Child& c, const char* who) {
  const std::string err = worker::read_all(c.stderr_fd, kWait);
  const int code = worker::wait_child(c, kWait);
  std::printf("%s exit %d: %s", who, code, err.empty() ? "(no stderr)\n" : err.c_str());
  return code;
}

worker::net::Socket dial(const std::string& endpoint) {
  std::string error;
  worker::WireError e;
  auto ep = worker::net::parse_endpoint(endpoint, error);
  if (!ep) return {};
  return worker::net::connect_to(*ep, kWait, e);
}

// A state frame for stage [2, 4) of the tiny model (128 floats wide).
std::vector<std::uint8_t> state_wire(std::uint32_t width) {
  return worker::encode_frame(worker::state_frame(worker::FrameKind::kState, 0, 0, 0,
                                                  worker::make_test_hidden_state(8, width, 1)));
}

int broken_frame(const std::string& exe, const std::string& model, const std::string& how) {
  std::string endpoint;
  Child stage = start_stage(exe, model, "2:4", {"--timeout-ms", "2000"}, endpoint);
  if (stage.pid < 0) return 1;
  worker::net::Socket s = dial(endpoint);
  std::vector<std::uint8_t> wire = how == "tokens"
                                       ? worker::encode_frame(worker::tokens_frame(0, 0, 0, {1, 2, 3}))
                                       : state_wire(how == "width" ? 64 : 128);
  if (how == "checksum") wire[wire.size() - 3] ^= 0x10;
  if (how == "magic") wire[0] = 'X';
  if (how == "truncated") wire.resize(wire.size() / 2);
  if (how != "silent") worker::net::write_all(s, wire.data(), wire.size(), kWait);
  if (how == "truncated") s.close();  // the rest never comes
  if (s.valid()) {
    worker::net::FrameRead r = worker::net::read_frame(s, kWait, "the stage");
    if (r.frame && r.frame->kind == worker::FrameKind::kError) {
      std::printf("reply: error frame: %s\n", r.frame->text.c_str());
    }
  }
  report(stage, "stage");
  return 0;
}

int next_dies(const std::string& exe, const std::string& model) {
  std::string last_ep, head_ep;
  Child last = start_stage(exe, model, "2:4", {}, last_ep);
  Child head = start_stage(exe, model, "0:2", {"--next", last_ep, "--timeout-ms", "5000"}, head_ep);
  if (last.pid < 0 || head.pid < 0) return 1;
  worker::net::Socket s = dial(head_ep);
  worker::WireError e;
  worker::net::write_frame(s, worker::tokens_frame(0, 0, 0, {1, 2, 3, 4, 5, 6, 7, 8}), kWait);
  worker::net::FrameRead r = worker::net::read_frame(s, kWait, "the first stage");
  std::printf("step 0: %s\n", r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str());
  worker::kill_child(last);  // SIGKILL: no goodbye, the socket just closes
  worker::net::write_frame(s, worker::tokens_frame(0, 1, 8, {9}), kWait);
  r = worker::net::read_frame(s, kWait, "the first stage");
  if (r.frame && r.frame->kind == worker::FrameKind::kError) {
    std::printf("reply: error frame: %s\n", r.frame->text.c_str());
  }
  report(head, "stage");
  return 0;
}

int head_misbehaves(const std::string& exe, const std::string& model, bool mid_reply) {
  worker::WireError e;
  worker::net::Socket listener = worker::net::listen_on({"127.0.0.1", 0}, e);
  const std::string endpoint = "127.0.0.1:" + std::to_string(worker::net::local_port(listener));
  std::string error;
  Child driver = worker::spawn_child(
      {exe, "--drive", "--model", model, "--connect", endpoint, "--timeout-ms", "3000"}, true, error);
  worker::net::Socket s = worker::net::accept_one(listener, kWait, e);
  worker::net::FrameRead r = worker::net::read_frame(s, kWait, "the driver");
  std::printf("request: %s\n", r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str());
  if (mid_reply) {
    worker::HiddenState logits = worker::make_test_hidden_state(8, 256, 2);
    auto wire = worker::encode_frame(worker::state_frame(worker::FrameKind::kLogits, 0, 0, 0, logits));
    worker::net::write_all(s, wire.data(), wire.size() / 3, kWait);
  }
  s.close();
  report(driver, "driver");
  return 0;
}

void put_le(std::uint8_t* out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

// A 48-byte header declaring 4,161,790 rows of 128 floats (2,147,483,640
// payload bytes, just under the codec's 2 GiB cap), then zeros. Before the
// stage checked a header against its own --ctx and width, it allocated (and
// zero-filled) the whole payload: 2.1 GB resident before it said anything.
int huge_header(const std::string& exe, const std::string& model) {
  std::string endpoint;
  Child stage = start_stage(exe, model, "2:4", {"--timeout-ms", "3000"}, endpoint);
  if (stage.pid < 0) return 1;
  worker::net::Socket s = dial(endpoint);
  std::vector<std::uint8_t> header = state_wire(128);
  header.resize(worker::kFrameHeaderSize);
  const std::uint64_t rows = 4161790, payload = rows * (4 + 128 * 4);
  put_le(header.data() + 12, rows, 4);
  put_le(header.data() + 32, payload, 8);
  worker::net::write_all(s, header.data(), header.size(), kWait);
  const std::vector<std::uint8_t> zeros(1 << 20);
  std::size_t sent = 0;
  while (sent < (300U << 20) &&
         !worker::net::write_all(s, zeros.data(), zeros.size(), 2000)) {
    sent += zeros.size();
  }
  report(stage, "stage");
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);  // the stage is the only child reaped
  const long mib = usage.ru_maxrss / 1024;  // Linux: KiB
  std::printf("stage peak RSS %ld MiB, %s 256 MiB\n", mib, mib <= 256 ? "within" : "OVER");
  return 0;
}

// A valid 8-row state frame, one byte every 100 ms: the stage's --timeout-ms
// (1000) bounds the whole frame, not each read, so it is cut after ~1 s.
int slow_peer(const std::string& exe, const std::string& model) {
  std::string endpoint;
  Child stage = start_stage(exe, model, "2:4", {"--timeout-ms", "1000"}, endpoint);
  if (stage.pid < 0) return 1;
  worker::net::Socket s = dial(endpoint);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::uint8_t> wire = state_wire(128);
  for (std::uint8_t byte : wire) {
    if (worker::net::write_all(s, &byte, 1, 1000)) break;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pollfd p{stage.stderr_fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) break;  // the stage has spoken: it cut the link
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  report(stage, "stage");
  std::printf("cut %s\n", ms < 3000 ? "within 3000 ms" : "LATE");
  return 0;
}

worker::net::FrameRead step(worker::net::Socket& s, std::uint32_t step_no, std::int32_t pos0) {
  const worker::HiddenState h = worker::make_test_hidden_state(4, 128, 7 + step_no);
  worker::net::write_frame(s, worker::state_frame(worker::FrameKind::kState, 0, step_no, pos0, h),
                           kWait);
  return worker::net::read_frame(s, kWait, "the stage");
}

// While a stage serves its peer, another connection is refused at once (not
// queued for ever), and the first peer's next step is answered as before.
int second_peer(const std::string& exe, const std::string& model) {
  std::string endpoint;
  Child stage = start_stage(exe, model, "2:4", {"--timeout-ms", "5000"}, endpoint);
  if (stage.pid < 0) return 1;
  worker::net::Socket s = dial(endpoint);
  worker::net::FrameRead r = step(s, 0, 0);
  std::printf("first peer, step 0: %s\n", r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str());
  std::string error;
  worker::WireError e;
  auto ep = worker::net::parse_endpoint(endpoint, error);
  worker::net::Socket other = worker::net::connect_to(*ep, 300, e);
  if (!other.valid()) {
    std::printf("second peer: refused\n");
  } else {
    worker::net::write_frame(other, worker::end_frame(0), 1000);
    worker::net::FrameRead o = worker::net::read_frame(other, 1000, "the stage");
    std::printf("second peer: connected, %s\n", o.frame ? worker::kind_name(o.frame->kind) : o.error.message.c_str());
  }
  r = step(s, 1, 4);
  std::printf("first peer, step 1: %s\n", r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str());
  worker::net::write_frame(s, worker::end_frame(0), kWait);
  worker::net::read_frame(s, kWait, "the stage");
  report(stage, "stage");
  return 0;
}

// One bad frame to a fresh stage: non-finite state, positions out of order or
// past --ctx, a token outside the vocabulary (to the first stage [0, 2)).
int bad_content(const std::string& exe, const std::string& model, const std::string& how) {
  std::string endpoint;
  const bool tokens = how == "vocab";
  const std::vector<std::string> extra = {"--timeout-ms", "3000"};
  Child stage = start_stage(exe, model, tokens ? "0:2" : "2:4", extra, endpoint);
  if (stage.pid < 0) return 1;
  worker::net::Socket s = dial(endpoint);
  worker::Frame f;
  if (tokens) {
    f = worker::tokens_frame(0, 0, 0, {1, 2, 70000});
  } else {
    // The stage's context is llama_n_ctx(): --ctx 256, the default.
    const std::uint32_t rows = how == "past-ctx" ? 257 : 8;
    f = worker::state_frame(worker::FrameKind::kState, 0, 0, 0,
                            worker::make_test_hidden_state(rows, 128, 1));
    if (how == "nan") f.values[3 * 128 + 5] = std::numeric_limits<float>::quiet_NaN();
    if (how == "inf") f.values[6 * 128 + 1] = std::numeric_limits<float>::infinity();
    if (how == "positions") std::swap(f.positions[2], f.positions[3]);
  }
  worker::net::write_frame(s, f, kWait);
  worker::net::FrameRead r = worker::net::read_frame(s, kWait, "the stage");
  if (r.frame && r.frame->kind == worker::FrameKind::kError) {
    std::printf("reply: error frame: %s\n", r.frame->text.c_str());
  }
  report(stage, "stage");
  return 0;
}

// The temporary directory of make_key's files, removed when the scenario ends.
std::string g_key_dir;

// A fresh key file (64 hex digits from /dev/urandom) in a temporary directory.
std::string make_key(const std::string& name, mode_t mode, std::string& text) {
  std::string& dir = g_key_dir;
  if (dir.empty()) {
    char tmpl[] = "/tmp/worker-bad-peer-XXXXXX";
    dir = ::mkdtemp(tmpl) != nullptr ? tmpl : "/tmp";
  }
  unsigned char raw[32] = {};
  const int rnd = ::open("/dev/urandom", O_RDONLY);
  if (rnd >= 0 && ::read(rnd, raw, sizeof raw) != static_cast<ssize_t>(sizeof raw)) std::printf("short urandom\n");
  if (rnd >= 0) ::close(rnd);
  static const char* hex = "0123456789abcdef";
  text.clear();
  for (unsigned char b : raw) text += {hex[b >> 4], hex[b & 15]};
  const std::string path = dir + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    std::printf("cannot write %s\n", path.c_str());
  }
  if (fd >= 0) ::close(fd);
  ::chmod(path.c_str(), mode);
  return path;
}

// The links are TLS 1.3 with a pre-shared key. A stage
// with --key serves a peer holding it; a peer with another key, a plain peer,
// or (a stage without --key) a TLS peer is one line and exit 21, nothing decoded.
int tls_link(const std::string& exe, const std::string& model, const std::string& how) {
  std::string stage_text, peer_text;
  const std::string stage_key = make_key("stage.key", 0600, stage_text);
  const std::string peer_key = how == "tls-wrong-key" ? make_key("other.key", 0600, peer_text) : stage_key;
  std::vector<std::string> extra = {"--timeout-ms", how == "tls-silent" ? "1000" : "3000"};
  if (how != "tls-on-plain") extra.insert(extra.end(), {"--key", stage_key});
  std::string endpoint;
  Child stage = start_stage(exe, model, "2:4", extra, endpoint);
  if (stage.pid < 0) return 1;
  worker::net::Socket s = dial(endpoint);
  if (how != "tls-plain-client" && how != "tls-silent") {
    std::string error;
    auto key = worker::net::load_key(peer_key, error);
    if (!key) std::printf("peer key: %s\n", error.c_str());
    if (key) {
      if (auto e = worker::net::start_tls(s, *key, false, kWait, "the stage")) {
        std::printf("peer: %s\n", e->message.c_str());
      } else {
        std::printf("peer: TLS up\n");
      }
    }
  }
  if (how == "tls-silent") {
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  } else if (s.valid()) {
    worker::net::FrameRead r = step(s, 0, 0);
    std::printf("step 0: %s\n", r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str());
    if (r.frame && r.frame->kind == worker::FrameKind::kLogits) {
      worker::net::write_frame(s, worker::end_frame(0), kWait);
      worker::net::read_frame(s, kWait, "the stage");
    }
  }
  const std::string out = worker::read_all(stage.stdout_fd, kWait);
  const std::string err = worker::read_all(stage.stderr_fd, kWait);
  const int code = worker::wait_child(stage, kWait);
  std::printf("stage exit %d: %s", code, err.empty() ? "(no stderr)\n" : err.c_str());
  const bool leaked = (out + err).find(stage_text) != std::string::npos;
  std::printf("key %s\n", leaked ? "LEAKED" : "in no output");
  return 0;
}

// The driver spawns a TLS pipeline with --key and checks it against the
// whole model: every link authenticated, the same bits, the key in no output.
int tls_drive(const std::string& exe, const std::string& model) {
  std::string text;
  const std::string key = make_key("chain.key", 0600, text);
  std::string error;
  Child d = worker::spawn_child({exe, "--drive", "--model", model, "--split", "0:2,2:4", "--key", key,
                                 "--check-local", "--json"},
                                true, error);
  const std::string out = worker::read_all(d.stdout_fd, kWait);
  const std::string err = worker::read_all(d.stderr_fd, kWait);
  const int code = worker::wait_child(d, kWait);
  std::printf("driver exit %d%s\n", code, err.empty() ? "" : (": " + err).c_str());
  std::printf("bit-identical: %s\n", out.find("\"identical_to_local\": true") != std::string::npos ? "yes" : "no");
  std::printf("key %s\n", (out + err).find(text) != std::string::npos ? "LEAKED" : "in no output");
  return 0;
}

int key_mode(const std::string& exe, const std::string& model) {
  std::string text;
  const std::string key = make_key("open.key", 0644, text);
  std::string endpoint;
  Child stage = start_stage(exe, model, "2:4", {"--key", key}, endpoint);
  report(stage, "stage");
  return 0;
}

int direct_connect(const std::string& exe, const std::string& model) {
  std::string last_ep, answers, mid_ep, head_ep;
  Child last = start_last(exe, model, "3:4", last_ep, answers);
  Child mid = start_stage(exe, model, "1:3", {"--direct", "--next", last_ep, "--batch", "16"}, mid_ep);
  Child head = start_stage(exe, model, "0:1", {"--direct", "--next", mid_ep, "--batch", "16"}, head_ep);
  if (last.pid < 0 || mid.pid < 0 || head.pid < 0 || answers.empty()) return 1;
  std::string error;
  Child d = worker::spawn_child({exe, "--drive", "--model", model, "--connect", head_ep, "--answers", answers,
                                 "--prompt", "40", "--batch", "16", "--steps", "5", "--check-local", "--json"},
                                true, error);
  const std::string out = worker::read_all(d.stdout_fd, kWait);
  const std::string err = worker::read_all(d.stderr_fd, kWait);
  std::printf("driver exit %d%s\n", worker::wait_child(d, kWait), err.empty() ? "" : (": " + err).c_str());
  std::printf("bit-identical: %s\n", out.find("\"identical_to_local\": true") != std::string::npos ? "yes" : "no");
  std::printf("direct: %s\n", out.find("\"direct\": true") != std::string::npos ? "yes" : "no");
  for (auto* c : {&head, &mid, &last}) {
    // Each stage prints its statistics at the end: the first two send on
    // 8 frames (a 40-token prompt in 3 parts and its state, 5 steps' states).
    const std::string stats = worker::read_all(c->stdout_fd, kWait);
    const std::size_t at = stats.find("\"frames_to_next\":");
    std::printf("frames_to_next %ld, ", at == std::string::npos ? -1L : std::strtol(stats.c_str() + at + 17, nullptr, 10));
    report(*c, "stage");
  }
  return 0;
}

// How a frame read from a link ended, on one line after LABEL.
void print_frame(const char* label, const worker::net::FrameRead& r) {
  std::printf("%s: %s%s\n", label, r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str(),
              r.frame && r.frame->kind == worker::FrameKind::kError ? (" frame: " + r.frame->text).c_str() : "");
}

int ring_connect(const std::string& exe, const std::string& model) {
  std::string last_ep, answers, ring, mid_ep, head_ep;
  Child last = start_last(exe, model, "3:4", last_ep, answers, &ring);
  Child mid = start_stage(exe, model, "1:3", {"--direct", "--next", last_ep, "--batch", "16"}, mid_ep);
  Child head = start_stage(exe, model, "0:1", {"--direct", "--next", mid_ep, "--ring", ring, "--batch", "16"},
                           head_ep);
  if (last.pid < 0 || mid.pid < 0 || head.pid < 0 || answers.empty() || ring.empty()) return 1;
  std::string error;
  Child d = worker::spawn_child({exe, "--drive", "--model", model, "--connect", head_ep, "--answers", answers,
                                 "--ring", "--prompt", "40", "--batch", "16", "--steps", "5", "--check-local",
                                 "--json"},
                                true, error);
  const std::string out = worker::read_all(d.stdout_fd, kWait);
  const std::string err = worker::read_all(d.stderr_fd, kWait);
  std::printf("driver exit %d%s\n", worker::wait_child(d, kWait), err.empty() ? "" : (": " + err).c_str());
  std::printf("bit-identical: %s\n", out.find("\"identical_to_local\": true") != std::string::npos ? "yes" : "no");
  std::printf("ring: %s\n", out.find("\"ring\": true") != std::string::npos ? "yes" : "no");
  for (auto* c : {&head, &mid, &last}) {
    // The first two send on 8 frames (a 40-token prompt in 3 parts and its
    // state, 5 steps' states); the last feeds 5 tokens back, one per step.
    const std::string stats = worker::read_all(c->stdout_fd, kWait);
    std::printf("frames_to_next %ld, fed_back %ld, ", stat_of(stats, "frames_to_next"), stat_of(stats, "fed_back"));
    report(*c, "stage");
  }
  return 0;
}

// The first stage [0, 2) of a ring whose next stage and last stage are this
// program: the prompt asks for 3 steps; the ring then sends step 5's token.
int ring_out_of_order(const std::string& exe, const std::string& model) {
  worker::WireError e;
  worker::net::Socket next_listener = worker::net::listen_on({"127.0.0.1", 0}, e);
  worker::net::Socket ring_listener = worker::net::listen_on({"127.0.0.1", 0}, e);
  const std::string next = "127.0.0.1:" + std::to_string(worker::net::local_port(next_listener));
  const std::string ring = "127.0.0.1:" + std::to_string(worker::net::local_port(ring_listener));
  std::string head_ep;
  Child head = start_stage(exe, model, "0:2", {"--direct", "--next", next, "--ring", ring, "--timeout-ms", "5000"},
                           head_ep);
  if (head.pid < 0) return 1;
  worker::net::Socket down = worker::net::accept_one(next_listener, kWait, e);
  worker::net::Socket fed = worker::net::accept_one(ring_listener, kWait, e);
  worker::net::Socket s = dial(head_ep);
  worker::Frame prompt = worker::tokens_frame(0, 0, 0, {1, 2, 3});
  prompt.ring_steps = 3;
  worker::net::write_frame(s, prompt, kWait);
  worker::net::FrameRead state = worker::net::read_frame(down, kWait, "the first stage");
  std::printf("state: %s, ring steps %d\n", state.frame ? worker::kind_name(state.frame->kind) : state.error.message.c_str(),
              state.frame ? state.frame->ring_steps : -2);
  worker::Frame wrong = worker::tokens_frame(0, 5, 3, {7});
  wrong.ring_steps = 2;
  worker::net::write_frame(fed, wrong, kWait);
  print_frame("down the chain", worker::net::read_frame(down, kWait, "the first stage"));
  report(head, "first stage");
  return 0;
}

int direct_no_driver(const std::string& exe, const std::string& model) {
  std::string last_ep, answers;
  Child last = start_last(exe, model, "2:4", last_ep, answers);
  if (last.pid < 0 || answers.empty()) return 1;
  worker::net::Socket s = dial(last_ep);
  report(last, "last stage");
  return 0;
}

// A direct chain [0, 2) + [2, 4) whose first stage refuses `request`: the
// error comes down the chain to the driver's answer link.
int direct_error(const std::string& exe, const std::string& model, const worker::Frame& request) {
  std::string last_ep, answers, head_ep;
  Child last = start_last(exe, model, "2:4", last_ep, answers);
  Child head = start_stage(exe, model, "0:2", {"--direct", "--next", last_ep, "--timeout-ms", "5000"}, head_ep);
  if (last.pid < 0 || head.pid < 0 || answers.empty()) return 1;
  worker::net::Socket s = dial(head_ep);
  worker::net::Socket a = dial(answers);
  worker::net::write_frame(s, request, kWait);
  print_frame("answer", worker::net::read_frame(a, kWait, "the answer link"));
  report(head, "first stage");
  report(last, "last stage");
  return 0;
}

std::string frame_list(const std::vector<worker::Frame>& frames) {
  std::string out;
  for (const worker::Frame& f : frames) {
    out += (out.empty() ? "" : ", ") + std::string(worker::kind_name(f.kind)) + "@" +
           (f.positions.empty() ? "-" : std::to_string(f.positions.front()));
  }
  return out;
}

// Stage [0, 2) at --batch 8 streams a 37-token prompt as 4 parts and a state
// frame; this next stage reads 2 parts, drops the connection and takes the
// stage's reconnect: everything of the step must come again, in order.
int parts_resent(const std::string& exe, const std::string& model) {
  worker::WireError e;
  worker::net::Socket listener = worker::net::listen_on({"127.0.0.1", 0}, e);
  const std::string next = "127.0.0.1:" + std::to_string(worker::net::local_port(listener));
  std::string head_ep;
  Child head = start_stage(exe, model, "0:2",
                           {"--next", next, "--batch", "8", "--recover-ms", "5000", "--timeout-ms", "5000"},
                           head_ep);
  if (head.pid < 0) return 1;
  worker::net::Socket down = worker::net::accept_one(listener, kWait, e);
  worker::net::Socket up = dial(head_ep);
  std::vector<std::int32_t> prompt;
  for (std::int32_t t = 0; t < 37; ++t) prompt.push_back(t * 5 % 256);
  worker::net::write_frame(up, worker::tokens_frame(0, 0, 0, prompt), kWait);
  std::vector<worker::Frame> before;
  for (int i = 0; i < 2; ++i) {
    worker::net::FrameRead r = worker::net::read_frame(down, kWait, "stage [0, 2)");
    if (r.frame) before.push_back(*r.frame);
  }
  down.close();
  std::printf("before the drop: %s\n", frame_list(before).c_str());
  down = worker::net::accept_one(listener, kWait, e);
  std::vector<worker::Frame> after;
  while (down.valid()) {
    worker::net::FrameRead r = worker::net::read_frame(down, kWait, "stage [0, 2)");
    if (!r.frame) break;
    after.push_back(*r.frame);
    if (r.frame->kind != worker::FrameKind::kStatePart) break;
  }
  std::printf("after the reconnect: %s\n", frame_list(after).c_str());
  worker::Frame logits = worker::state_frame(worker::FrameKind::kLogits, 0, 0, 36,
                                             worker::make_test_hidden_state(1, 256, 3));
  logits.next_token = 1;
  worker::net::write_frame(down, logits, kWait);
  worker::net::FrameRead reply = worker::net::read_frame(up, kWait, "stage [0, 2)");
  std::printf("reply: %s\n", reply.frame ? worker::kind_name(reply.frame->kind) : reply.error.message.c_str());
  worker::net::write_frame(up, worker::end_frame(0), kWait);
  worker::net::FrameRead end = worker::net::read_frame(down, kWait, "stage [0, 2)");
  if (end.frame) worker::net::write_frame(down, worker::end_frame(0), kWait);
  worker::net::read_frame(up, kWait, "stage [0, 2)");
  const std::string stats = worker::read_all(head.stdout_fd, kWait);
  const auto at = stats.find("\"reconnects\":");
  std::printf("reconnects %s\n", at == std::string::npos ? "?" : stats.substr(at + 14, 1).c_str());
  report(head, "stage");
  return 0;
}

// Last stage [2, 4): 2 state parts, a dropped connection, then the whole step
// (4 parts and the state frame) from a reconnected previous stage. Its answer
// must be the same bits as a fresh stage's that got every frame once.
int parts_skipped(const std::string& exe, const std::string& model) {
  const worker::HiddenState rows = worker::make_test_hidden_state(37, 128, 5);
  auto frame_of = [&](std::uint32_t from, std::uint32_t to) {
    worker::HiddenState h;
    h.n_tokens = to - from;
    h.n_embd = 128;
    h.values.assign(rows.values.begin() + from * 128, rows.values.begin() + to * 128);
    return worker::state_frame(to == 37 ? worker::FrameKind::kState : worker::FrameKind::kStatePart, 0,
                               0, static_cast<std::int32_t>(from), h);
  };
  auto answer = [&](bool drop, std::string& out) -> std::vector<float> {
    std::string ep;
    Child last = start_stage(exe, model, "2:4", {"--batch", "8", "--recover-ms", "5000"}, ep);
    worker::net::Socket s = dial(ep);
    if (drop) {
      for (std::uint32_t from : {0U, 8U}) worker::net::write_frame(s, frame_of(from, from + 8), kWait);
      s.close();
      s = dial(ep);
    }
    for (std::uint32_t from = 0; from < 37; from += 8) {
      worker::net::write_frame(s, frame_of(from, std::min(from + 8, 37U)), kWait);
    }
    worker::net::FrameRead r = worker::net::read_frame(s, kWait, "stage [2, 4)");
    worker::net::write_frame(s, worker::end_frame(0), kWait);
    worker::net::read_frame(s, kWait, "stage [2, 4)");
    out = worker::read_all(last.stdout_fd, kWait);
    const int code = worker::wait_child(last, kWait);
    if (!r.frame || code != 0) {
      std::printf("%s run: exit %d, %s\n", drop ? "dropped" : "fresh", code,
                  r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str());
      return {};
    }
    std::printf("%s run: %u rows from position %d\n", drop ? "dropped" : "fresh", r.frame->n_tokens,
                r.frame->positions.front());
    return r.frame->values;
  };
  std::string fresh_stats, dropped_stats;
  const std::vector<float> fresh = answer(false, fresh_stats);
  const std::vector<float> dropped = answer(true, dropped_stats);
  const bool same = !fresh.empty() && fresh.size() == dropped.size() &&
                    std::memcmp(fresh.data(), dropped.data(), fresh.size() * sizeof(float)) == 0;
  const auto at = dropped_stats.find("\"tokens\":");
  std::printf("tokens the dropped stage decoded: %s\n%s\n",
              at == std::string::npos ? "?" : dropped_stats.substr(at + 10, 3).c_str(),
              same ? "the same bits as the fresh stage" : "DIFFERENT from the fresh stage");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: worker_bad_peer WORKER MODEL SCENARIO\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  const std::string exe = argv[1], model = argv[2], scenario = argv[3];
  if (scenario == "next-dies") return next_dies(exe, model);
  if (scenario == "head-drops") return head_misbehaves(exe, model, true);
  if (scenario == "head-vanishes") return head_misbehaves(exe, model, false);
  if (scenario == "parts-resent") return parts_resent(exe, model);
  if (scenario == "parts-skipped") return parts_skipped(exe, model);
  if (scenario == "huge") return huge_header(exe, model);
  if (scenario.rfind("tls-", 0) == 0 || scenario == "key-mode") {
    const int rc = scenario == "tls-drive"  ? tls_drive(exe, model)
                   : scenario == "key-mode" ? key_mode(exe, model)
                                            : tls_link(exe, model, scenario);
    if (!g_key_dir.empty() && g_key_dir != "/tmp") std::filesystem::remove_all(g_key_dir);
    return rc;
  }
  if (scenario == "slow") return slow_peer(exe, model);
  if (scenario == "direct-connect") return direct_connect(exe, model);
  if (scenario == "direct-error") return direct_error(exe, model, worker::tokens_frame(0, 0, 0, {1, 2, 70000}));
  if (scenario == "direct-no-driver") return direct_no_driver(exe, model);
  if (scenario == "ring-connect") return ring_connect(exe, model);
  if (scenario == "ring-out-of-order") return ring_out_of_order(exe, model);
  if (scenario == "ring-missing") {
    // A chain without --ring asked for 3 steps fed back.
    worker::Frame prompt = worker::tokens_frame(0, 0, 0, {1, 2, 3});
    prompt.ring_steps = 3;
    return direct_error(exe, model, prompt);
  }
  if (scenario == "second-peer") return second_peer(exe, model);
  if (scenario == "nan" || scenario == "inf" || scenario == "positions" || scenario == "past-ctx" ||
      scenario == "vocab") {
    return bad_content(exe, model, scenario);
  }
  return broken_frame(exe, model, scenario);
}
