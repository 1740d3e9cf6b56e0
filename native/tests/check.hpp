// The unit tests' one harness: count every check and print each failure.
#pragma once

#include <cstdio>
#include <string>

inline int g_failures = 0;
inline int g_checks = 0;

inline void check(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}
