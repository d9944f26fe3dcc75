#pragma once
// Shared by the CPU backend's family suites.
#include <algorithm>
#include <vector>

#include "ktune/device.h"
#include "ktune/param_value.h"

// Candidate values of a `threads` parameter: one thread, and several when the machine has them
// (`hw`: its threads_hw; a parameter's values must be distinct).
inline std::vector<ktune::ParamValue> thread_counts(int hw) {
  if (hw == 1) return {1};
  return {1, std::min(hw, 3)};
}

// A fixed machine, for the tests that count the configs a space keeps: the host's caches,
// threads and ISA prune differently on every machine. Sapphire Rapids' caches (none binds the
// blocks of the default spaces), AVX2, 8 threads. For enumeration only: nothing runs on it.
inline ktune::DeviceInfo fixed_cpu() {
  ktune::DeviceInfo d;
  d.backend = "cpu";
  d.name = "fixed test cpu";
  d.properties = {{"cores", 4},          {"threads", 8},
                  {"threads_hw", 8},     {"l1d_bytes", 48 * 1024},
                  {"l2_bytes", 2 << 20}, {"l3_bytes", 105 << 20},
                  {"simd_width_f32", 8}, {"simd_registers", 16},
                  {"int8_vnni", 0},      {"max_workspace_bytes", 1 << 30}};
  return d;
}
