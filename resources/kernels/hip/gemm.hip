// ktune's built-in gemm for AMD GPUs: C = A x B with A (M x K), B (K x N), C (M x N) row-major,
// T = f16 or bf16, f32 accumulation. A portable tiled kernel (any gfx target, wave32 or wave64):
// a block of (BM/TM) x (BN/TN) threads computes a BM x BN tile of C from BK-deep tiles of A and
// B staged in LDS, each thread a TM x TN micro-tile strided across the tile so that neighbouring
// threads read neighbouring LDS words and write neighbouring elements of C.
// W8=1 builds the same kernels for w8a16 (the qmatmul family): B is int8 weights stored N x K
// (out x in), read along K and widened to f16 as they are staged in LDS, so the inner loops are
// gemm's; one f16 scale per output column S[N] (the last parameter) multiplies the f32 sum.
#ifndef __HIPCC_RTC__
#include <hip/hip_runtime.h>
#endif

#if KTUNE_BF16
typedef unsigned short T;  // bf16 bits: no header dependency, exact conversions
__device__ inline float to_f32(T v) { return __uint_as_float(static_cast<unsigned>(v) << 16); }
__device__ inline T from_f32(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);                      // round to nearest even
  return static_cast<T>(u >> 16);
}
#else
typedef _Float16 T;
__device__ inline float to_f32(T v) { return static_cast<float>(v); }
__device__ inline T from_f32(float f) { return static_cast<T>(f); }
#endif

#ifndef W8
#define W8 0
#endif
#if W8
typedef signed char BT;  // int8 weights
// W[n][k]: a tile element e is (k = e % BK, n = e / BK), so neighbouring threads read neighbouring bytes.
#define B_TILE_KN(e) const int k = (e) % BK, n = (e) / BK
__device__ inline T load_b(const BT* B, int k, int n, int N, int K) {
  return static_cast<T>(static_cast<float>(B[static_cast<size_t>(n) * K + k]));  // exact: |w| <= 128
}
#define SCALES_PARAM , const T* __restrict__ S
#define SCALED(v, n) ((v) * to_f32(S[n]))
#else
typedef T BT;
#define B_TILE_KN(e) const int k = (e) / BN, n = (e) % BN
__device__ inline T load_b(const BT* B, int k, int n, int N, int K) { return B[static_cast<size_t>(k) * N + n]; }
#define SCALES_PARAM
#define SCALED(v, n) (v)
#endif

#define ROWS (BM / TM)  // threads along M
#define COLS (BN / TN)  // threads along N
#define THREADS (ROWS * COLS)

extern "C" __global__ void __launch_bounds__(THREADS)
gemm(const T* __restrict__ A, const BT* __restrict__ B, T* __restrict__ C, int M, int N, int K SCALES_PARAM) {
  __shared__ T As[BK][BM];  // A's tile transposed: a k-slice of BM rows is contiguous
  __shared__ T Bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % COLS, ty = tid / COLS;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += THREADS) {
      const int m = e / BK, k = e % BK, gm = m0 + m, gk = k0 + k;
      As[k][m] = (gm < M && gk < K) ? A[static_cast<size_t>(gm) * K + gk] : T(0);
    }
    for (int e = tid; e < BK * BN; e += THREADS) {
      B_TILE_KN(e);
      const int gk = k0 + k, gn = n0 + n;
      Bs[k][n] = (gk < K && gn < N) ? load_b(B, gk, gn, N, K) : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = to_f32(As[k][ty + i * ROWS]);
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = to_f32(Bs[k][tx + j * COLS]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int gm = m0 + ty + i * ROWS;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gn = n0 + tx + j * COLS;
      if (gm < M && gn < N) C[static_cast<size_t>(gm) * N + gn] = from_f32(SCALED(acc[i][j], gn));
    }
  }
}

#if MFMA
// CDNA matrix cores (gfx90a, gfx94x: the "_1k" bf16 forms): each wavefront of 64 lanes computes
// a 32 x 32 tile of C as 2 x 2 v_mfma_f32_16x16x16 blocks; the block's (BM/32) x (BN/32)
// wavefronts share BK-deep tiles of A (row-major, k contiguous) and B (transposed, k contiguous)
// in LDS. Operand layout of 16x16x16: lane l holds A[l%16][4*(l/16) .. +3] and B[4*(l/16) .. +3][l%16],
// and gets D[4*(l/16) + r][l%16] in item r.
typedef float f32x4 __attribute__((ext_vector_type(4)));
#if KTUNE_BF16
typedef short op_t;  // bf16 bits, as the builtin takes them
typedef short op4 __attribute__((ext_vector_type(4)));
#define KTUNE_MFMA(a, b, c) __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0)
#else
typedef _Float16 op_t;
typedef _Float16 op4 __attribute__((ext_vector_type(4)));
#define KTUNE_MFMA(a, b, c) __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0)
#endif
#define WAVES_N (BN / 32)
#define MFMA_THREADS (64 * (BM / 32) * (BN / 32))

extern "C" __global__ void __launch_bounds__(MFMA_THREADS)
gemm_mfma(const T* __restrict__ A, const BT* __restrict__ B, T* __restrict__ C, int M, int N, int K SCALES_PARAM) {
  __shared__ T As[BM][BK];
  __shared__ T Bs[BN][BK];
  const int tid = threadIdx.x, lane = tid % 64, wave = tid / 64;
  const int wm = wave / WAVES_N, wn = wave % WAVES_N;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  f32x4 acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) acc[i][j] = f32x4{0.f, 0.f, 0.f, 0.f};

  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += MFMA_THREADS) {
      const int m = e / BK, k = e % BK, gm = m0 + m, gk = k0 + k;
      As[m][k] = (gm < M && gk < K) ? A[static_cast<size_t>(gm) * K + gk] : T(0);
    }
    for (int e = tid; e < BK * BN; e += MFMA_THREADS) {
      B_TILE_KN(e);
      const int gk = k0 + k, gn = n0 + n;
      Bs[n][k] = (gk < K && gn < N) ? load_b(B, gk, gn, N, K) : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      const int k = kk + 4 * (lane / 16);
      op4 a[2], b[2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          a[i][r] = static_cast<op_t>(As[wm * 32 + i * 16 + lane % 16][k + r]);
          b[i][r] = static_cast<op_t>(Bs[wn * 32 + i * 16 + lane % 16][k + r]);
        }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) acc[i][j] = KTUNE_MFMA(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int gm = m0 + wm * 32 + i * 16 + 4 * (lane / 16) + r, gn = n0 + wn * 32 + j * 16 + lane % 16;
        if (gm < M && gn < N) C[static_cast<size_t>(gm) * N + gn] = from_f32(SCALED(acc[i][j][r], gn));
      }
}
#endif
