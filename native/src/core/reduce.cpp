#include "worker/reduce.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "worker/checksum.hpp"

namespace worker {

ReduceResult deterministic_sum(const HiddenState& state, unsigned threads) {
  const std::size_t rows = state.n_tokens;
  const std::size_t cols = state.n_embd;
  if (state.values.size() != rows * cols) {
    throw std::invalid_argument("hidden state holds " +
                                std::to_string(state.values.size()) +
                                " values, dims say " + std::to_string(rows * cols));
  }
  ReduceResult result;
  result.row_sums.assign(rows, 0.0f);

  // Each row is summed left to right by exactly one thread, whichever it is.
  const auto sum_rows = [&](std::size_t first, std::size_t last) {
    for (std::size_t r = first; r < last; ++r) {
      const float* row = state.values.data() + r * cols;
      float acc = 0.0f;
      for (std::size_t c = 0; c < cols; ++c) acc += row[c];
      result.row_sums[r] = acc;
    }
  };
  const std::size_t workers =
      std::max<std::size_t>(1, std::min<std::size_t>(threads, rows));
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (std::size_t t = 1; t < workers; ++t) {
    pool.emplace_back(sum_rows, rows * t / workers, rows * (t + 1) / workers);
  }
  sum_rows(0, rows / workers);
  for (std::thread& th : pool) th.join();

  // The combine step runs on one thread in row order, never per thread.
  std::uint64_t checksum = kFnv1a64Offset;
  for (const float s : result.row_sums) {
    result.total += s;
    std::uint32_t bits = 0;
    std::memcpy(&bits, &s, sizeof bits);
    const std::uint8_t le[4] = {
        static_cast<std::uint8_t>(bits), static_cast<std::uint8_t>(bits >> 8),
        static_cast<std::uint8_t>(bits >> 16), static_cast<std::uint8_t>(bits >> 24)};
    checksum = fnv1a64(le, sizeof le, checksum);
  }
  result.row_sums_checksum = checksum;
  return result;
}

}  // namespace worker
