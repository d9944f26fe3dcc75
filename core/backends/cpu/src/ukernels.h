#pragma once
// Micro-kernels of the CPU backend, one set per instruction set. Each set is compiled in its own
// translation unit with target attributes; ukernels_for() hands out a set only when this CPU
// runs it, so one binary works from plain x86-64 (or any other architecture) up to AVX-512.
#include <cstdint>

namespace ktune::cpu {

// C[0:MR, 0:NR] = beta * C + sum_k a[k*MR + i] * b[k*NR + j], with a and b packed panels.
// beta == 0 never reads C (BLAS semantics: C may hold garbage).
using GemmUKernel = void (*)(int kc, const float* a, const float* b, float* c, long ldc, float beta);

// y[r*ldy + u] (+)= sum_{i<n} x[r*ldx + i] * w[u*ldw + i] for r < BT, u < U: a BT x U block of
// dot products, weights dequantized (int8 -> f32) on the fly; per-channel scales come later.
using QmmUKernel = void (*)(int n, const float* x, long ldx, const std::int8_t* w, long ldw, float* y, long ldy,
                            bool accumulate);

// bp[k*NR + j] = rows[j][k] for k < kc, j < nr: packing a panel of B read transposed (the
// columns of op(B) are rows in memory). Set only where a vector transpose exists (AVX2).
using PackTransposed = void (*)(const float* const* rows, long kc, long nr, int NR, float* bp);
// Paged attention, one kv head at a time; its rows (d floats each) lie in pages of `page_size`
// rows, pages[i] the i-th page's first row, token t at pages[t / page_size] + (t % page_size) * d.
// Scores of QB q heads (q: QB rows of d) against n tokens: s[qb*lds + t] = scale * q[qb] . k_t.
using AttnScoreUKernel = void (*)(int n, const float* const* pages, int page_size, int d, const float* q, float scale,
                                  float* s, long lds);
// Output update of QB q heads: o[qb*d + j] = alpha[qb] * o[qb*d + j] + sum_t p[qb*ldp + t] * v_t[j].
using AttnAccumUKernel = void (*)(int n, const float* const* pages, int page_size, int d, const float* p, long ldp,
                                  const float* alpha, float* o);

inline constexpr int kMaxMR = 16;  // rows of a GEMM micro-tile
inline constexpr int kMaxNV = 4;   // vectors per micro-tile row (NR = NV * lanes)
inline constexpr int kMaxBT = 8;   // batch rows of a qmatmul micro-block
inline constexpr int kMaxU = 4;    // output channels of a qmatmul micro-block
inline constexpr int kMaxQB = 8;   // q heads of one GQA group an attention micro-kernel serves

struct UKernelSet {
  const char* isa = "";                           // "avx512", "avx2", "portable"
  int lanes = 0;                                  // f32 lanes per vector
  int registers = 0;                              // vector registers the compiler may use for this set
  GemmUKernel gemm[kMaxMR + 1][kMaxNV + 1] = {};  // [MR][NV], null where none was instantiated
  QmmUKernel qmm[kMaxBT + 1][kMaxU + 1] = {};     // [BT][U]
  PackTransposed pack_transposed = nullptr;
  AttnScoreUKernel attn_score[kMaxQB + 1] = {};  // [QB]: 1, 2, 4, 8
  AttnAccumUKernel attn_accum[kMaxQB + 1] = {};
};

// Instruction-set levels of the micro-kernels, each a superset of the one before.
enum class IsaLevel { Portable, Avx2, Avx512, Avx512Vnni };
// "portable", "avx2", "avx512", "avx512-vnni".
const char* isa_level_name(IsaLevel level);
// The highest level this CPU runs.
IsaLevel host_isa_level();
// The level kernels may use: the host's, lowered by KTUNE_CPU_DEVICE's isa= (cpu_device.cpp).
// Read once per process; an isa= the host lacks or a malformed variable throws InputError.
IsaLevel isa_level();

// The set with `lanes` f32 lanes (16, 8 or 4) when isa_level() allows it; nullptr otherwise.
const UKernelSet* ukernels_for(int lanes);

// Defined per ISA translation unit; only call through ukernels_for().
const UKernelSet& ukernels_portable();
#if defined(__x86_64__) || defined(__i386__)
const UKernelSet& ukernels_avx2();
const UKernelSet& ukernels_avx512();
#endif

}  // namespace ktune::cpu
