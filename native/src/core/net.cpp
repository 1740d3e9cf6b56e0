#include "worker/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "worker/deadline.hpp"
#include "worker/tls.hpp"

namespace worker::net {
namespace {

WireError err(int code, std::string message) { return WireError{code, std::move(message)}; }

std::string sys_error(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Portable to macOS (no SOCK_CLOEXEC, accept4 or MSG_NOSIGNAL there): the
// descriptor is made close-on-exec (stage children must not inherit it) and
// SIGPIPE is suppressed per socket or per send.
#ifdef MSG_NOSIGNAL
constexpr int kSendFlags = MSG_NOSIGNAL | MSG_DONTWAIT;
#else
constexpr int kSendFlags = MSG_DONTWAIT;
#endif

int prepare(int fd) {
  if (fd < 0) return fd;
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
#ifdef SO_NOSIGPIPE
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
  return fd;
}

bool to_sockaddr(const Endpoint& e, sockaddr_in& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons(e.port);
  return ::inet_pton(AF_INET, e.host.c_str(), &addr.sin_addr) == 1;
}

}  // namespace

bool wait_ready(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, deadline.remaining_ms());
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return true;  // let the read/write report the error
  }
}

std::optional<Endpoint> parse_endpoint(std::string_view text, std::string& error) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    error = "expected HOST:PORT, got `" + std::string(text) + "`";
    return std::nullopt;
  }
  Endpoint e;
  e.host = std::string(text.substr(0, colon));
  const std::string port(text.substr(colon + 1));
  unsigned long value = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || value > 65535) {
      error = "bad port `" + port + "` in `" + std::string(text) + "`";
      return std::nullopt;
    }
    value = value * 10 + static_cast<unsigned long>(c - '0');
  }
  sockaddr_in addr{};
  if (value > 65535) {
    error = "bad port `" + port + "` in `" + std::string(text) + "`";
    return std::nullopt;
  }
  e.port = static_cast<std::uint16_t>(value);
  if (!to_sockaddr(e, addr)) {
    error = "HOST must be a numeric IPv4 address, got `" + e.host + "`";
    return std::nullopt;
  }
  return e;
}

std::string to_string(const Endpoint& e) { return e.host + ":" + std::to_string(e.port); }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    tls_ = other.tls_;
    other.fd_ = -1;
    other.tls_ = nullptr;
  }
  return *this;
}

void Socket::close() {
  if (tls_ != nullptr) tls_free(tls_);
  tls_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

// One read or write attempt, plain or through the TLS session: n > 0 bytes
// moved, 0 the peer closed, -1 would block on `want`, -2 an error (why).
long io_some(Socket& s, bool send, std::uint8_t* buf, std::size_t size, short& want, std::string& why) {
  if (s.tls() != nullptr) return tls_io(s.tls(), send, buf, size, want, why);
  const ssize_t n = send ? ::send(s.fd(), buf, size, kSendFlags) : ::recv(s.fd(), buf, size, MSG_DONTWAIT);
  if (n >= 0) return static_cast<long>(n);
  want = send ? POLLOUT : POLLIN;
  if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) return -1;
  why = std::strerror(errno);
  return -2;
}

}  // namespace

Socket listen_on(const Endpoint& at, WireError& error) {
  sockaddr_in addr{};
  if (!to_sockaddr(at, addr)) {
    error = err(kExitPeer, "cannot listen on " + to_string(at) + ": not an IPv4 address");
    return {};
  }
  Socket s(prepare(::socket(AF_INET, SOCK_STREAM, 0)));
  if (!s.valid()) {
    error = err(kExitPeer, sys_error("socket"));
    return {};
  }
  const int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // A backlog of 1: a listener serves one peer at a time, so connections
  // beyond it queue in the kernel's few slots, never in our memory.
  if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(s.fd(), 1) != 0) {
    error = err(kExitPeer, "cannot listen on " + to_string(at) + ": " + std::strerror(errno));
    return {};
  }
  return s;
}

std::uint16_t local_port(const Socket& s) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

