#pragma once
// Shared by the CPU backend's family suites.
#include <algorithm>
#include <vector>

#include "ktune/param_value.h"

// Candidate values of a `threads` parameter: one thread, and several when the machine has them
// (`hw`: its threads_hw; a parameter's values must be distinct).
inline std::vector<ktune::ParamValue> thread_counts(int hw) {
  if (hw == 1) return {1};
  return {1, std::min(hw, 3)};
}
