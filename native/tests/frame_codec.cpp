// The wire frame (protocol 4) and its socket transport, model-free: every
// kind round-trips bit for bit; malformed, truncated, corrupt and wrong-width
// frames, a silent peer and a peer that disconnects each give their own
// error, never a hang or a crash.
//
// usage: worker_frame_codec

#ifndef WORKER_NO_TRANSPORT
#include <sys/socket.h>
#include <unistd.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/frame.hpp"
#ifndef WORKER_NO_TRANSPORT
#include "worker/net.hpp"
#endif

#include "check.hpp"

namespace {

void expect_error(std::vector<std::uint8_t> wire, const char* damage, const char* needle) {
  const worker::DecodedFrame d = worker::decode_frame(wire.data(), wire.size());
  check(!d.frame.has_value(), std::string(damage) + ": accepted");
  check(d.error.find(needle) != std::string::npos,
        std::string(damage) + ": error `" + d.error + "` lacks `" + needle + "`");
}

worker::Frame sample_state() {
  return worker::state_frame(worker::FrameKind::kState, 7, 3, 8,
                             worker::make_test_hidden_state(2, 5, 42));
}

void test_round_trips() {
  using worker::Frame;
  const std::vector<Frame> frames = {
      worker::tokens_frame(1, 0, 0, {5, 17, 0, 127}),
      [] {
        Frame f = worker::tokens_frame(1, 0, 0, {5, 17});
        f.ring_steps = 63;  // a ring's prompt: 63 greedy steps fed back after it
        return f;
      }(),
      sample_state(),
      [] {
        Frame f = sample_state();
        f.ring_steps = 0;
        return f;
      }(),
      worker::state_frame(worker::FrameKind::kStatePart, 7, 0, 0,
                          worker::make_test_hidden_state(3, 5, 43)),
      [] {
        Frame f = worker::state_frame(worker::FrameKind::kLogits, 1, 4, 11,
                                      worker::make_test_hidden_state(1, 9, 9));
        f.next_token = 6;
        return f;
      }(),
      worker::end_frame(3),
      worker::error_frame(2, "stage 1: decode failed"),
  };
  for (const Frame& f : frames) {
    const auto wire = worker::encode_frame(f);
    const worker::DecodedFrame d = worker::decode_frame(wire.data(), wire.size());
    const std::string name = worker::kind_name(f.kind);
    check(d.frame.has_value(), name + " round trip: " + d.error);
    if (!d.frame) continue;
    const Frame& g = *d.frame;
    check(g.kind == f.kind && g.seq_id == f.seq_id && g.step == f.step &&
              g.next_token == f.next_token && g.ring_steps == f.ring_steps &&
              g.n_tokens == f.n_tokens && g.n_embd == f.n_embd &&
              g.positions == f.positions && g.tokens == f.tokens && g.text == f.text,
          name + " round trip: fields differ");
    check(g.values.size() == f.values.size() &&
              std::memcmp(g.values.data(), f.values.data(), f.values.size() * sizeof(float)) == 0,
          name + " round trip: values are not bit-identical");
  }
  const auto st = sample_state();
  check(st.positions == std::vector<std::int32_t>({8, 9}), "state positions start at pos0");
}

void test_rejections() {
  const auto good = worker::encode_frame(sample_state());
  const std::size_t h = worker::kFrameHeaderSize;
  auto w = good;
  w.pop_back();
  expect_error(w, "truncated payload", "frame size");
  expect_error(std::vector<std::uint8_t>(good.begin(), good.begin() + 20), "truncated header",
               "too short");
  w = good;
  w[h + 8 + 3] ^= 0x80;  // the sign of the first value
  expect_error(w, "flipped value bit", "checksum");
  w = good;
  w[h] ^= 0x01;  // a position
  expect_error(w, "flipped position bit", "checksum");
  w = good;
  w[1] = 'X';
  expect_error(w, "bad magic", "magic");
  w = good;
  w[4] = 1;
  expect_error(w, "protocol 1 frame", "protocol version 1, expected 4");
  w = good;
  w[4] = 2;
  expect_error(w, "protocol 2 frame", "protocol version 2, expected 4");
  w = good;
  w[4] = 3;
  expect_error(w, "protocol 3 frame", "protocol version 3, expected 4");
  w = good;
  w[8] = 0;
  expect_error(w, "kind 0", "unknown frame kind");
  w = good;
  w[8] = 7;
  expect_error(w, "kind 7", "unknown frame kind 7");
  w = good;
  w[6] = 2;  // int32 data in a state frame
  expect_error(w, "dtype of another kind", "does not fit a state frame");
  w = good;
  w[10] = 1;
  expect_error(w, "reserved field", "reserved");
  w = good;
  w[16] = 6;  // n_embd 5 -> 6: the payload no longer matches the dims
  expect_error(w, "dims that do not match the payload", "does not match dims");
  w = good;
  for (int i = 12; i < 20; ++i) w[static_cast<std::size_t>(i)] = 0xff;  // 2^32-1 x 2^32-1
  expect_error(w, "huge dims", "exceed the payload limit");
  w = worker::encode_frame(worker::end_frame(0));
  w[12] = 1;
  expect_error(w, "end frame with rows", "does not match dims");

  const auto f = sample_state();
  check(worker::check_frame(f, worker::FrameKind::kState, 5).empty(), "right width accepted");
  const std::string wrong = worker::check_frame(f, worker::FrameKind::kState, 64);
  check(wrong.find("wrong width") != std::string::npos && wrong.find("5 floats wide") != std::string::npos,
        "wrong width: `" + wrong + "`");
  const std::string kind = worker::check_frame(f, worker::FrameKind::kTokens, 0);
  check(kind.find("expected a tokens frame, got a state frame") != std::string::npos,
        "wrong kind: `" + kind + "`");

  bool threw = false;
  worker::Frame bad = sample_state();
  bad.values.pop_back();
  try {
    worker::encode_frame(bad);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  check(threw, "encoding an inconsistent frame throws");
}

#ifndef WORKER_NO_TRANSPORT
// One end of a socket pair writes `bytes` then closes (or not); the other reads.
worker::net::FrameRead read_after(const std::vector<std::uint8_t>& bytes, bool close_writer,
                                  int timeout_ms) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return {};
  worker::net::Socket reader(fds[0]);
  worker::net::Socket writer(fds[1]);
  if (!bytes.empty()) worker::net::write_all(writer, bytes.data(), bytes.size(), 1000);
  if (close_writer) writer.close();
  return worker::net::read_frame(reader, timeout_ms, "the test peer");
}

void test_transport() {
  const auto good = worker::encode_frame(sample_state());
  auto r = read_after(good, true, 1000);
  check(r.frame.has_value() && r.bytes == good.size(), "a whole frame is read: " + r.error.message);

  r = read_after(std::vector<std::uint8_t>(good.begin(), good.end() - 7), true, 1000);
  check(!r.frame && r.error.code == worker::kExitFrame &&
            r.error.message.find("truncated frame from the test peer") != std::string::npos,
        "truncated then closed: " + r.error.message);

  r = read_after({}, true, 1000);
  check(!r.frame && r.error.code == worker::kExitPeer &&
            r.error.message.find("the test peer disconnected") != std::string::npos,
        "closed before a frame: " + r.error.message);

  const auto start = std::chrono::steady_clock::now();
  r = read_after(std::vector<std::uint8_t>(good.begin(), good.begin() + 30), false, 200);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start).count();
  check(!r.frame && r.error.code == worker::kExitTimeout &&
            r.error.message.find("within 200 ms (30 of 48 header bytes)") != std::string::npos,
        "stalled peer: " + r.error.message);
  check(ms >= 150 && ms < 5000, "the timeout took " + std::to_string(ms) + " ms");

