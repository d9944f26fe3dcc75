// AVX-512 micro-kernels: 32 zmm registers, 16 f32 lanes.
#if defined(__x86_64__) || defined(__i386__)
// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_*(), which -Wuninitialized
// flags wherever they are inlined (GCC bug 105593); the values are never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

#define KTUNE_ISA_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma,avx2")))

namespace ktune::cpu {
namespace {
struct Isa {
  using V = __m512;
  static constexpr int L = 16;
  static constexpr int registers = 32;
  static constexpr const char* name = "avx512";
  KTUNE_ISA_TARGET static V zero() { return _mm512_setzero_ps(); }
  KTUNE_ISA_TARGET static V load(const float* p) { return _mm512_loadu_ps(p); }
  KTUNE_ISA_TARGET static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  KTUNE_ISA_TARGET static V bcast(float s) { return _mm512_set1_ps(s); }
  KTUNE_ISA_TARGET static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  KTUNE_ISA_TARGET static V load_i8(const std::int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  KTUNE_ISA_TARGET static float hsum(V v) { return _mm512_reduce_add_ps(v); }
};
}  // namespace
}  // namespace ktune::cpu

#include "ukernel_templates.h"

namespace ktune::cpu {
const UKernelSet& ukernels_avx512() {
  static const UKernelSet set = make_set();
  return set;
}
}  // namespace ktune::cpu
#endif
