// A parallel sum whose result does not depend on the thread count.
//
// Float addition is not associative, so "each thread sums its share, then
// add the partials" gives a different last bit for 1, 2 or 4 threads. Here
// the order of every addition is fixed by the data shape alone: each row is
// summed left to right, then the row sums top to bottom. Threads only decide
// who computes which row.
#pragma once

#include <cstdint>
#include <vector>

#include "worker/frame.hpp"

namespace worker {

struct ReduceResult {
  float total = 0.0f;
  std::vector<float> row_sums;  // one per token
  std::uint64_t row_sums_checksum = 0;  // FNV-1a 64 of row_sums, little-endian
};

// threads == 0 means 1. Throws std::invalid_argument on a malformed state.
ReduceResult deterministic_sum(const HiddenState& state, unsigned threads);

}  // namespace worker