  auto bad = good;
  bad[bad.size() - 1] ^= 0x01;
  r = read_after(bad, true, 1000);
  check(!r.frame && r.error.code == worker::kExitFrame &&
            r.error.message.find("checksum mismatch") != std::string::npos,
        "corrupt frame: " + r.error.message);

  // A header over the reader's limits is refused before its payload
  // is allocated or read (none of it is sent here: the refusal cannot wait for it).
  auto header = std::vector<std::uint8_t>(good.begin(), good.begin() + worker::kFrameHeaderSize);
  worker::FrameHeader h;
  check(worker::parse_header(good.data(), good.size(), h).empty(), "the sample header parses");
  check(worker::check_limits(h, {h.n_tokens, h.n_embd}).empty(), "a frame at the limits fits");
  check(!worker::check_limits(h, {h.n_tokens - 1, h.n_embd}).empty(), "one row too many is refused");
  check(!worker::check_limits(h, {h.n_tokens, h.n_embd - 1}).empty(), "too wide is refused");
  {
    int fds[2];
    check(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair");
    worker::net::Socket reader(fds[0]), writer(fds[1]);
    worker::net::write_all(writer, header.data(), header.size(), 1000);
    r = worker::net::read_frame(reader, 5000, "the test peer", {h.n_tokens - 1, h.n_embd});
    check(!r.frame && r.error.code == worker::kExitFrame &&
              r.error.message.find("refused before reading it") != std::string::npos,
          "an oversized header, payload never sent: " + r.error.message);
  }
  worker::Frame nan = sample_state();
  check(worker::first_non_finite(nan).empty(), "finite values pass");
  nan.values.back() = -std::numeric_limits<float>::infinity();
  check(worker::first_non_finite(nan).find("is -inf") != std::string::npos, "an infinity is found");

  std::string error;
  check(!worker::net::parse_endpoint("localhost:80", error) &&
            error.find("numeric IPv4") != std::string::npos, "a host name is refused");
  check(!worker::net::parse_endpoint("127.0.0.1:70000", error), "port 70000 is refused");
  const auto e = worker::net::parse_endpoint("127.0.0.1:0", error);
  check(e && e->port == 0, "127.0.0.1:0 parses");
}

#endif  // WORKER_NO_TRANSPORT

}  // namespace

