// A fixed-seed generator for test data that is the same on every platform.
//
// std::rand and the <random> distributions are implementation-defined, so a
// constant computed from them on one standard library fails on another.
// SplitMix64 (Steele, Lea and Flood 2014; Vigna's reference constants) is a
// few lines of integer arithmetic, defined bit for bit.
#pragma once

#include <cstdint>

namespace worker {

class SplitMix64 {
 public:
  explicit constexpr SplitMix64(std::uint64_t seed) : state_(seed) {}

  constexpr std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [-1, 1) on a grid of 2^-23: (k - 2^23) * 2^-23 with a 24-bit
  // k is exact in binary32, so no rounding mode or FMA can change it.
  constexpr float next_signed_unit() {
    const auto k = static_cast<std::int32_t>(next() >> 40);
    return static_cast<float>(k - (1 << 23)) * (1.0f / 8388608.0f);
  }

 private:
  std::uint64_t state_;
};

}  // namespace worker
