// Portable int8 micro-kernels of gemm_a8w8_blockscale: GCC/Clang vector extensions of 4 int32
// lanes, the dot products of 4-byte groups written out (exact for every code, -128 included).
#include <cstdint>
#include <cstring>

#define KTUNE_ISA_TARGET

namespace ktune::cpu {
namespace {

struct Portable {
  typedef std::int32_t VI __attribute__((vector_size(16)));
  typedef float VF __attribute__((vector_size(16)));
  using VW = const std::int8_t*;
  static constexpr int L = 4;
  static constexpr int registers = 16;
  static constexpr const char* name = "portable";
  static constexpr bool biased_w = false;
  static VI izero() { return VI{0, 0, 0, 0}; }
  static VI ibcast(std::int32_t s) { return VI{s, s, s, s}; }
  static VI isub(VI a, VI b) { return a - b; }
  static VW load_w(const std::uint8_t* p) { return reinterpret_cast<const std::int8_t*>(p); }
  static const std::int8_t* bcast_a(const std::int8_t* p) { return p; }
  static VI dot(VI acc, const std::int8_t* a, VW w) {
    for (int l = 0; l < L; ++l)
      acc[l] += a[0] * w[4 * l] + a[1] * w[4 * l + 1] + a[2] * w[4 * l + 2] + a[3] * w[4 * l + 3];
    return acc;
  }
  static VF to_f32(VI v) { return VF{float(v[0]), float(v[1]), float(v[2]), float(v[3])}; }
  static VF fzero() { return VF{0, 0, 0, 0}; }
  static VF fbcast(float s) { return VF{s, s, s, s}; }
  static VF fload(const float* p) {
    VF v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void fstore(float* p, VF v) { std::memcpy(p, &v, sizeof v); }
  static VF fadd(VF a, VF b) { return a + b; }
  static VF fma(VF a, VF b, VF c) { return a * b + c; }
};

}  // namespace
}  // namespace ktune::cpu

#include "a8w8_ukernel_templates.h"

namespace ktune::cpu {

const A8UKernelSet& a8_ukernels_portable() {
  static const A8UKernelSet set = make_a8_set<Portable>();
  return set;
}

}  // namespace ktune::cpu
