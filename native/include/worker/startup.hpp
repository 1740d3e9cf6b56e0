// The startup gate: what a packaged worker checks before it does any work.
//
//   1. its package (release builds only): SHA256SUMS lists every other file
//      of the package and each one matches, and manifest.json describes this
//      very binary (protocol, engine version, pin, stack fingerprint, lane);
//   2. its hardware lane: this CPU has every instruction-set feature the lane
//      was built for;
//   3. the vulkan lane's device (src/backend/vulkan_device.cpp): ggml-vulkan
//      has a device to run on here;
//   4. a runtime recipe, when given: the protocol, pin, stack fingerprint and
//      lane it requires are this worker's, and each model or split file it
//      names has the sha256 it names.
//
// Each refusal is one line and its own exit code, so a supervisor can tell
// a damaged install from the wrong machine from the wrong job.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "worker/identity.hpp"

namespace worker {

inline constexpr int kExitPackage = 10;   // the package fails its checksums or manifest
inline constexpr int kExitLane = 11;      // this CPU cannot run the lane
inline constexpr int kExitRecipe = 12;    // the recipe does not match (or is unreadable)
inline constexpr int kExitSelfTest = 13;  // --self-test found a failing check
inline constexpr int kExitDevice = 14;    // the vulkan lane finds no Vulkan device to run on

struct Refusal {
  int exit_code = 0;
  std::string message;  // one line, without the "worker: " prefix
};

// `root` is the package directory (the parent of bin/). Returns what passed,
// e.g. "12 files match SHA256SUMS", or the refusal.
struct GateStep {
  std::string name;    // package | lane | recipe
  std::string status;  // ok | skipped
  std::string detail;
};

std::optional<Refusal> check_package(const std::string& root, const BuildIdentity& id,
                                     GateStep& step);

// The lane's features this CPU has. WORKER_HIDE_CPU_FEATURES (a comma list)
// removes features from what was detected, never adds: it lets a test show
// the refusal on a CPU that could run the lane, and cannot make a binary run
// where it would crash.
std::vector<std::string> detect_cpu_features();

std::optional<Refusal> check_lane(const BuildIdentity& id, const std::vector<std::string>& cpu,
                                  GateStep& step);

std::optional<Refusal> check_recipe(const std::string& path, const BuildIdentity& id,
                                    GateStep& step);

// The running executable's absolute path; empty when it cannot be found.
std::string executable_path(const char* argv0);

}  // namespace worker
