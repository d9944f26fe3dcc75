#include "ukernels.h"

namespace ktune::cpu {

const UKernelSet* ukernels_for(int lanes) {
  switch (lanes) {
    case 4:
      return &ukernels_portable();
#if defined(__x86_64__) || defined(__i386__)
    case 8:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &ukernels_avx2() : nullptr;
    case 16:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")
                 ? &ukernels_avx512()
                 : nullptr;
#endif
    default:
      return nullptr;
  }
}

}  // namespace ktune::cpu
