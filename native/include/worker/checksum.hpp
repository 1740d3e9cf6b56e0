// FNV-1a 64 (Fowler/Noll/Vo), used as the wire frame's checksum.
//
// It is byte-at-a-time, so the value depends only on the bytes, never on the
// host's byte order or word size. It catches corruption and truncation in
// transit; it is not a defence against a deliberate forger.
#pragma once

#include <cstddef>
#include <cstdint>

namespace worker {

inline constexpr std::uint64_t kFnv1a64Offset = 0xcbf29ce484222325ULL;
inline constexpr std::uint64_t kFnv1a64Prime = 0x00000100000001b3ULL;

// Continues a running hash, so a header and a payload in separate buffers
// hash like one contiguous buffer.
constexpr std::uint64_t fnv1a64(const std::uint8_t* data, std::size_t size,
                                std::uint64_t hash = kFnv1a64Offset) {
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= kFnv1a64Prime;
  }
  return hash;
}

}  // namespace worker
