#include "ukernels.h"

namespace ktune::cpu {

const char* isa_level_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::Avx2:
      return "avx2";
    case IsaLevel::Avx512:
      return "avx512";
    case IsaLevel::Avx512Vnni:
      return "avx512-vnni";
    default:
      return "portable";
  }
}

IsaLevel host_isa_level() {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports takes string literals only.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return __builtin_cpu_supports("avx512vnni") ? IsaLevel::Avx512Vnni : IsaLevel::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return IsaLevel::Avx2;
#endif
  return IsaLevel::Portable;
}

const UKernelSet* ukernels_for(int lanes) {
  switch (lanes) {
    case 4:
      return &ukernels_portable();
#if defined(__x86_64__) || defined(__i386__)
    case 8:
      return isa_level() >= IsaLevel::Avx2 ? &ukernels_avx2() : nullptr;
    case 16:
      return isa_level() >= IsaLevel::Avx512 ? &ukernels_avx512() : nullptr;
#endif
    default:
      return nullptr;
  }
}

}  // namespace ktune::cpu
