// The pipeline driver's core, shared by `worker --drive` and the self-test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "worker/net.hpp"
#include "worker/tls.hpp"

namespace worker::stage {

struct DriveOptions {
  enum Mode { kLocal, kSpawn, kConnect };
  Mode mode = kLocal;
  std::string model;
  std::vector<std::pair<std::int32_t, std::int32_t>> split;  // kSpawn
  net::Endpoint connect;                                      // kConnect
  // A direct chain: the last stage answers the driver itself, on its
  // --answers endpoint, instead of each stage relaying the reply back.
  // kSpawn: `direct` spawns one; kConnect: `answers` is the last stage's.
  bool direct = false;
  std::optional<net::Endpoint> answers;
  // A ring (a direct chain whose last stage feeds each greedy token back to
  // its first stage): the driver sends the prompt with the step count and
  // reads every reply; kSpawn spawns the stages with --ring.
  bool ring = false;
  int prompt = 8;
  int steps = 4;
  std::uint64_t seed = 0x5eed;
  std::uint32_t seq_id = 0;
  int threads = 1;
  std::uint32_t n_ctx = 256;
  std::uint32_t n_batch = 64;
  std::int32_t n_gpu_layers = 0;  // EngineOptions::n_gpu_layers, passed to every stage
  // kSpawn: one n_gpu_layers per range of split, first stage first (empty:
  // n_gpu_layers for every stage). Each counts within its stage's range.
  std::vector<std::int32_t> stage_gpu_layers;
  bool op_offload = true;  // kLocal: EngineOptions::op_offload
  EngineOptions::Reply reply = EngineOptions::Reply::kAll;
  EngineOptions::FlashAttn flash_attn = EngineOptions::FlashAttn::kAuto;  // every stage's, and --local's
  int timeout_ms = 30000;
  int step_delay_ms = 0;
  int recover_ms = 0;  // reconnect to the first stage and resend, within this
  // --key: the PSK of every link (kSpawn passes key_file on to each stage).
  std::string key_file;
  std::optional<net::TlsKey> key;
};

struct StageReport {
  std::int32_t start = 0, end = 0;
  std::int32_t n_gpu_layers = 0;
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

// The n_gpu_layers stage i of o.split runs with.
std::int32_t stage_gpu_layers(const DriveOptions& o, std::size_t i);

// --check-local's reference for a split: the n_gpu_layers that places the
// full model exactly as the stages place their layers (each stage offloads
// the last N units of its range, the output counting as layer n_layer on the
// last stage; the full model the last N of its n_layer + 1). That exists when
// the offloaded units are a suffix of the model (CPU stages first); otherwise
// nullopt and why says which units the stages offload. The reference's
// op_offload follows the first stage: off when it runs without a device
// (n_gpu_layers 0), so its CPU layers stay on the CPU at every batch size; a
// later stage that keeps CPU layers beside the device (a partial N) would
// offload their large batches, which no single full model does: refused.
struct Placement {
  std::int32_t n_gpu_layers = 0;
  bool op_offload = true;
};
std::optional<Placement> same_placement(const DriveOptions& o, std::int32_t n_layer, std::string& why);

std::string logits_digest(const std::vector<float>& logits);  // FNV-1a 64 of the LE bits, hex
std::optional<WireError> write_logits(const std::string& file, const std::vector<float>& logits);
std::string first_difference(const std::vector<float>& a, const std::vector<float>& b,
                             std::uint32_t n_vocab);

}  // namespace worker::stage
