// worker: the native worker. For now a skeleton that reports what it was
// built from (--version) and what it is certified to do (--capabilities).

#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>

#include "worker/build_identity.hpp"  // generated into the build directory
#include "worker/identity.hpp"

#ifndef WORKER_BUILD_TYPE
#error "WORKER_BUILD_TYPE must be defined by the build ($<CONFIG>)"
#endif

namespace {

constexpr std::string_view kUsage =
    "usage: worker --version [--json]\n"
    "       worker --capabilities [--json]\n"
    "\n"
    "  --version        what this binary was built from: stack fingerprint,\n"
    "                   patches, toolchain, certification, upstream build\n"
    "  --capabilities   capabilities backed by a certification record\n"
    "  --json           print JSON instead of text\n";

int usage_error(std::string_view message) {
  std::cerr << "worker: " << message << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool version = false;
  bool capabilities = false;
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--version") {
      version = true;
    } else if (arg == "--capabilities") {
      capabilities = true;
    } else if (arg == "--json") {
      as_json = true;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else {
      return usage_error("unknown argument: " + std::string(arg));
    }
  }
  if (version == capabilities) {
    return usage_error("give exactly one of --version and --capabilities");
  }

  worker::BuildIdentity id = worker::generated::build_identity();
  id.build_type = WORKER_BUILD_TYPE;
  if (version) {
    std::cout << (as_json ? worker::identity_json(id).dump() + "\n"
                          : worker::identity_text(id));
  } else {
    std::cout << (as_json ? worker::capabilities_json(id).dump() + "\n"
                          : worker::capabilities_text(id));
  }
  std::cout.flush();
  return std::cout ? 0 : 3;
}
