#pragma once
// int8 micro-kernels of gemm_a8w8_blockscale: exact int32 dot products over each 128-deep K
// block, scaled by the block's activation and weight scales and accumulated in f32. One set
// per instruction set, each compiled in its own translation unit with target attributes and
// handed out only when this CPU runs it (as ukernels.h does for the f32 kernels).
#include <cstdint>

namespace ktune::cpu {

inline constexpr int kScaleBlock = 128;  // K (and N for weights) covered by one scale
inline constexpr int kA8MaxMR = 8;       // rows of a micro-tile
inline constexpr int kA8MaxNV = 4;       // int32 vectors per micro-tile row

// For a micro-tile of MR rows x NR = NV * lanes columns, over `kblocks` K blocks:
//   c[i, j] (+)= sum_kb a_scale[kb][i] * w_scale[kb] * sum_{k in kb} a[i, k] * w[j, k]
// a: packed [kb][32 groups of 4 k][MR][4] s8 codes; w: packed [kb][32][NR][4] codes (biased by
// +128 to u8 where the set says so); asum128: [kb][MR] 128 * row sums of a per block (undoes
// that bias; only read by biased sets); a_scale: [kb][MR]; w_scale: [kb] (a micro-panel lies
// inside one 128-column weight block). `first` stores instead of accumulating.
using A8UKernel = void (*)(int kblocks, const std::int8_t* a, const std::uint8_t* w, const std::int32_t* asum128,
                           const float* a_scale, const float* w_scale, float* c, long ldc, bool first);

struct A8UKernelSet {
  const char* isa = "";                          // "avx512-vnni", "avx512", "avx2", "portable"
  int lanes = 0;                                 // int32 lanes per vector
  int registers = 0;                             // vector registers of the set
  bool biased_w = false;                         // W is packed as u8 (code + 128): vpdpbusd multiplies u8 by s8
  A8UKernel k[kA8MaxMR + 1][kA8MaxNV + 1] = {};  // [MR][NV], null where none was instantiated
};

// The set with `lanes` int32 lanes (16, 8 or 4), VNNI dot products or not, when this CPU runs
// it; nullptr otherwise (VNNI exists at 16 lanes only). Defined in a8w8.cpp.
const A8UKernelSet* a8_ukernels_for(int lanes, bool vnni);
// Whether this CPU has AVX-512 VNNI and KTUNE_CPU_DEVICE leaves it (the device property int8_vnni).
bool cpu_has_avx512_vnni();

// Defined per ISA translation unit; only call through a8_ukernels_for().
const A8UKernelSet& a8_ukernels_portable();
#if defined(__x86_64__) || defined(__i386__)
const A8UKernelSet& a8_ukernels_avx2();
const A8UKernelSet& a8_ukernels_avx512();
const A8UKernelSet& a8_ukernels_avx512_vnni();
#endif

}  // namespace ktune::cpu