Socket accept_one(const Socket& listener, int timeout_ms, WireError& error) {
  const Deadline deadline(timeout_ms);
  if (!wait_ready(listener.fd(), POLLIN, deadline)) {
    error = err(kExitTimeout, "no peer connected within " + std::to_string(timeout_ms) + " ms");
    return {};
  }
  Socket s(prepare(::accept(listener.fd(), nullptr, nullptr)));
  if (!s.valid()) error = err(kExitPeer, sys_error("accept"));
  const int one = 1;
  if (s.valid()) ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

Socket connect_to(const Endpoint& to, int timeout_ms, WireError& error) {
  sockaddr_in addr{};
  if (!to_sockaddr(to, addr)) {
    error = err(kExitPeer, "cannot connect to " + to_string(to) + ": not an IPv4 address");
    return {};
  }
  const Deadline deadline(timeout_ms);
  std::string last = "no attempt";
  for (;;) {
    Socket s(prepare(::socket(AF_INET, SOCK_STREAM, 0)));
    if (!s.valid()) {
      error = err(kExitPeer, sys_error("socket"));
      return {};
    }
    // Non-blocking connect, so the deadline also bounds a connect that hangs.
    const int flags = ::fcntl(s.fd(), F_GETFL, 0);
    ::fcntl(s.fd(), F_SETFL, flags | O_NONBLOCK);
    int rc = ::connect(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc != 0 && errno == EINPROGRESS) {
      if (wait_ready(s.fd(), POLLOUT, deadline)) {
        int so_error = 0;
        socklen_t len = sizeof so_error;
        ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &so_error, &len);
        rc = so_error == 0 ? 0 : -1;
        errno = so_error;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      ::fcntl(s.fd(), F_SETFL, flags);
      const int one = 1;
      ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return s;
    }
    last = std::strerror(errno);
    if (deadline.remaining_ms() == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  error = err(kExitPeer, "cannot connect to " + to_string(to) + " within " +
                             std::to_string(timeout_ms) + " ms: " + last);
  return {};
}

std::optional<WireError> write_all(Socket& s, const std::uint8_t* data, std::size_t size,
                                   int timeout_ms) {
  const Deadline deadline(timeout_ms);
  std::size_t done = 0;
  short want = POLLOUT;
  while (done < size) {
    std::string why;
    const long n = io_some(s, true, const_cast<std::uint8_t*>(data + done), size - done, want, why);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < -1 || n == 0) {
      return err(kExitPeer, "the peer disconnected while sending: " + why);
    }
    if (!wait_ready(s.fd(), want, deadline)) {
      return err(kExitTimeout, "sending timed out after " + std::to_string(timeout_ms) +
                                   " ms (" + std::to_string(done) + " of " +
                                   std::to_string(size) + " bytes sent)");
    }
  }
  return std::nullopt;
}

std::optional<WireError> write_frame(Socket& s, const Frame& frame, int timeout_ms,
                                     std::size_t* bytes) {
  const std::vector<std::uint8_t> wire = encode_frame(frame);
  if (bytes != nullptr) *bytes = wire.size();
  return write_all(s, wire.data(), wire.size(), timeout_ms);
}

namespace {

// Reads exactly size bytes, all within the one deadline; the error says how
// far it got.
std::optional<WireError> read_exact(Socket& s, std::uint8_t* out, std::size_t size,
                                    const Deadline& deadline, int timeout_ms,
                                    const std::string& who, const char* part) {
  std::size_t done = 0;
  short want = POLLIN;
  while (done < size) {
    std::string why;
    const long n = io_some(s, false, out + done, size - done, want, why);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == -1) {
      if (!wait_ready(s.fd(), want, deadline)) {
        return err(kExitTimeout, who + " sent no complete frame within " +
                                     std::to_string(timeout_ms) + " ms (" + std::to_string(done) +
                                     " of " + std::to_string(size) + " " + part + " bytes)");
      }
      continue;
    }
    if (n == 0) why = "closed the connection";
    if (done == 0 && std::string(part) == "header") {
      return err(kExitPeer, who + " disconnected (" + why + ")");
    }
    return err(kExitFrame, "truncated frame from " + who + ": " + why + " after " +
                               std::to_string(done) + " of " + std::to_string(size) + " " +
                               part + " bytes");
  }
  return std::nullopt;
}

}  // namespace

FrameRead read_frame(Socket& s, int timeout_ms, const std::string& who, const FrameLimits& limits) {
  FrameRead out;
  const Deadline deadline(timeout_ms);
  std::vector<std::uint8_t> wire(kFrameHeaderSize);
  if (auto e = read_exact(s, wire.data(), kFrameHeaderSize, deadline, timeout_ms, who, "header")) {
    out.error = *e;
    return out;
  }
  FrameHeader header;
  const std::string bad = parse_header(wire.data(), wire.size(), header);
  if (!bad.empty() && s.tls() == nullptr && wire[0] == 0x16 && wire[1] == 0x03) {
    // A TLS record (a ClientHello) on a plain link: a peer with --key.
    out.error = err(kExitPeer, who + " started a TLS handshake; this end has no --key (give both "
                                     "ends the same --key)");
    return out;
  }
  if (!bad.empty()) {
    out.error = err(kExitFrame, "malformed frame from " + who + ": " + bad);
    return out;
  }
  if (std::string over = check_limits(header, limits); !over.empty()) {
    out.error = err(kExitFrame, "frame from " + who + " too large: " + over);
    return out;
  }
  wire.resize(kFrameHeaderSize + static_cast<std::size_t>(header.payload));
  if (auto e = read_exact(s, wire.data() + kFrameHeaderSize,
                          static_cast<std::size_t>(header.payload), deadline, timeout_ms, who,
                          "payload")) {
    out.error = *e;
    return out;
  }
  out.bytes = wire.size();
  DecodedFrame decoded = decode_frame(wire.data(), wire.size());
  if (!decoded.frame) {
    out.error = err(kExitFrame, "malformed frame from " + who + ": " + decoded.error);
    return out;
  }
  out.frame = std::move(decoded.frame);
  return out;
}

}  // namespace worker::net
