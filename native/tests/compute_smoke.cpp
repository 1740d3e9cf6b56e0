// The CPU lane's deterministic compute smoke test.
//
// A fixed hidden-state frame goes through the worker's wire encoding and the
// thread-count-independent reduction. The checksum and the sum must equal
// constants recorded once: so they are bit-identical across runs, thread
// counts, compilers and hosts. If a change moves one of them on purpose
// (a new frame layout, a new generator), update the constant in the same
// commit and say why.
//
// usage: worker_compute_smoke <threads>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "worker/frame.hpp"
#include "worker/reduce.hpp"

namespace {

// Dims that no tested thread count divides, so the row split is uneven.
constexpr std::uint32_t kTokens = 37;
constexpr std::uint32_t kEmbd = 96;
constexpr std::uint64_t kSeed = 0x5eed0f0001ULL;

// Recorded once, and re-derived from the documented format by an independent
// Python reference in tests/test_native.py; see the file comment before
// changing them.
constexpr std::uint64_t kExpectedFrameChecksum = 0x6981dcc79cbd69bbULL;
constexpr std::uint32_t kExpectedSumBits = 0x423adc76U;  // 0x1.75b8ecp+5
constexpr std::uint64_t kExpectedRowSumsChecksum = 0x856dbf6d8bce053dULL;

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

std::uint32_t bits_of(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

// Damaged frames must be rejected with the right reason, never decoded.
void check_rejects(std::vector<std::uint8_t> frame, const char* damage,
                   const char* expected_error) {
  const worker::DecodedFrame d = worker::decode_frame(frame.data(), frame.size());
  check(!d.state.has_value(), std::string(damage) + ": frame was accepted");
  check(d.error.find(expected_error) != std::string::npos,
        std::string(damage) + ": error `" + d.error + "` does not mention `" +
            expected_error + "`");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: worker_compute_smoke <threads>\n");
    return 2;
  }
  const unsigned threads = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10));

  const worker::HiddenState state =
      worker::make_test_hidden_state(kTokens, kEmbd, kSeed);
  const std::vector<std::uint8_t> frame = worker::encode_frame(state);
  check(frame.size() == worker::kFrameHeaderSize + 4ULL * kTokens * kEmbd,
        "frame size");

  const worker::DecodedFrame decoded = worker::decode_frame(frame.data(), frame.size());
  check(decoded.state.has_value(), "decode: " + decoded.error);
  if (!decoded.state) return 1;
  check(decoded.state->n_tokens == kTokens && decoded.state->n_embd == kEmbd,
        "decoded dims");
  check(std::memcmp(decoded.state->values.data(), state.values.data(),
                    state.values.size() * sizeof(float)) == 0,
        "decoded values are not bit-identical to the encoded ones");
  check(decoded.checksum == kExpectedFrameChecksum,
        "frame checksum " + hex(decoded.checksum) + ", expected " +
            hex(kExpectedFrameChecksum));

  {
    auto damaged = frame;
    damaged[worker::kFrameHeaderSize + 5] ^= 0x01;  // one bit of one value
    check_rejects(damaged, "flipped payload bit", "checksum");
    damaged = frame;
    damaged.pop_back();
    check_rejects(damaged, "truncated frame", "frame size");
    damaged = frame;
    damaged[0] = 'X';
    check_rejects(damaged, "bad magic", "magic");
    damaged = frame;
    damaged[4] = 99;  // version
    check_rejects(damaged, "future version", "protocol version");
  }

  // Repeated in one process too: a data race would show as run-to-run drift.
  for (int run = 0; run < 3; ++run) {
    const worker::ReduceResult r = worker::deterministic_sum(*decoded.state, threads);
    std::printf("threads=%u run=%d frame_checksum=%s sum=%a sum_bits=0x%08" PRIx32
                " row_sums_checksum=%s\n",
                threads, run, hex(decoded.checksum).c_str(), static_cast<double>(r.total),
                bits_of(r.total), hex(r.row_sums_checksum).c_str());
    check(bits_of(r.total) == kExpectedSumBits,
          "sum bits " + hex(bits_of(r.total)) + ", expected " + hex(kExpectedSumBits));
    check(r.row_sums_checksum == kExpectedRowSumsChecksum,
          "row sums checksum " + hex(r.row_sums_checksum) + ", expected " +
              hex(kExpectedRowSumsChecksum));
  }

  if (failures == 0) std::printf("compute smoke: OK (%u threads)\n", threads);
  return failures == 0 ? 0 : 1;
}
