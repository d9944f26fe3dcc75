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
namespace {

// 8 x 8 blocks: 8 rows' next 8 floats loaded, transposed in registers, stored as 8 packed rows.
KTUNE_ISA_TARGET void pack_transposed(const float* const* rows, long kc, long nr, int NR, float* bp) {
  long j = 0;
  for (; j + 8 <= nr; j += 8) {
    long k = 0;
    for (; k + 8 <= kc; k += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(rows[j + i] + k);
      const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
      const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
      const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
      const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float* o = bp + k * NR + j;
      _mm256_storeu_ps(o + 0 * NR, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(o + 1 * NR, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(o + 2 * NR, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(o + 3 * NR, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(o + 4 * NR, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(o + 5 * NR, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(o + 6 * NR, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(o + 7 * NR, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
    for (; k < kc; ++k)
      for (int i = 0; i < 8; ++i) bp[k * NR + j + i] = rows[j + i][k];
  }
  for (; j < nr; ++j)
    for (long k = 0; k < kc; ++k) bp[k * NR + j] = rows[j][k];
}

}  // namespace

const UKernelSet& ukernels_avx2() {
  static const UKernelSet set = [] {
    UKernelSet s = make_set();
    s.pack_transposed = &pack_transposed;
    return s;
  }();
  return set;
}
}  // namespace ktune::cpu
#endif
