#include "worker/tls.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "worker/deadline.hpp"

namespace worker::net {
namespace {

// TLS_AES_128_GCM_SHA256, the one suite the links offer and accept.
constexpr unsigned char kSuite[2] = {0x13, 0x01};

bool sha256(const char* label, const std::vector<std::uint8_t>& data, std::uint8_t out[32]) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int n = 0;
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, label, std::strlen(label) + 1) == 1 &&
                  EVP_DigestUpdate(ctx, data.data(), data.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, out, &n) == 1 && n == 32;
  EVP_MD_CTX_free(ctx);
  return ok;
}

std::string openssl_reason() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "the peer closed the connection";
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? reason : "error " + std::to_string(code);
}

SSL_SESSION* psk_session(SSL* ssl, const TlsKey& key) {
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kSuite);
  SSL_SESSION* s = cipher == nullptr ? nullptr : SSL_SESSION_new();
  if (s == nullptr) return nullptr;
  if (SSL_SESSION_set1_master_key(s, key.psk.data(), key.psk.size()) != 1 ||
      SSL_SESSION_set_cipher(s, cipher) != 1 ||
      SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) != 1) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

// Clears O_NONBLOCK on fd; false (errno set) when fcntl fails.
bool blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

const TlsKey& key_of(SSL* ssl) { return *static_cast<const TlsKey*>(SSL_get_app_data(ssl)); }

int use_session(SSL* ssl, const EVP_MD* md, const unsigned char** id, std::size_t* idlen,
                SSL_SESSION** sess) {
  *sess = nullptr;
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kSuite);
  // A HelloRetryRequest asks again with the negotiated hash: only ours fits.
  if (cipher == nullptr || (md != nullptr && md != SSL_CIPHER_get_handshake_digest(cipher))) return 1;
  const TlsKey& key = key_of(ssl);
  *sess = psk_session(ssl, key);
  *id = reinterpret_cast<const unsigned char*>(key.identity.data());
  *idlen = key.identity.size();
  return *sess != nullptr ? 1 : 0;
}

int find_session(SSL* ssl, const unsigned char* id, std::size_t idlen, SSL_SESSION** sess) {
  const TlsKey& key = key_of(ssl);
  *sess = nullptr;  // an unknown identity: no PSK, and without a certificate no handshake
  if (idlen == key.identity.size() && std::memcmp(id, key.identity.data(), idlen) == 0) {
    *sess = psk_session(ssl, key);
    if (*sess == nullptr) return 0;
  }
  return 1;
}

SSL_CTX* make_context(bool server) {
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256");
  SSL_CTX_set_num_tickets(ctx, 0);  // every link authenticates with the key, never a ticket
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (server) {
    SSL_CTX_set_psk_find_session_callback(ctx, find_session);
  } else {
    SSL_CTX_set_psk_use_session_callback(ctx, use_session);
    // A server that ignores the PSK and shows a certificate is not the chain:
    // with no trust store, any certificate fails verification.
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  return ctx;
}

}  // namespace

TlsKey::~TlsKey() { OPENSSL_cleanse(psk.data(), psk.size()); }

bool is_loopback(const Endpoint& e) {
  in_addr a{};
  return ::inet_pton(AF_INET, e.host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::string plain_refused(const Endpoint& e, const std::string& flag, bool insecure_plain) {
  if (is_loopback(e)) return {};
  return flag + " " + to_string(e) + " is not a loopback address: a link beyond this host needs " +
         "--key FILE (TLS 1.3, pre-shared key)" +
         (insecure_plain ? "; --insecure-plain is for loopback benchmarks only" : "");
}

std::optional<TlsKey> load_key(const std::string& path, std::string& error) {
  // O_NONBLOCK: a FIFO would block open() until a writer came, before the
  // regular-file check below could refuse it. A regular file ignores it; it is
  // cleared before reading all the same.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    error = "--key " + path + ": cannot open: " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::vector<std::uint8_t> bytes;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "--key " + path + ": not a regular file";
  } else if (!blocking(fd)) {
    error = "--key " + path + ": cannot read: " + std::strerror(errno);
  } else if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    error = "--key " + path + ": readable or writable by group or others (mode " + mode +
            "); chmod 600 it";
  } else if (st.st_size < static_cast<off_t>(kMinKeyBytes) || st.st_size > 4096) {
    error = "--key " + path + ": " + std::to_string(st.st_size) + " bytes; a key is " +
            std::to_string(kMinKeyBytes) + " to 4096 random bytes (openssl rand -hex 32)";
  } else {
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    if (done != bytes.size()) error = "--key " + path + ": short read";
  }
  ::close(fd);
  if (!error.empty()) return std::nullopt;
  TlsKey key;
  std::uint8_t id[32];
  const bool ok = sha256("patchctl worker link psk", bytes, key.psk.data()) &&
                  sha256("patchctl worker link identity", bytes, id);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  if (!ok) {
    error = "--key " + path + ": libcrypto cannot hash it (SHA-256 unavailable)";
    return std::nullopt;
  }
  static const char* hex = "0123456789abcdef";
  key.identity = "worker-chain-";
  for (int i = 0; i < 8; ++i) {
    key.identity += hex[id[i] >> 4];
    key.identity += hex[id[i] & 15];
  }
  return key;
}