// The digest reply row is part of the protocol: a stage and a driver of
// different builds must agree on it bit for bit. Known answers (FNV-1a 64 of
// the little-endian float32 bytes, computed independently), across the
// function's block boundary of 256 floats.
void test_digest_row() {
  const float small[] = {1.0F, -2.5F, 0.0F, 3.14159274F};
  float out[worker::kDigestWidth] = {};
  worker::digest_row(small, 4, out);
  check(out[0] == 60739.0F && out[1] == 25954.0F && out[2] == 32768.0F && out[3] == 44298.0F,
        "digest of 4 floats: 0xad0a80006562ed43, low 16 bits first");
  std::vector<float> row(1000);
  for (std::size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(i) * 0.25F - 100.0F;
  worker::digest_row(row.data(), static_cast<std::uint32_t>(row.size()), out);
  check(out[0] == 58151.0F && out[1] == 12918.0F && out[2] == 43016.0F && out[3] == 56452.0F,
        "digest of 1000 floats (3 blocks and a part): 0xdc84a8083276e327");
  worker::digest_row(row.data(), 0, out);
  check(out[0] == 8997.0F && out[1] == 33826.0F && out[2] == 40164.0F && out[3] == 52210.0F,
        "digest of no floats: FNV-1a 64's offset basis");
}

int main() {
  test_round_trips();
  test_digest_row();
  test_rejections();
#ifndef WORKER_NO_TRANSPORT
  test_transport();
#endif
  std::printf("frame codec: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
