// SHA-256 (FIPS 180-4), for the package's SHA256SUMS and the recipe's model
// and split hashes. Streaming, so a multi-GiB model file is hashed in fixed
// memory.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace worker {

class Sha256 {
 public:
  Sha256();
  void update(const std::uint8_t* data, std::size_t size);
  void update(std::string_view data) {
    update(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  }
  // Lower-case hex of the digest; the object must not be updated afterwards.
  std::string hex();

 private:
  void block(const std::uint8_t* p);

  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // bytes
};

std::string sha256_hex(std::string_view data);

// Empty when the file cannot be opened or read.
std::optional<std::string> sha256_file_hex(const std::string& path);

}  // namespace worker
