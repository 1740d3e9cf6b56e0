// The CPU lane's deterministic compute smoke test: the checks that
// `worker --self-test` runs (src/core/selftest.cpp, which holds the recorded
// constants), for one thread count.
//
// usage: worker_compute_smoke <threads>

#include <cstdio>
#include <cstdlib>

#include "worker/selftest.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: worker_compute_smoke <threads>\n");
    return 2;
  }
  const unsigned threads = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10));
  const auto checks = worker::compute_checks(threads);
  std::fputs(worker::self_test_text(checks).c_str(), stdout);
  if (worker::all_passed(checks)) std::printf("compute smoke: OK (%u threads)\n", threads);
  return worker::all_passed(checks) ? 0 : 1;
}
