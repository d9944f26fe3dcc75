// The micro-kernel templates, written once and compiled once per ISA. The including translation
// unit first defines KTUNE_ISA_TARGET (a target attribute, or nothing) and, in an anonymous
// namespace of ktune::cpu, a traits struct `Isa` (vector type V, lanes L, load/store/fma...).
// Everything here lives in an anonymous namespace on purpose: each ISA unit gets its own copy,
// so no instantiation compiled for AVX-512 can be merged by the linker into code that runs on a
// CPU without it. No include guard: it is included exactly once per ISA unit.
#include <cstdint>
#include <utility>

#include "ukernels.h"

namespace ktune::cpu {
namespace {

template <int MR, int NV>
KTUNE_ISA_TARGET void gemm_ukernel(int kc, const float* __restrict a, const float* __restrict b, float* __restrict c,
                                   long ldc, float beta) {
  using V = typename Isa::V;
  constexpr int L = Isa::L;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = Isa::zero();
      // C rows are ldc apart (4 KiB for N=1024: the same L1 set); fetch them while the k loop runs.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    __builtin_prefetch(c + i * ldc, 1, 3);
    __builtin_prefetch(c + i * ldc + NV * L - 1, 1, 3);
  }
  for (int k = 0; k < kc; ++k) {
    V bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = Isa::load(b + j * L);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V av = Isa::bcast(a[i]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] = Isa::fma(av, bv[j], acc[i][j]);
    }
    a += MR;
    b += NV * L;
  }
  if (beta == 0.0f) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) Isa::store(c + i * ldc + j * L, acc[i][j]);
  } else {
    const V bb = Isa::bcast(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        Isa::store(c + i * ldc + j * L, Isa::fma(bb, Isa::load(c + i * ldc + j * L), acc[i][j]));
  }
}

template <int BT, int U>
KTUNE_ISA_TARGET void qmm_ukernel(int n, const float* __restrict x, long ldx, const std::int8_t* __restrict w, long ldw,
                                  float* __restrict y, long ldy, bool accumulate) {
  using V = typename Isa::V;
  constexpr int L = Isa::L;
  V acc[BT][U];
#pragma GCC unroll 8
  for (int r = 0; r < BT; ++r)
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) acc[r][u] = Isa::zero();
  int i = 0;
  for (; i + L <= n; i += L) {
    V xv[BT];
#pragma GCC unroll 8
    for (int r = 0; r < BT; ++r) xv[r] = Isa::load(x + r * ldx + i);
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const V wv = Isa::load_i8(w + u * ldw + i);
#pragma GCC unroll 8
      for (int r = 0; r < BT; ++r) acc[r][u] = Isa::fma(xv[r], wv, acc[r][u]);
    }
  }
  for (int r = 0; r < BT; ++r)
    for (int u = 0; u < U; ++u) {
      float s = Isa::hsum(acc[r][u]);
      for (int t = i; t < n; ++t) s += x[r * ldx + t] * float(w[u * ldw + t]);
      y[r * ldy + u] = accumulate ? y[r * ldy + u] + s : s;
    }
}

// TT tokens (rows) against QB q heads at once: TT * QB independent FMA chains, each K vector
// loaded once for all QB heads.
template <int QB, int TT>
KTUNE_ISA_TARGET inline void attn_score_rows(const float* const* rows, int d, const float* __restrict q, float scale,
                                             float* __restrict s, long lds) {
  using V = typename Isa::V;
  constexpr int L = Isa::L;
  V acc[TT][QB];
#pragma GCC unroll 8
  for (int u = 0; u < TT; ++u)
#pragma GCC unroll 8
    for (int h = 0; h < QB; ++h) acc[u][h] = Isa::zero();
  int j = 0;
  for (; j + L <= d; j += L) {
    V kv[TT];
#pragma GCC unroll 8
    for (int u = 0; u < TT; ++u) kv[u] = Isa::load(rows[u] + j);
#pragma GCC unroll 8
    for (int h = 0; h < QB; ++h) {
      const V qv = Isa::load(q + h * d + j);
#pragma GCC unroll 8
      for (int u = 0; u < TT; ++u) acc[u][h] = Isa::fma(qv, kv[u], acc[u][h]);
    }
  }
  for (int u = 0; u < TT; ++u)
    for (int h = 0; h < QB; ++h) {
      float x = Isa::hsum(acc[u][h]);
      for (int t = j; t < d; ++t) x += q[h * d + t] * rows[u][t];
      s[h * lds + u] = x * scale;
    }
}

template <int QB>
KTUNE_ISA_TARGET void attn_score_ukernel(int n, const float* const* pages, int page_size, int d, const float* q,
                                         float scale, float* s, long lds) {
  // At least four chains in flight hide the FMA latency when QB is small.
  constexpr int TT = QB >= 4 ? 1 : 4 / QB;
  for (int t = 0, pg = 0; t < n; ++pg) {
    const int m = n - t < page_size ? n - t : page_size;
    const float* base = pages[pg];
    int i = 0;
    for (; i + TT <= m; i += TT) {
      const float* rows[TT];
      for (int u = 0; u < TT; ++u) rows[u] = base + static_cast<long>(i + u) * d;
      attn_score_rows<QB, TT>(rows, d, q, scale, s + t + i, lds);
    }
    for (; i < m; ++i) {
      const float* row = base + static_cast<long>(i) * d;
      attn_score_rows<QB, 1>(&row, d, q, scale, s + t + i, lds);
    }
    t += m;
  }
}

