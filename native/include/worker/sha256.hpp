// SHA-256 through OpenSSL's libcrypto (EVP), for the package's SHA256SUMS and
// the recipe's model and split hashes. Streaming, so a multi-GiB model file
// is hashed in fixed memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace worker {

// Throws std::runtime_error (one line) when libcrypto cannot provide
// SHA-256, e.g. an OPENSSL_CONF that loads no provider with it.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const std::uint8_t* data, std::size_t size);
  void update(std::string_view data) {
    update(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  }
  // Lower-case hex of the digest; the object must not be updated afterwards.
  std::string hex();

 private:
  evp_md_ctx_st* ctx_;
};

std::string sha256_hex(std::string_view data);

// Empty when the file cannot be opened or read.
std::optional<std::string> sha256_file_hex(const std::string& path);

}  // namespace worker
