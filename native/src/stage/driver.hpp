// The pipeline driver's core, shared by `worker --drive` and the self-test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "worker/net.hpp"

namespace worker::stage {

struct DriveOptions {
  enum Mode { kLocal, kSpawn, kConnect };
  Mode mode = kLocal;
  std::string model;
  std::vector<std::pair<std::int32_t, std::int32_t>> split;  // kSpawn
  net::Endpoint connect;                                      // kConnect
  int prompt = 8;
  int steps = 4;
  std::uint64_t seed = 0x5eed;
  std::uint32_t seq_id = 0;
  int threads = 1;
  std::uint32_t n_ctx = 256;
  std::uint32_t n_batch = 64;
  std::int32_t n_gpu_layers = 0;  // EngineOptions::n_gpu_layers, passed to every stage
  EngineOptions::Reply reply = EngineOptions::Reply::kAll;
  int timeout_ms = 30000;
  int step_delay_ms = 0;
  int recover_ms = 0;  // reconnect to the first stage and resend, within this
};

struct StageReport {
  std::int32_t start = 0, end = 0;
  std::string endpoint;
  int exit_code = -1;
  std::string stats;  // the JSON the stage printed at its end
};

struct DriveResult {
  std::uint32_t n_vocab = 0, n_layer = 0;
  std::uint64_t weight_bytes = 0;
  std::vector<float> logits;          // every reply row of every step (digests with --reply digest)
  std::vector<std::int32_t> tokens;   // the prompt, then each greedy choice fed back
  double prompt_s = 0, total_s = 0;   // from the first request
  std::vector<StageReport> stages;    // kSpawn, first stage first
  int reconnects = 0;                 // to the first stage (--recover-ms)
};

// Runs o.prompt tokens (SplitMix64(o.seed) mod n_vocab), then o.steps greedy
// single-token steps. exe is this worker's path (to spawn stages).
std::optional<WireError> drive(const DriveOptions& o, const std::string& exe, DriveResult& r);

std::string logits_digest(const std::vector<float>& logits);  // FNV-1a 64 of the LE bits, hex
std::optional<WireError> write_logits(const std::string& file, const std::vector<float>& logits);
std::string first_difference(const std::vector<float>& a, const std::vector<float>& b,
                             std::uint32_t n_vocab);

}  // namespace worker::stage
