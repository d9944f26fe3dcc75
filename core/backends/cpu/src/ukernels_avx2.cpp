// AVX2/FMA micro-kernels: 16 ymm registers, 8 f32 lanes.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstdint>

#define KTUNE_ISA_TARGET __attribute__((target("avx2,fma")))

namespace ktune::cpu {
namespace {
struct Isa {
  using V = __m256;
  static constexpr int L = 8;
  static constexpr int registers = 16;
  static constexpr const char* name = "avx2";
  KTUNE_ISA_TARGET static V zero() { return _mm256_setzero_ps(); }
  KTUNE_ISA_TARGET static V load(const float* p) { return _mm256_loadu_ps(p); }
  KTUNE_ISA_TARGET static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  KTUNE_ISA_TARGET static V bcast(float s) { return _mm256_set1_ps(s); }
  KTUNE_ISA_TARGET static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  KTUNE_ISA_TARGET static V load_i8(const std::int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  KTUNE_ISA_TARGET static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};
}  // namespace
}  // namespace ktune::cpu

#include "ukernel_templates.h"

namespace ktune::cpu {
const UKernelSet& ukernels_avx2() {
  static const UKernelSet set = make_set();
  return set;
}
}  // namespace ktune::cpu
#endif
