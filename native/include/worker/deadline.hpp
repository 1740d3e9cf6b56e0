// A deadline on the monotonic clock, for the timed waits of the transport
// and of child processes.
#pragma once

#include <chrono>

namespace worker {

class Deadline {
 public:
  explicit Deadline(int timeout_ms)
      : at_(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)) {}
  // Milliseconds left, never negative (a poll() timeout).
  int remaining_ms() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          at_ - std::chrono::steady_clock::now()).count();
    return left < 0 ? 0 : static_cast<int>(left);
  }

 private:
  std::chrono::steady_clock::time_point at_;
};

}  // namespace worker
