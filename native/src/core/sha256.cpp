#include "worker/sha256.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

namespace worker {

namespace {

[[noreturn]] void unavailable(const char* step) {
  char reason[256] = "no error queued";
  if (const unsigned long code = ERR_get_error()) ERR_error_string_n(code, reason, sizeof reason);
  ERR_clear_error();
  throw std::runtime_error(std::string("SHA-256 from OpenSSL's libcrypto failed (") + step +
                           ": " + reason + "); check OPENSSL_CONF and OPENSSL_MODULES");
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) unavailable("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    unavailable("EVP_DigestInit_ex");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const std::uint8_t* data, std::size_t size) {
  if (EVP_DigestUpdate(ctx_, data, size) != 1) unavailable("EVP_DigestUpdate");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx_, digest, &size) != 1 || size != 32) {
    unavailable("EVP_DigestFinal_ex");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 s;
  s.update(data);
  return s.hex();
}

std::optional<std::string> sha256_file_hex(const std::string& path) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"),
                                                          &std::fclose);
  if (!f) return std::nullopt;
  Sha256 s;
  std::vector<std::uint8_t> buf(1 << 16);
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) s.update(buf.data(), n);
  if (std::ferror(f.get()) != 0) return std::nullopt;
  return s.hex();
}

}  // namespace worker
