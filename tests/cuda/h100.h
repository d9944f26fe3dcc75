#pragma once
// Properties of an NVIDIA H100 80GB HBM3 as its driver reports them: the device the spec tests
// prune and check against where no GPU is present; and the A100 that kernels without Hopper's
// features (mma.sync, cp.async) are also pruned for.
#include "ktune/expression.h"

namespace ktune_test {

inline ktune::Variables h100() {
  return {{"sms", 132},
          {"smem_per_block", 49152},
          {"smem_per_block_optin", 232448},
          {"smem_per_sm", 233472},
          {"regs_per_block", 65536},
          {"regs_per_sm", 65536},
          {"warp_size", 32},
          {"max_threads_per_block", 1024},
          {"l2_bytes", 52428800},
          {"sm_clock_mhz", 1980},
          {"mem_clock_mhz", 2619},
          {"mem_bandwidth_gbs", 3352},
          {"cc_major", 9},
          {"cc_minor", 0},
          {"peak_gflops_f16", 1070530},
          {"peak_gflops_f32", 66908}};
}

// An A100 (sm_80): the H100's numbers where they agree, its own SMs and shared memory.
inline ktune::Variables a100() {
  ktune::Variables v = h100();
  v["cc_major"] = 8;
  v["sms"] = 108;
  v["smem_per_block_optin"] = 166912;
  v["smem_per_sm"] = 167936;
  return v;
}

}  // namespace ktune_test
