#pragma once
// A tiny assertion harness for the Qt-free CUDA tests: CHECK records a failure and goes on,
// main() returns 1 when any check failed, 77 when the test skipped for lack of a device.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ktune_test {
inline int& failures() {
  static int n = 0;
  return n;
}
inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what.c_str());
  ++failures();
}
inline int finish(const char* name) {
  if (failures()) {
    std::fprintf(stderr, "%s: %d check(s) failed\n", name, failures());
    return 1;
  }
  std::printf("%s: all checks passed\n", name);
  return 0;
}
}  // namespace ktune_test

#define CHECK(cond) ((cond) ? (void)0 : ktune_test::fail(__FILE__, __LINE__, #cond))
#define CHECK_MSG(cond, msg) \
  ((cond) ? (void)0 : ktune_test::fail(__FILE__, __LINE__, std::string(#cond) + ": " + (msg)))
// Runs `stmt` and checks it throws `Ex` whose message contains `needle`.
#define CHECK_THROWS(Ex, stmt, needle)                                                                           \
  do {                                                                                                           \
    try {                                                                                                        \
      stmt;                                                                                                      \
      ktune_test::fail(__FILE__, __LINE__, "expected " #Ex " from " #stmt);                                      \
    } catch (const Ex& e) {                                                                                      \
      if (std::string(e.what()).find(needle) == std::string::npos)                                               \
        ktune_test::fail(__FILE__, __LINE__, std::string(#Ex " message lacks '") + (needle) + "': " + e.what()); \
    }                                                                                                            \
  } while (0)
