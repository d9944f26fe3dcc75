// AVX2 int8 micro-kernels of gemm_a8w8_blockscale: vpmaddubsw on |a| and w carrying a's sign
// (vpsignb), then vpmaddwd into int32; 16 ymm registers, 8 int32 lanes.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define KTUNE_ISA_TARGET __attribute__((target("avx2,fma")))

namespace ktune::cpu {
namespace {

struct Avx2 {
  using VI = __m256i;
  using VF = __m256;
  using VW = __m256i;
  static constexpr int L = 8;
  static constexpr int registers = 16;
  static constexpr const char* name = "avx2";
  static constexpr bool biased_w = false;
  KTUNE_ISA_TARGET static VI izero() { return _mm256_setzero_si256(); }
  KTUNE_ISA_TARGET static VI ibcast(std::int32_t s) { return _mm256_set1_epi32(s); }
  KTUNE_ISA_TARGET static VI isub(VI a, VI b) { return _mm256_sub_epi32(a, b); }
  KTUNE_ISA_TARGET static VW load_w(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  KTUNE_ISA_TARGET static VI bcast_a(const std::int8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
  }
  // Pair sums stay within int16 unless w is -128 (see ukernels_avx512's Bw).
  KTUNE_ISA_TARGET static VI dot(VI acc, VI a, VW w) {
    const VI pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(a), _mm256_sign_epi8(w, a));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  KTUNE_ISA_TARGET static VF to_f32(VI v) { return _mm256_cvtepi32_ps(v); }
  KTUNE_ISA_TARGET static VF fzero() { return _mm256_setzero_ps(); }
  KTUNE_ISA_TARGET static VF fbcast(float s) { return _mm256_set1_ps(s); }
  KTUNE_ISA_TARGET static VF fload(const float* p) { return _mm256_loadu_ps(p); }
  KTUNE_ISA_TARGET static void fstore(float* p, VF v) { _mm256_storeu_ps(p, v); }
  KTUNE_ISA_TARGET static VF fadd(VF a, VF b) { return _mm256_add_ps(a, b); }
  KTUNE_ISA_TARGET static VF fma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace
}  // namespace ktune::cpu

#include "a8w8_ukernel_templates.h"

namespace ktune::cpu {
const A8UKernelSet& a8_ukernels_avx2() {
  static const A8UKernelSet set = make_a8_set<Avx2>();
  return set;
}
}  // namespace ktune::cpu
#endif
