// AVX-512 int8 micro-kernels of gemm_a8w8_blockscale, two sets: VNNI (vpdpbusd: u8 x s8 summed
// in groups of 4 straight into int32, W biased to u8) and plain AVX-512BW (vpmaddubsw on |a|
// and w carrying a's sign, then vpmaddwd), for AVX-512 CPUs without VNNI.
#if defined(__x86_64__) || defined(__i386__)
// GCC 12's AVX-512 intrinsics trip -Wuninitialized where inlined (GCC bug 105593), as in
// ukernels_avx512.cpp.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define KTUNE_ISA_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,fma,avx2")))

namespace ktune::cpu {
namespace {

struct Avx512Common {
  using VI = __m512i;
  using VF = __m512;
  using VW = __m512i;
  static constexpr int L = 16;
  static constexpr int registers = 32;
  KTUNE_ISA_TARGET static VI izero() { return _mm512_setzero_si512(); }
  KTUNE_ISA_TARGET static VI ibcast(std::int32_t s) { return _mm512_set1_epi32(s); }
  KTUNE_ISA_TARGET static VI isub(VI a, VI b) { return _mm512_sub_epi32(a, b); }
  KTUNE_ISA_TARGET static VW load_w(const std::uint8_t* p) { return _mm512_loadu_si512(p); }
  KTUNE_ISA_TARGET static VI bcast_a(const std::int8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
  }
  KTUNE_ISA_TARGET static VF to_f32(VI v) { return _mm512_cvtepi32_ps(v); }
  KTUNE_ISA_TARGET static VF fzero() { return _mm512_setzero_ps(); }
  KTUNE_ISA_TARGET static VF fbcast(float s) { return _mm512_set1_ps(s); }
  KTUNE_ISA_TARGET static VF fload(const float* p) { return _mm512_loadu_ps(p); }
  KTUNE_ISA_TARGET static void fstore(float* p, VF v) { _mm512_storeu_ps(p, v); }
  KTUNE_ISA_TARGET static VF fadd(VF a, VF b) { return _mm512_add_ps(a, b); }
  KTUNE_ISA_TARGET static VF fma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
};

struct Vnni : Avx512Common {
  static constexpr const char* name = "avx512-vnni";
  static constexpr bool biased_w = true;
  // w holds w + 128 as u8; the kernel subtracts 128 * sum(a) per block afterwards.
  KTUNE_ISA_TARGET static VI dot(VI acc, VI a, VW w) { return _mm512_dpbusd_epi32(acc, w, a); }
};

struct Bw : Avx512Common {
  static constexpr const char* name = "avx512";
  static constexpr bool biased_w = false;
  // vpmaddubsw multiplies u8 by s8: |a| times w with a's sign moved onto it. Pair sums stay
  // within int16 (2 * 128 * 127 < 32767) as long as w is not -128, which symmetric
  // quantization (codes in [-127, 127]) never produces.
  KTUNE_ISA_TARGET static VI dot(VI acc, VI a, VW w) {
    const __mmask64 neg = _mm512_movepi8_mask(a);
    const VI ws = _mm512_mask_sub_epi8(w, neg, _mm512_setzero_si512(), w);
    const VI pairs = _mm512_maddubs_epi16(_mm512_abs_epi8(a), ws);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
  }
};

}  // namespace
}  // namespace ktune::cpu

#include "a8w8_ukernel_templates.h"

namespace ktune::cpu {
const A8UKernelSet& a8_ukernels_avx512_vnni() {
  static const A8UKernelSet set = make_a8_set<Vnni>();
  return set;
}
const A8UKernelSet& a8_ukernels_avx512() {
  static const A8UKernelSet set = make_a8_set<Bw>();
  return set;
}
}  // namespace ktune::cpu
#endif