std::optional<WireError> start_tls(Socket& s, const TlsKey& key, bool server, int timeout_ms,
                                   const std::string& who) {
  // libssl writes with write(), not send(MSG_NOSIGNAL): a peer that went away
  // must be an error value, not a SIGPIPE that kills the worker.
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
  const Deadline deadline(timeout_ms);
  auto fail = [&](const std::string& why, int code = kExitPeer) {
    s.close();
    return WireError{code, "TLS with " + who + " failed: " + why};
  };
  const std::string late = "no handshake within " + std::to_string(timeout_ms) + " ms";
  if (server) {
    // A plain worker frame where a ClientHello belongs: say so, decode nothing.
    std::uint8_t first = 0;
    if (!wait_ready(s.fd(), POLLIN, deadline)) {
      return fail(late, kExitTimeout);
    }
    if (::recv(s.fd(), &first, 1, MSG_PEEK) == 1 && first == 'W') {
      return fail("it sent a plain frame; this end takes TLS only (give both ends the same --key)");
    }
  }
  SSL_CTX* ctx = make_context(server);
  SSL* ssl = ctx == nullptr ? nullptr : SSL_new(ctx);
  SSL_CTX_free(ctx);  // the SSL holds its own reference
  if (ssl == nullptr) return fail("libssl: " + openssl_reason());
  SSL_set_app_data(ssl, const_cast<TlsKey*>(&key));
  const int flags = ::fcntl(s.fd(), F_GETFL, 0);
  ::fcntl(s.fd(), F_SETFL, flags | O_NONBLOCK);
  SSL_set_fd(ssl, s.fd());
  ERR_clear_error();
  for (;;) {
    const int rc = server ? SSL_accept(ssl) : SSL_connect(ssl);
    if (rc == 1) break;
    const int why = SSL_get_error(ssl, rc);
    short want = why == SSL_ERROR_WANT_READ ? POLLIN : why == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (want == 0) {
      const std::string reason = openssl_reason();
      SSL_free(ssl);
      return fail(reason + " (a wrong --key, or a peer without TLS)");
    }
    if (!wait_ready(s.fd(), want, deadline)) {
      SSL_free(ssl);
      return fail(late, kExitTimeout);
    }
  }
  // Only the PSK authenticates a link: a handshake without it is refused.
  if (SSL_session_reused(ssl) != 1) {
    SSL_free(ssl);
    return fail("the handshake did not use the chain's key");
  }
  s.set_tls(ssl);
  return std::nullopt;
}

long tls_io(void* p, bool send, std::uint8_t* buf, std::size_t size, short& want, std::string& why) {
  SSL* ssl = static_cast<SSL*>(p);
  std::size_t n = 0;
  ERR_clear_error();
  const int rc = send ? SSL_write_ex(ssl, buf, size, &n) : SSL_read_ex(ssl, buf, size, &n);
  if (rc == 1) return static_cast<long>(n);
  const int e = SSL_get_error(ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    return -1;
  }
  // Closed, with close_notify or without (a peer that exited or was killed).
  if (!send && (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0))) return 0;
  why = e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 ? std::strerror(errno) : "TLS: " + openssl_reason();
  return -2;
}

void tls_free(void* p) {
  SSL* ssl = static_cast<SSL*>(p);
  SSL_shutdown(ssl);  // best effort close_notify on the non-blocking socket
  SSL_free(ssl);
}

}  // namespace worker::net
