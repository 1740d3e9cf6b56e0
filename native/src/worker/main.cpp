// worker: the native worker. For now a skeleton that reports what it was
// built from (--version) and what it is certified to do (--capabilities),
// checks its package, lane and recipe at start (--check), and runs its
// deterministic self-test (--self-test).

#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "worker/build_identity.hpp"  // generated into the build directory
#include "worker/identity.hpp"
#include "worker/selftest.hpp"
#include "worker/startup.hpp"

#ifdef WORKER_HAVE_STAGE
#include "../stage/checkpoint.hpp"
#include "../stage/pipeline.hpp"
#endif

#ifdef WORKER_HAVE_VULKAN
#include "../backend/vulkan_device.hpp"
#endif

#ifndef WORKER_BUILD_TYPE
#error "WORKER_BUILD_TYPE must be defined by the build ($<CONFIG>)"
#endif

namespace {

constexpr std::string_view kUsage =
    "usage: worker --version [--json]\n"
    "       worker --capabilities [--json]\n"
    "       worker --check [--recipe FILE] [--json]\n"
    "       worker --self-test [--recipe FILE] [--json]\n"
    "       worker --devices [--json]\n"
    "\n"
    "  --version        what this binary was built from: stack fingerprint,\n"
    "                   patches, toolchain, certification, upstream build, lane\n"
    "  --capabilities   capabilities backed by a certification record\n"
    "  --check          run the start-up checks and stop: the package's\n"
    "                   SHA256SUMS and manifest (release builds), the CPU lane,\n"
    "                   the Vulkan device (vulkan lane), and the recipe when given\n"
    "  --self-test      the start-up checks, then the deterministic CPU lane\n"
    "  --devices        the backend's devices on this host, as the Vulkan loader\n"
    "                   and ggml-vulkan see them (no start-up check)\n"
    "  --recipe FILE    a runtime recipe (JSON, schema worker.recipe/1) naming\n"
    "                   the protocol, pin, stack fingerprint, lane and\n"
    "                   model/split sha256s this run requires\n"
    "  --json           print JSON instead of text\n"
    "\n"
    "  --stage, --drive, --write-tiny-model  the pipeline stage mode (see below;\n"
    "                   only in a worker built with WORKER_UPSTREAM_DIR)\n"
    "\n"
    "exit codes: 0 ok, 2 usage, 3 output or library error, 10 package fails its\n"
    "checksums or manifest, 11 this CPU cannot run the lane, 12 recipe does not\n"
    "match, 13 self-test failed, 14 the vulkan lane finds no Vulkan device to run\n"
    "on (none, or only a CPU-type one that GGML_VK_VISIBLE_DEVICES does not name),\n"
    "20-25 stage mode (below)\n";

int usage_error(std::string_view message) {
  std::cerr << "worker: " << message << "\n" << kUsage;
  return 2;
}

enum class Mode { kNone, kVersion, kCapabilities, kCheck, kSelfTest, kDevices };

// --stage, --drive and --write-tiny-model take the rest of the command line.
bool is_stage_mode(std::string_view arg) {
  return arg == "--stage" || arg == "--drive" || arg == "--write-tiny-model";
}

void print_usage(std::ostream& out) {
  out << kUsage;
#ifdef WORKER_HAVE_STAGE
  out << worker::stage::kStageUsage;
#endif
}



// Every mode but --version and --help passes the gate first; --version stays
// available so `patchctl release verify` can read the identity of a damaged
// package.
std::optional<worker::Refusal> gate(const worker::BuildIdentity& id, const char* argv0,
                                    const std::string& recipe,
                                    std::vector<worker::GateStep>& steps) {
  worker::GateStep step;
  const std::string exe = worker::executable_path(argv0);
  const std::string root =
      exe.empty() ? std::string() : std::filesystem::path(exe).parent_path().parent_path().string();
  if (id.release && root.empty()) {
    return worker::Refusal{worker::kExitPackage,
                           "package check failed: cannot find this executable's path"};
  }
  if (auto r = worker::check_package(root, id, step)) return r;
  steps.push_back(step);
  if (auto r = worker::check_lane(id, worker::detect_cpu_features(), step)) return r;
  steps.push_back(step);
#ifdef WORKER_HAVE_VULKAN
  if (auto r = worker::vulkan::check_device(id, step)) return r;
  steps.push_back(step);
#endif
  if (recipe.empty()) {
    steps.push_back({"recipe", "skipped", "no --recipe given"});
  } else {
    if (auto r = worker::check_recipe(recipe, id, step)) return r;
    steps.push_back(step);
  }
  return std::nullopt;
}

int stage_modes(int argc, char** argv, const worker::BuildIdentity& id) {
  std::string mode;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    if (is_stage_mode(argv[i]) && mode.empty()) {
      mode = argv[i];
    } else {
      rest.emplace_back(argv[i]);
    }
  }
#ifdef WORKER_HAVE_STAGE
  std::vector<worker::GateStep> steps;
  if (std::optional<worker::Refusal> refused = gate(id, argv[0], "", steps)) {
    std::cerr << "worker: " << refused->message << "\n";
    return refused->exit_code;
  }
  worker::stage::set_stack_fingerprint(id.fingerprint);
  if (mode == "--stage") return worker::stage::stage_main(rest);
  if (mode == "--drive") return worker::stage::drive_main(rest, worker::executable_path(argv[0]));
  return worker::stage::write_tiny_model_main(rest);
#else
  (void)id;
  std::cerr << "worker: " << mode << " needs a worker built against llama.cpp "
            << "(configure with -DWORKER_UPSTREAM_DIR=<tree made by `patchctl apply --into`>); "
            << "this one is the standalone CPU lane\n";
  return 2;
#endif
}

