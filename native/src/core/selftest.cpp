#include "worker/selftest.hpp"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "worker/frame.hpp"
#include "worker/reduce.hpp"
#include "worker/sha256.hpp"

namespace worker {

namespace {

// Dims that no tested thread count divides, so the row split is uneven.
constexpr std::uint32_t kTokens = 37;
constexpr std::uint32_t kEmbd = 96;
constexpr std::uint64_t kSeed = 0x5eed0f0001ULL;

// Recorded once, and re-derived from the documented format by an independent
// Python reference in tests/test_native.py. They must stay bit-identical
// across runs, thread counts, compilers, hosts and lanes; if a change moves
// one on purpose (a new frame layout, a new generator), update the constant
// in the same commit and say why.
constexpr std::uint64_t kExpectedFrameChecksum = 0x489d94ad4eebbf91ULL;  // protocol 4
constexpr std::uint32_t kExpectedSumBits = 0x423adc76U;  // 0x1.75b8ecp+5
constexpr std::uint64_t kExpectedRowSumsChecksum = 0x856dbf6d8bce053dULL;

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

SelfTestCheck verdict(std::string name, const std::vector<std::string>& problems,
                      std::string ok_detail) {
  if (problems.empty()) return {std::move(name), "pass", std::move(ok_detail)};
  std::string detail;
  for (const std::string& p : problems) detail += (detail.empty() ? "" : "; ") + p;
  return {std::move(name), "fail", detail};
}

// Damaged frames must be rejected with the right reason, never decoded.
void expect_rejected(std::vector<std::uint8_t> frame, const char* damage,
                     const char* expected_error, std::vector<std::string>& problems) {
  const DecodedFrame d = decode_frame(frame.data(), frame.size());
  if (d.frame.has_value()) problems.push_back(std::string(damage) + ": frame was accepted");
  if (d.error.find(expected_error) == std::string::npos) {
    problems.push_back(std::string(damage) + ": error `" + d.error + "` does not mention `" +
                       expected_error + "`");
  }
}

}  // namespace

std::vector<SelfTestCheck> compute_checks(unsigned threads) {
  std::vector<SelfTestCheck> checks;
  const std::string suffix = ".threads" + std::to_string(threads);
  const HiddenState state = make_test_hidden_state(kTokens, kEmbd, kSeed);
  // A boundary-state frame of sequence 0, step 0, positions 0..kTokens-1.
  const std::vector<std::uint8_t> frame =
      encode_frame(state_frame(FrameKind::kState, 0, 0, 0, state));

  std::vector<std::string> problems;
  if (frame.size() != kFrameHeaderSize + 4ULL * kTokens + 4ULL * kTokens * kEmbd) {
    problems.push_back("frame size");
  }
  const DecodedFrame decoded = decode_frame(frame.data(), frame.size());
  if (!decoded.frame) {
    problems.push_back("decode: " + decoded.error);
    checks.push_back(verdict("frame.roundtrip" + suffix, problems, ""));
    return checks;
  }
  HiddenState got;
  got.n_tokens = decoded.frame->n_tokens;
  got.n_embd = decoded.frame->n_embd;
  got.values = decoded.frame->values;
  if (got.n_tokens != kTokens || got.n_embd != kEmbd || decoded.frame->kind != FrameKind::kState ||
      decoded.frame->positions.size() != kTokens || decoded.frame->positions.back() != static_cast<std::int32_t>(kTokens) - 1) {
    problems.push_back("decoded dims, kind or positions");
  }
  if (std::memcmp(got.values.data(), state.values.data(),
                  state.values.size() * sizeof(float)) != 0) {
    problems.push_back("decoded values are not bit-identical to the encoded ones");
  }
  if (decoded.checksum != kExpectedFrameChecksum) {
    problems.push_back("frame checksum " + hex(decoded.checksum) + ", expected " +
                       hex(kExpectedFrameChecksum));
  }
  checks.push_back(verdict("frame.roundtrip" + suffix, problems,
                           "frame_checksum=" + hex(decoded.checksum)));

  problems.clear();
  auto damaged = frame;
  damaged[kFrameHeaderSize + 4 * kTokens + 5] ^= 0x01;  // one bit of one value
  expect_rejected(damaged, "flipped payload bit", "checksum", problems);
  damaged = frame;
  damaged.pop_back();
  expect_rejected(damaged, "truncated frame", "frame size", problems);
  damaged = frame;
  damaged[0] = 'X';
  expect_rejected(damaged, "bad magic", "magic", problems);
  damaged = frame;
  damaged[4] = 99;  // version
  expect_rejected(damaged, "future version", "protocol version", problems);
  damaged = frame;
  damaged[8] = 9;  // kind
  expect_rejected(damaged, "unknown kind", "kind", problems);
  checks.push_back(verdict("frame.rejects_damage" + suffix, problems, "5 damaged frames rejected"));

  // Repeated in one process too: a data race would show as run-to-run drift.
  problems.clear();
  std::ostringstream detail;
  for (int run = 0; run < 3; ++run) {
    const ReduceResult r = deterministic_sum(got, threads);
    if (run == 0) {
      char sum[64];
      std::snprintf(sum, sizeof sum, "%a", static_cast<double>(r.total));
      char bits[16];
      std::snprintf(bits, sizeof bits, "0x%08" PRIx32, bits_of(r.total));
      detail << "sum=" << sum << " sum_bits=" << bits
             << " row_sums_checksum=" << hex(r.row_sums_checksum) << " runs=3";
    }
    if (bits_of(r.total) != kExpectedSumBits) {
      problems.push_back("run " + std::to_string(run) + ": sum bits " + hex(bits_of(r.total)) +
                         ", expected " + hex(kExpectedSumBits));
    }
    if (r.row_sums_checksum != kExpectedRowSumsChecksum) {
      problems.push_back("run " + std::to_string(run) + ": row sums checksum " +
                         hex(r.row_sums_checksum) + ", expected " +
                         hex(kExpectedRowSumsChecksum));
    }
  }
  checks.push_back(verdict("reduce.deterministic" + suffix, problems, detail.str()));
  return checks;
}

SelfTestCheck pipeline_check() {
  return {"pipeline.two_stage", "skipped",
          "this worker is built without llama.cpp (the standalone CPU lane), so it has no "
          "stage mode; a build with WORKER_UPSTREAM_DIR runs a 2-stage pipeline on a tiny "
          "model against the full model here"};
}

std::vector<SelfTestCheck> self_test(const std::function<SelfTestCheck()>& pipeline) {
  std::vector<SelfTestCheck> checks;
  // FIPS 180-4 examples: "abc" and the 448-bit two-block message.
  std::vector<std::string> problems;
  if (sha256_hex("abc") != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") {
    problems.push_back("sha256(\"abc\") is wrong");
  }
  if (sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") !=
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") {
    problems.push_back("sha256 of the two-block vector is wrong");
  }
  if (sha256_hex(std::string(1000, 'a')).substr(0, 16) != "41edece42d63e8d9") {
    problems.push_back("sha256 of 1000 x 'a' is wrong");
  }
  checks.push_back(verdict("sha256.vectors", problems, "3 vectors"));
  for (unsigned threads : {1u, 2u, 4u}) {
    for (SelfTestCheck& c : compute_checks(threads)) checks.push_back(std::move(c));
  }
  checks.push_back(pipeline ? pipeline() : pipeline_check());
  return checks;
}

bool all_passed(const std::vector<SelfTestCheck>& checks) {
  for (const SelfTestCheck& c : checks) {
    if (c.status == "fail") return false;
  }
  return true;
}

json::Value self_test_json(const std::vector<SelfTestCheck>& checks) {
  json::Array items;
  for (const SelfTestCheck& c : checks) {
    items.emplace_back(
        json::Object{{"name", c.name}, {"status", c.status}, {"detail", c.detail}});
  }
  return json::Object{{"passed", all_passed(checks)}, {"checks", std::move(items)}};
}

std::string self_test_text(const std::vector<SelfTestCheck>& checks) {
  std::ostringstream out;
  int passed = 0, failed = 0, skipped = 0;
  for (const SelfTestCheck& c : checks) {
    out << c.status << "  " << c.name << "  " << c.detail << "\n";
    (c.status == "pass" ? passed : c.status == "fail" ? failed : skipped) += 1;
  }
  out << "self-test: " << (failed == 0 ? "OK" : "FAILED") << " (" << passed << " passed, "
      << failed << " failed, " << skipped << " skipped)\n";
  return out.str();
}

}  // namespace worker
