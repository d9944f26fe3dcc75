#pragma once
// What every fuzz target asserts: a reader given any bytes either succeeds or throws
// InputError. Anything else (a crash, a sanitizer report, a raw library exception, which
// libFuzzer reports as an abort) is a bug; its input becomes a case in tests/core/test_bad_input.cpp.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ktune/error.h"

namespace ktune::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

template <class F>
void expect_input_errors(F&& read) {
  try {
    read();
  } catch (const InputError&) {
  }
}

}  // namespace ktune::fuzz
