// TLS 1.3 with a pre-shared key for the stage mode's links: the
// driver's link to the first stage, each stage's link to --next, and every
// reconnect after --recover-ms. Both ends prove they hold the chain's key
// (the PSK binder and Finished messages); nothing is decoded from a peer that
// did not. OpenSSL's libssl does the protocol; this file only configures it.
//
// The key file (`--key FILE`) holds 32 or more random bytes (raw, or as text:
// `openssl rand -hex 32 > chain.key`) and must not be readable by group or
// others. The PSK is SHA-256 of a label and the file's bytes; the PSK
// identity names the chain by another SHA-256 of them (so a wrong key is
// already an unknown identity), never the key itself.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "worker/net.hpp"

namespace worker::net {

struct TlsKey {
  std::array<std::uint8_t, 32> psk{};
  std::string identity;  // "worker-chain-" + 16 hex digits
  ~TlsKey();             // the PSK is wiped
};

inline constexpr std::size_t kMinKeyBytes = 32;

// Reads --key FILE; empty (and error set, one line naming --key, never the
// key's bytes) when it is missing, unreadable, too short, or readable by
// group or others.
std::optional<TlsKey> load_key(const std::string& path, std::string& error);

// Runs the TLS 1.3 PSK handshake on a connected socket within timeout_ms, as
// the server (the end that accepted) or the client. On success the socket
// carries the session and every read and write goes through it. A wrong key,
// a plain peer or a certificate-only peer: kExitPeer, one line naming `who`;
// a peer that does not finish the handshake within timeout_ms: kExitTimeout.
std::optional<WireError> start_tls(Socket& s, const TlsKey& key, bool server, int timeout_ms,
                                   const std::string& who);

// A 127.0.0.0/8 address: the only one a link without --key may use.
bool is_loopback(const Endpoint& e);

// Why `flag ENDPOINT` may not be used without a key (one line naming --key),
// or empty when it may: a link without --key stays on this host, and
// --insecure-plain (plain on purpose: loopback benchmarks) only there too.
std::string plain_refused(const Endpoint& e, const std::string& flag, bool insecure_plain);

// The session's I/O (used by net.cpp): n > 0 bytes moved, 0 the peer closed
// the session, -1 would block on `want` (POLLIN or POLLOUT), -2 an error (why).
long tls_io(void* ssl, bool send, std::uint8_t* buf, std::size_t size, short& want, std::string& why);
void tls_free(void* ssl);

}  // namespace worker::net