// Columns [j, j + DV*L) of QB output rows: kept in registers while every token passes.
template <int QB, int DV>
KTUNE_ISA_TARGET inline void attn_accum_cols(int n, const float* const* pages, int page_size, int d, const float* p,
                                             long ldp, const float* alpha, float* o, int j) {
  using V = typename Isa::V;
  constexpr int L = Isa::L;
  V acc[QB][DV];
#pragma GCC unroll 8
  for (int h = 0; h < QB; ++h) {
    const V a = Isa::bcast(alpha[h]);
#pragma GCC unroll 4
    for (int v = 0; v < DV; ++v) acc[h][v] = Isa::fma(a, Isa::load(o + h * d + j + v * L), Isa::zero());
  }
  for (int t = 0, pg = 0; t < n; ++pg) {
    const int m = n - t < page_size ? n - t : page_size;
    const float* row = pages[pg] + j;
    for (int i = 0; i < m; ++i, ++t, row += d) {
      V vv[DV];
#pragma GCC unroll 4
      for (int v = 0; v < DV; ++v) vv[v] = Isa::load(row + v * L);
#pragma GCC unroll 8
      for (int h = 0; h < QB; ++h) {
        const V pb = Isa::bcast(p[h * ldp + t]);
#pragma GCC unroll 4
        for (int v = 0; v < DV; ++v) acc[h][v] = Isa::fma(pb, vv[v], acc[h][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < QB; ++h)
#pragma GCC unroll 4
    for (int v = 0; v < DV; ++v) Isa::store(o + h * d + j + v * L, acc[h][v]);
}

template <int QB>
KTUNE_ISA_TARGET void attn_accum_ukernel(int n, const float* const* pages, int page_size, int d, const float* p,
                                         long ldp, const float* alpha, float* o) {
  constexpr int L = Isa::L;
  // As many output vectors per head as the registers hold beside one V row and a broadcast.
  constexpr int fit = (Isa::registers - 2) / (QB + 1);
  constexpr int DV = fit > 4 ? 4 : (fit < 1 ? 1 : fit);
  int j = 0;
  for (; j + DV * L <= d; j += DV * L) attn_accum_cols<QB, DV>(n, pages, page_size, d, p, ldp, alpha, o, j);
  for (; j + L <= d; j += L) attn_accum_cols<QB, 1>(n, pages, page_size, d, p, ldp, alpha, o, j);
  for (; j < d; ++j)
    for (int h = 0; h < QB; ++h) {
      float x = alpha[h] * o[h * d + j];
      for (int t = 0; t < n; ++t) x += p[h * ldp + t] * pages[t / page_size][static_cast<long>(t % page_size) * d + j];
      o[h * d + j] = x;
    }
}

template <int MR, int NV>
void add_gemm_one(UKernelSet& set) {
  // Tiles with more accumulators than registers only spill; they are not worth instantiating.
  if constexpr (MR * NV <= Isa::registers) set.gemm[MR][NV] = &gemm_ukernel<MR, NV>;
}

template <int MR, int... NV>
void add_gemm_row(UKernelSet& set, std::integer_sequence<int, NV...>) {
  (add_gemm_one<MR, NV + 1>(set), ...);
}

template <int... MR>
void add_gemm(UKernelSet& set, std::integer_sequence<int, MR...>) {
  (add_gemm_row<MR>(set, std::make_integer_sequence<int, kMaxNV>{}), ...);
}

template <int BT, int... U>
void add_qmm_row(UKernelSet& set, std::integer_sequence<int, U...>) {
  ((set.qmm[BT][U] = &qmm_ukernel<BT, U>), ...);
}

UKernelSet make_set() {
  UKernelSet set;
  set.isa = Isa::name;
  set.lanes = Isa::L;
  set.registers = Isa::registers;
  // MR values a tuner would pick: small tiles for skinny M, tall ones to fill 32 registers.
  add_gemm(set, std::integer_sequence<int, 1, 2, 4, 6, 8, 12, 14, 16>{});
  add_qmm_row<1>(set, std::integer_sequence<int, 1, 2, 4>{});
  add_qmm_row<2>(set, std::integer_sequence<int, 1, 2, 4>{});
  add_qmm_row<4>(set, std::integer_sequence<int, 1, 2, 4>{});
  add_qmm_row<8>(set, std::integer_sequence<int, 1, 2, 4>{});
  set.attn_score[1] = &attn_score_ukernel<1>;
  set.attn_score[2] = &attn_score_ukernel<2>;
  set.attn_score[4] = &attn_score_ukernel<4>;
  set.attn_score[8] = &attn_score_ukernel<8>;
  set.attn_accum[1] = &attn_accum_ukernel<1>;
  set.attn_accum[2] = &attn_accum_ukernel<2>;
  set.attn_accum[4] = &attn_accum_ukernel<4>;
  set.attn_accum[8] = &attn_accum_ukernel<8>;
  return set;
}

}  // namespace
}  // namespace ktune::cpu