worker::json::Value steps_json(const std::vector<worker::GateStep>& steps) {
  worker::json::Array items;
  for (const auto& s : steps) {
    items.emplace_back(
        worker::json::Object{{"name", s.name}, {"status", s.status}, {"detail", s.detail}});
  }
  return items;
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") break;
    if (is_stage_mode(argv[i])) {
      worker::BuildIdentity id = worker::generated::build_identity();
      id.build_type = WORKER_BUILD_TYPE;
      return stage_modes(argc, argv, id);
    }
  }
  Mode mode = Mode::kNone;
  bool as_json = false;
  std::string recipe;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    Mode next = Mode::kNone;
    if (arg == "--version") {
      next = Mode::kVersion;
    } else if (arg == "--capabilities") {
      next = Mode::kCapabilities;
    } else if (arg == "--check") {
      next = Mode::kCheck;
    } else if (arg == "--self-test") {
      next = Mode::kSelfTest;
    } else if (arg == "--devices") {
      next = Mode::kDevices;
    } else if (arg == "--recipe") {
      if (i + 1 >= argc) return usage_error("--recipe needs a FILE");
      recipe = argv[++i];
      continue;
    } else if (arg == "--json") {
      as_json = true;
      continue;
    } else if (arg == "--help" || arg == "-h") {
      print_usage(std::cout);
      return 0;
    } else {
      return usage_error("unknown argument: " + std::string(arg));
    }
    if (mode != Mode::kNone) {
      return usage_error(
          "give exactly one of --version, --capabilities, --check, --self-test and --devices");
    }
    mode = next;
  }
  if (mode == Mode::kNone) {
    return usage_error("give exactly one of --version, --capabilities, --check, --self-test and --devices");
  }
  if (!recipe.empty() &&
      (mode == Mode::kVersion || mode == Mode::kCapabilities || mode == Mode::kDevices)) {
    return usage_error("--recipe goes with --check or --self-test");
  }

  worker::BuildIdentity id = worker::generated::build_identity();
  id.build_type = WORKER_BUILD_TYPE;
  if (mode == Mode::kVersion) {
    std::cout << (as_json ? worker::json::dump(worker::identity_json(id)) + "\n"
                          : worker::identity_text(id));
    std::cout.flush();
    return std::cout ? 0 : 3;
  }

  if (mode == Mode::kDevices) {  // what this host offers, for `patchctl release build`
#ifdef WORKER_HAVE_VULKAN
    const worker::vulkan::Probe probe = worker::vulkan::probe();
    std::cout << (as_json ? worker::json::dump(worker::vulkan::probe_json(probe)) + "\n"
                          : worker::vulkan::probe_text(probe));
#else
    std::cout << (as_json ? worker::json::dump(worker::json::Object{{"backend", id.backend}}) + "\n"
                          : "backend " + id.backend + ": no device to probe\n");
#endif
    std::cout.flush();
    return std::cout ? 0 : 3;
  }

  std::vector<worker::GateStep> steps;
  if (std::optional<worker::Refusal> refused = gate(id, argv[0], recipe, steps)) {
    std::cerr << "worker: " << refused->message << "\n";
    return refused->exit_code;
  }

  int code = 0;
  if (mode == Mode::kCapabilities) {
    std::cout << (as_json ? worker::json::dump(worker::capabilities_json(id)) + "\n"
                          : worker::capabilities_text(id));
  } else if (mode == Mode::kCheck) {
    if (as_json) {
      std::cout << worker::json::dump(worker::json::Object{{"ok", true},
                                                           {"steps", steps_json(steps)}})
                << "\n";
    } else {
      for (const auto& s : steps) std::cout << s.name << ": " << s.status << ", " << s.detail << "\n";
    }
  } else {
#ifdef WORKER_HAVE_STAGE
    const std::string exe = worker::executable_path(argv[0]);
    worker::stage::set_stack_fingerprint(id.fingerprint);
    const std::vector<worker::SelfTestCheck> checks =
        worker::self_test([&exe] { return worker::stage::pipeline_check(exe); });
#else
    const std::vector<worker::SelfTestCheck> checks = worker::self_test();
#endif
    if (as_json) {
      worker::json::Value doc = worker::self_test_json(checks);
      worker::json::Object out{{"gate", steps_json(steps)}};
      for (auto& [key, value] : doc.get_ref<worker::json::Object&>()) {
        out.emplace(key, std::move(value));
      }
      std::cout << worker::json::dump(worker::json::Value(std::move(out))) << "\n";
    } else {
      for (const auto& s : steps) std::cout << s.name << ": " << s.status << ", " << s.detail << "\n";
      std::cout << worker::self_test_text(checks);
    }
    if (!worker::all_passed(checks)) code = worker::kExitSelfTest;
  }
  std::cout.flush();
  return std::cout ? code : 3;
}

}  // namespace

// An environment failure below the worker (libcrypto that cannot provide
// SHA-256, say) is one line and exit 3, never an abort with a trace.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "worker: " << e.what() << "\n";
    return 3;
  }
}
