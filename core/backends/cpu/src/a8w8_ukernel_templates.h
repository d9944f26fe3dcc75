// The int8 micro-kernel template of gemm_a8w8_blockscale, compiled once per instruction set.
// The including translation unit defines KTUNE_ISA_TARGET and, in an anonymous namespace of
// ktune::cpu, traits structs (int and float vector types, dot products of 4-byte groups, ...)
// passed as `T`. Anonymous namespace on purpose, as in ukernel_templates.h: no instantiation
// compiled for one ISA can be merged into code that runs on a CPU without it.
#include <cstdint>
#include <utility>

#include "a8w8_ukernels.h"

namespace ktune::cpu {
namespace {

template <class T, int MR, int NV>
KTUNE_ISA_TARGET void a8_ukernel(int kblocks, const std::int8_t* __restrict a, const std::uint8_t* __restrict w,
                                 const std::int32_t* __restrict asum128, const float* __restrict a_scale,
                                 const float* __restrict w_scale, float* __restrict c, long ldc, bool first) {
  using VI = typename T::VI;
  using VF = typename T::VF;
  constexpr int L = T::L;
  constexpr int NR = NV * L;
  VF facc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) facc[i][j] = T::fzero();
  for (int kb = 0; kb < kblocks; ++kb) {
    VI iacc[MR][NV];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) iacc[i][j] = T::izero();
    for (int g = 0; g < kScaleBlock / 4; ++g) {
      typename T::VW wv[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) wv[j] = T::load_w(w + (g * NR + j * L) * 4);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const auto av = T::bcast_a(a + (g * MR + i) * 4);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) iacc[i][j] = T::dot(iacc[i][j], av, wv[j]);
      }
    }
    // Exact int32 sums of this block (less the bias on W), then one rounding to f32 and the
    // block's two scales.
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const VF s = T::fbcast(a_scale[i] * w_scale[kb]);
      const VI bias = T::biased_w ? T::ibcast(asum128[i]) : T::izero();
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) facc[i][j] = T::fma(T::to_f32(T::isub(iacc[i][j], bias)), s, facc[i][j]);
    }
    a += kScaleBlock * MR;
    w += kScaleBlock * NR;
    asum128 += MR;
    a_scale += MR;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      float* p = c + i * ldc + j * L;
      T::fstore(p, first ? facc[i][j] : T::fadd(T::fload(p), facc[i][j]));
    }
}

template <class T, int MR, int NV>
void add_a8_one(A8UKernelSet& set) {
  // int32 and f32 accumulators, the weight vectors and a broadcast must fit in the registers.
  if constexpr (2 * MR * NV + NV + 2 <= T::registers) set.k[MR][NV] = &a8_ukernel<T, MR, NV>;
}

template <class T, int MR, int... NV>
void add_a8_row(A8UKernelSet& set, std::integer_sequence<int, NV...>) {
  (add_a8_one<T, MR, NV>(set), ...);
}

template <class T>
A8UKernelSet make_a8_set() {
  A8UKernelSet set;
  set.isa = T::name;
  set.lanes = T::L;
  set.registers = T::registers;
  set.biased_w = T::biased_w;
  using NVs = std::integer_sequence<int, 1, 2, 4>;
  add_a8_row<T, 1>(set, NVs{});
  add_a8_row<T, 2>(set, NVs{});
  add_a8_row<T, 4>(set, NVs{});
  add_a8_row<T, 6>(set, NVs{});
  add_a8_row<T, 8>(set, NVs{});
  return set;
}

}  // namespace
}  // namespace ktune::cpu
