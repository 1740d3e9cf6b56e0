// Frames over TCP (POSIX sockets), for the stage mode's loopback pipeline.
//
// Every read, write, accept and connect has a deadline: a silent or stalled
// peer becomes a timeout error, never a hang. Errors are values (a code and
// one line), never exceptions or signals (SIGPIPE is suppressed per send).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "worker/deadline.hpp"
#include "worker/frame.hpp"

namespace worker {

// Exit codes of the stage and driver modes (10-13 are the start-up gate's).
inline constexpr int kExitFrame = 20;       // malformed, truncated, corrupt, wrong-width or oversized
                                            // frame; non-finite state, bad positions or tokens
inline constexpr int kExitPeer = 21;        // a peer disconnected, could not be reached, or failed
                                            // TLS (wrong key; plain and TLS mixed)
inline constexpr int kExitTimeout = 22;     // a peer did not answer in time
inline constexpr int kExitModel = 23;       // the model or a layer range failed to load or run
inline constexpr int kExitRemote = 24;      // a stage further down reported an error
inline constexpr int kExitCheckpoint = 25;  // a checkpoint is unreadable or for another stage

struct WireError {
  int code = 0;  // one of the kExit* above
  std::string message;
};

namespace net {

struct Endpoint {
  std::string host;  // a numeric IPv4 address
  std::uint16_t port = 0;
};

// "HOST:PORT" (HOST a dotted IPv4 address, PORT 0-65535).
std::optional<Endpoint> parse_endpoint(std::string_view text, std::string& error);
std::string to_string(const Endpoint& e);

// An owned file descriptor, and its TLS session once start_tls() (tls.hpp)
// succeeded: every read and write below then goes through the session.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.fd_), tls_(other.tls_) {
    other.fd_ = -1;
    other.tls_ = nullptr;
  }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void* tls() const { return tls_; }  // the OpenSSL SSL*, or null on a plain link
  void set_tls(void* ssl) { tls_ = ssl; }
  void close();

 private:
  int fd_ = -1;
  void* tls_ = nullptr;
};

// Waits until fd is ready for `events` (POLLIN, POLLOUT) or the deadline
// passes; true when ready (or when poll failed: the next I/O reports it).
bool wait_ready(int fd, short events, const Deadline& deadline);

// Listens on the endpoint (port 0: one the OS picks; see local_port).
Socket listen_on(const Endpoint& at, WireError& error);
std::uint16_t local_port(const Socket& s);
// Waits at most timeout_ms for one connection.
Socket accept_one(const Socket& listener, int timeout_ms, WireError& error);
// Connects, retrying a refused connection until timeout_ms has passed (the
// peer may still be starting).
Socket connect_to(const Endpoint& to, int timeout_ms, WireError& error);

// Writes all bytes within timeout_ms; empty on success.
std::optional<WireError> write_all(Socket& s, const std::uint8_t* data, std::size_t size,
                                   int timeout_ms);
std::optional<WireError> write_frame(Socket& s, const Frame& frame, int timeout_ms,
                                     std::size_t* bytes = nullptr);

struct FrameRead {
  std::optional<Frame> frame;
  WireError error;         // when !frame
  std::size_t bytes = 0;   // read off the wire
};

// Reads one whole frame within timeout_ms in total (header and payload, however
// the peer slices its bytes: a peer sending a byte at a time is cut at the
// deadline too). `who` names the peer in errors ("the previous stage", "stage
// 1 at 127.0.0.1:4000"). A header over `limits` is refused (kExitFrame) before
// its payload is allocated or read.
FrameRead read_frame(Socket& s, int timeout_ms, const std::string& who, const FrameLimits& limits = {});

}  // namespace net

}  // namespace worker
