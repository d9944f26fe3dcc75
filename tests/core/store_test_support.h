#pragma once
// Shared by the run store, registry and diff/apply suites.
#include <string>

#include "ktune/error.h"

// The message of the InputError `f` throws, or "" when it throws none (other exceptions escape
// and fail the test).
template <class F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const ktune::InputError& e) {
    return e.what();
  }
  return {};
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
