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

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "worker/frame.hpp"
#include "worker/net.hpp"
#include "worker/spawn.hpp"

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
  if (how != "silent") worker::net::write_all(s.fd(), wire.data(), wire.size(), kWait);
  if (how == "truncated") s.close();  // the rest never comes
  if (s.valid()) {
    worker::net::FrameRead r = worker::net::read_frame(s.fd(), kWait, "the stage");
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
  worker::net::write_frame(s.fd(), worker::tokens_frame(0, 0, 0, {1, 2, 3, 4, 5, 6, 7, 8}), kWait);
  worker::net::FrameRead r = worker::net::read_frame(s.fd(), kWait, "the first stage");
  std::printf("step 0: %s\n", r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str());
  worker::kill_child(last);  // SIGKILL: no goodbye, the socket just closes
  worker::net::write_frame(s.fd(), worker::tokens_frame(0, 1, 8, {9}), kWait);
  r = worker::net::read_frame(s.fd(), kWait, "the first stage");
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
  worker::net::FrameRead r = worker::net::read_frame(s.fd(), kWait, "the driver");
  std::printf("request: %s\n", r.frame ? worker::kind_name(r.frame->kind) : r.error.message.c_str());
  if (mid_reply) {
    worker::HiddenState logits = worker::make_test_hidden_state(8, 256, 2);
    auto wire = worker::encode_frame(worker::state_frame(worker::FrameKind::kLogits, 0, 0, 0, logits));
    worker::net::write_all(s.fd(), wire.data(), wire.size() / 3, kWait);
  }
  s.close();
  report(driver, "driver");
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
  worker::net::write_frame(up.fd(), worker::tokens_frame(0, 0, 0, prompt), kWait);
  std::vector<worker::Frame> before;
  for (int i = 0; i < 2; ++i) {
    worker::net::FrameRead r = worker::net::read_frame(down.fd(), kWait, "stage [0, 2)");
    if (r.frame) before.push_back(*r.frame);
  }
  down.close();
  std::printf("before the drop: %s\n", frame_list(before).c_str());
  down = worker::net::accept_one(listener, kWait, e);
  std::vector<worker::Frame> after;
  while (down.valid()) {
    worker::net::FrameRead r = worker::net::read_frame(down.fd(), kWait, "stage [0, 2)");
    if (!r.frame) break;
    after.push_back(*r.frame);
    if (r.frame->kind != worker::FrameKind::kStatePart) break;
  }
  std::printf("after the reconnect: %s\n", frame_list(after).c_str());
  worker::Frame logits = worker::state_frame(worker::FrameKind::kLogits, 0, 0, 36,
                                             worker::make_test_hidden_state(1, 256, 3));
  logits.next_token = 1;
  worker::net::write_frame(down.fd(), logits, kWait);
  worker::net::FrameRead reply = worker::net::read_frame(up.fd(), kWait, "stage [0, 2)");
  std::printf("reply: %s\n", reply.frame ? worker::kind_name(reply.frame->kind) : reply.error.message.c_str());
  worker::net::write_frame(up.fd(), worker::end_frame(0), kWait);
  worker::net::FrameRead end = worker::net::read_frame(down.fd(), kWait, "stage [0, 2)");
  if (end.frame) worker::net::write_frame(down.fd(), worker::end_frame(0), kWait);
  worker::net::read_frame(up.fd(), kWait, "stage [0, 2)");
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
      for (std::uint32_t from : {0U, 8U}) worker::net::write_frame(s.fd(), frame_of(from, from + 8), kWait);
      s.close();
      s = dial(ep);
    }
    for (std::uint32_t from = 0; from < 37; from += 8) {
      worker::net::write_frame(s.fd(), frame_of(from, std::min(from + 8, 37U)), kWait);
    }
    worker::net::FrameRead r = worker::net::read_frame(s.fd(), kWait, "stage [2, 4)");
    worker::net::write_frame(s.fd(), worker::end_frame(0), kWait);
    worker::net::read_frame(s.fd(), kWait, "stage [2, 4)");
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
  return broken_frame(exe, model, scenario);
}
