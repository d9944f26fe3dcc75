// Portable micro-kernels: GCC/Clang vector extensions of 4 f32 lanes, which every target the
// compiler supports lowers to its baseline SIMD (SSE2 on x86-64, NEON on AArch64) or scalars.
#include <cstdint>
#include <cstring>

#define KTUNE_ISA_TARGET

namespace ktune::cpu {
namespace {
struct Isa {
  typedef float V __attribute__((vector_size(16)));
  static constexpr int L = 4;
  static constexpr int registers = 16;
  static constexpr const char* name = "portable";
  static V zero() { return V{0, 0, 0, 0}; }
  static V load(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, V v) { std::memcpy(p, &v, sizeof v); }
  static V bcast(float s) { return V{s, s, s, s}; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V load_i8(const std::int8_t* p) { return V{float(p[0]), float(p[1]), float(p[2]), float(p[3])}; }
  static float hsum(V v) { return (v[0] + v[1]) + (v[2] + v[3]); }
};
}  // namespace
}  // namespace ktune::cpu

#include "ukernel_templates.h"

namespace ktune::cpu {
const UKernelSet& ukernels_portable() {
  static const UKernelSet set = make_set();
  return set;
}
}  // namespace ktune::cpu
