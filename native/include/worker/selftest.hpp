// `worker --self-test`: the deterministic CPU lane, runnable from an installed
// package (no model, no GPU, no network). The CTest compute smoke test runs
// the same checks, so the constants live in one place (src/core/selftest.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "worker/json.hpp"

namespace worker {

struct SelfTestCheck {
  std::string name;
  std::string status;  // "pass", "fail" or "skipped"
  std::string detail;
};

// A fixed 37x96 float32 frame: encoded, decoded, damaged (rejected) and summed
// three times with `threads` threads; checksum and sum equal recorded
// constants bit for bit.
std::vector<SelfTestCheck> compute_checks(unsigned threads);

// pipeline.two_stage in a build without the stage mode (the standalone CPU
// lane, no llama.cpp): "skipped", saying why. A consumer build passes its own
// check to self_test() instead (src/stage/: a 2-stage pipeline of two child
// workers on a tiny model, bit-identical to the full model in one process).
SelfTestCheck pipeline_check();

// Everything --self-test runs: SHA-256 test vectors, compute_checks for 1, 2
// and 4 threads, and `pipeline` (pipeline_check() when empty).
std::vector<SelfTestCheck> self_test(const std::function<SelfTestCheck()>& pipeline = {});

bool all_passed(const std::vector<SelfTestCheck>& checks);  // skipped is not failed
json::Value self_test_json(const std::vector<SelfTestCheck>& checks);
std::string self_test_text(const std::vector<SelfTestCheck>& checks);

}  // namespace worker
