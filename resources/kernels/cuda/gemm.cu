// ktune gemm: C[M,N] = A[M,K] * B[K,N], row-major, f16 or bf16 storage, f32 accumulation.
// Tensor cores through mma.sync m16n8k16, operands staged in shared memory by a cp.async
// pipeline STAGES deep, fragments loaded with ldmatrix. Every tunable is a -D define set by
// the spec (gemm.json):
//   BM, BN, BK   block tile          WM, WN   warp tile (the block has (BM/WM)*(BN/WN) warps)
//   STAGES       cp.async depth      SPLITK   K slices per tile, reduced in-kernel by the last
//   SWIZZLE      tile rows per rasterization group (L2 reuse of B across neighbouring blocks)
//   VEC          elements per cp.async (8: 16 bytes; 4 and 2 serve K or N not a multiple of 8)
//   KT_BF16      1 for bf16 storage
//   W8           1 for w8a16 (the qmatmul family): B is int8 weights stored N x K (out x in), with
//                one f16 scale per output column applied to the f32 sum; A and C stay f16
// Compiled by NVRTC: no headers, so half/bf16 values are raw 16-bit words and conversions are PTX.
#ifndef KT_BF16
#define KT_BF16 0
#endif
#ifndef W8
#define W8 0
#endif

typedef unsigned short u16;
typedef unsigned int u32;

#define PAD 8  // halves added to every shared row: ldmatrix rows land on distinct banks
#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#define THREADS (WARPS_M * WARPS_N * 32)
#define MI (WM / 16)
#define NI (WN / 8)
#define AS_STRIDE (BK + PAD)
#define BS_STRIDE (BN + PAD)
#define A_STAGE (BM * AS_STRIDE)
#if W8
#define BS8_STRIDE (BK + 16)                // bytes per weight row (N x K int8), padded like A
#define B_STAGE (BN * BS8_STRIDE / 2)       // in 16-bit units, so stages index like A's
static_assert(!KT_BF16, "w8a16 takes f16 activations");
#else
#define B_STAGE (BK * BS_STRIDE)
#endif

static_assert(BM % WM == 0 && BN % WN == 0, "warp tile must divide block tile");
static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "mma tiles are 16x8x16; B fragments go in pairs");
static_assert(VEC == 8 || VEC == 4 || VEC == 2, "cp.async moves 16, 8 or 4 bytes");
static_assert(STAGES >= 2, "the pipeline needs two stages at least");

#if SPLITK > 1 && SPLITK <= 8 && __CUDA_ARCH__ >= 900
#define CLUSTER_REDUCE 1
#define RED_STRIDE (BN + 4)  // f32 partial rows, padded: the quads of a warp hit distinct banks
#define KERNEL_CLUSTER __cluster_dims__(1, SPLITK, 1)
#else
#define CLUSTER_REDUCE 0
#define KERNEL_CLUSTER
#endif

__device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// Copies VEC elements, or writes zeros when `valid` is false (rows past M, columns past K or N).
__device__ __forceinline__ void cp_async(u32 dst, const u16* src, bool valid) {
  const int bytes = valid ? VEC * 2 : 0;
#if VEC == 8
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
#else
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(VEC * 2), "r"(bytes));
#endif
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void mma(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
#if KT_BF16
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
#endif
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats to the storage type, packed: `lo` is the lower address.
__device__ __forceinline__ u32 pack2(float lo, float hi) {
  u32 r;
#if KT_BF16
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}

// One K tile of A (BM x BK) and B (BK x BN) into stage `s`.
__device__ __forceinline__ void load_tile(u16* As, u16* Bs, const u16* A, const u16* B, int M, int N, int K, int m0,
                                          int n0, int k0, int tid) {
  constexpr int A_CHUNKS = BM * BK / VEC, A_PER_ROW = BK / VEC;
#pragma unroll
  for (int c = tid; c < A_CHUNKS; c += THREADS) {
    const int r = c / A_PER_ROW, col = (c % A_PER_ROW) * VEC;
    const int gm = m0 + r, gk = k0 + col;
    const bool ok = gm < M && gk < K;
    cp_async(smem_addr(As + r * AS_STRIDE + col), ok ? A + (long long)gm * K + gk : A, ok);
  }
#if W8
  // 16 weights per copy: K must be a multiple of 16 (the spec's constraint).
  const unsigned char* W = (const unsigned char*)B;
  unsigned char* Ws = (unsigned char*)Bs;
  constexpr int W_CHUNKS = BN * BK / 16, W_PER_ROW = BK / 16;
#pragma unroll
  for (int c = tid; c < W_CHUNKS; c += THREADS) {
    const int r = c / W_PER_ROW, col = (c % W_PER_ROW) * 16;
    const int gn = n0 + r, gk = k0 + col;
    const bool ok = gn < N && gk < K;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(Ws + r * BS8_STRIDE + col)),
                 "l"(ok ? W + (long long)gn * K + gk : W), "r"(ok ? 16 : 0));
  }
#else
  constexpr int B_CHUNKS = BK * BN / VEC, B_PER_ROW = BN / VEC;
#pragma unroll
  for (int c = tid; c < B_CHUNKS; c += THREADS) {
    const int r = c / B_PER_ROW, col = (c % B_PER_ROW) * VEC;
    const int gk = k0 + r, gn = n0 + col;
    const bool ok = gk < K && gn < N;
    cp_async(smem_addr(Bs + r * BS_STRIDE + col), ok ? B + (long long)gk * N + gn : B, ok);
  }
#endif
}

#if W8
// Two int8 (low bytes of `two`) to f16x2, exactly: 0x6400|u is the half 1024+u, so with
// u = s+128, subtracting 1152 leaves s.
__device__ __forceinline__ u32 i8x2_to_f16x2(u32 two) {
  const u32 u = two ^ 0x8080u;
  const u32 h = (u & 0xffu) | ((u & 0xff00u) << 8) | 0x64006400u;
  u32 r;
  asm("sub.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(h), "r"(0x64806480u));
  return r;
}
__device__ __forceinline__ float column_scale(const u16* scales, int n) {
  float f;
  asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(scales[n]));
  return f;
}
#define SCALE(n) column_scale(scales, n)
#else
#define SCALE(n) 1.f
#endif

extern "C" __global__ void KERNEL_CLUSTER __launch_bounds__(THREADS)
    gemm(const u16* __restrict__ A, const u16* __restrict__ B, u16* __restrict__ C, float* __restrict__ ws,
         int* __restrict__ locks, int M, int N, int K
#if W8
         , const u16* __restrict__ scales
#endif
    ) {
  extern __shared__ __align__(16) u16 smem[];
  u16* As = smem;
  u16* Bs = smem + STAGES * A_STAGE;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;

  // Rasterization: groups of SWIZZLE tile rows walk N together, so blocks running at the same
  // time share B columns in L2.
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x;
  const int group = SWIZZLE * tiles_n;
  const int first_m = (pid / group) * SWIZZLE;
  const int group_m = min(tiles_m - first_m, SWIZZLE);
  const int tile_m = first_m + (pid % group) % group_m;
  const int tile_n = (pid % group) / group_m;
  const int m0 = tile_m * BM, n0 = tile_n * BN;

  // This block's K slice.
  const int k_tiles = (K + BK - 1) / BK;
  const int per_split = (k_tiles + SPLITK - 1) / SPLITK;
  const int kt_begin = blockIdx.y * per_split;
  const int kt_count = max(0, min(k_tiles, kt_begin + per_split) - kt_begin);

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < kt_count) load_tile(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, m0, n0, (kt_begin + s) * BK, tid);
    cp_async_commit();
  }

  for (int t = 0; t < kt_count; ++t) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      const int next = t + STAGES - 1;
      const int s = next % STAGES;
      if (next < kt_count) load_tile(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, m0, n0, (kt_begin + next) * BK, tid);
      cp_async_commit();
    }
    const u16* as = As + (t % STAGES) * A_STAGE;
    const u16* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      u32 af[MI][4], bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const int r = warp_m * WM + i * 16 + (lane & 15);
        const int c = kk + (lane >> 4) * 8;
        ldmatrix_x4(af[i], smem_addr(as + r * AS_STRIDE + c));
      }
#if W8
      // Weights are N x K in shared memory: the "col" B fragment is two adjacent bytes.
      const unsigned char* ws8 = (const unsigned char*)bs;
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const unsigned char* p = ws8 + (warp_n * WN + j * 8 + (lane >> 2)) * BS8_STRIDE + kk + (lane & 3) * 2;
        bf[j][0] = i8x2_to_f16x2(*(const unsigned short*)p);
        bf[j][1] = i8x2_to_f16x2(*(const unsigned short*)(p + 8));
      }
#else
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        const int q = lane >> 3;
        const int r = kk + (q & 1) * 8 + (lane & 7);
        const int c = warp_n * WN + j * 8 + (q >> 1) * 8;
        u32 t4[4];
        ldmatrix_x4_trans(t4, smem_addr(bs + r * BS_STRIDE + c));
        bf[j][0] = t4[0];
        bf[j][1] = t4[1];
        bf[j + 1][0] = t4[2];
        bf[j + 1][1] = t4[3];
      }
#endif
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
  cp_async_wait<0>();

  const int row_in = lane >> 2, col_in = (lane & 3) * 2;
#if CLUSTER_REDUCE
  // Each slice leaves its f32 partial in its own shared memory; after a cluster barrier, slice r
  // sums rows [r*BM/SPLITK, (r+1)*BM/SPLITK) of every slice's partial (in slice order) and
  // writes them; a second barrier keeps each partial alive until all have been read.
  __syncthreads();
  float* red = (float*)smem;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp_m * WM + i * 16 + row_in + h * 8;
        const int c = warp_n * WN + j * 8 + col_in;
        *(float2*)(red + r * RED_STRIDE + c) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      }
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    constexpr int CHUNKS = BM * BN / 4, PER_SLICE = CHUNKS / SPLITK;
    const u32 base = smem_addr(red);
    for (int q = rank * PER_SLICE + tid; q < (int)(rank + 1) * PER_SLICE; q += THREADS) {
      const int r = q / (BN / 4), c = (q % (BN / 4)) * 4;
      const int m = m0 + r, n = n0 + c;
      if (m >= M || n >= N) continue;
      const u32 off = (u32)(r * RED_STRIDE + c) * 4;
      float x = 0.f, y = 0.f, z = 0.f, w = 0.f;
#pragma unroll
      for (int s = 0; s < SPLITK; ++s) {
        u32 remote;
        float a, b, cc, d;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(base + off), "r"(s));
        asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(a), "=f"(b), "=f"(cc), "=f"(d) : "r"(remote));
        x += a;
        y += b;
        z += cc;
        w += d;
      }
#if W8
      x *= SCALE(n);
      if (n + 1 < N) y *= SCALE(n + 1);
      if (n + 2 < N) z *= SCALE(n + 2);
      if (n + 3 < N) w *= SCALE(n + 3);
#endif
      u16* out = C + (long long)m * N + n;
      if (n + 3 < N && (N & 3) == 0) {
        *(uint2*)out = make_uint2(pack2(x, y), pack2(z, w));
      } else {
        const u32 lo = pack2(x, y), hi = pack2(z, w);
        out[0] = (u16)lo;
        if (n + 1 < N) out[1] = (u16)(lo >> 16);
        if (n + 2 < N) out[2] = (u16)hi;
        if (n + 3 < N) out[3] = (u16)(hi >> 16);
      }
    }
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#elif SPLITK > 1
  // Every slice writes its f32 partial; the last slice of the tile to finish sums them in slice
  // order (deterministic) and writes C. The counter is reset for the next launch.
  float* part = ws + (long long)blockIdx.y * M * N;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + warp_m * WM + i * 16 + row_in + h * 8;
        const int n = n0 + warp_n * WN + j * 8 + col_in;
        if (m < M && n < N) *(float2*)(part + (long long)m * N + n) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      }
  __threadfence();
  __syncthreads();
  __shared__ int is_last;
  if (tid == 0) {
    const int lock = tile_m * tiles_n + tile_n;
    is_last = atomicAdd(&locks[lock], 1) == SPLITK - 1;
    if (is_last) locks[lock] = 0;
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + warp_m * WM + i * 16 + row_in + h * 8;
        const int n = n0 + warp_n * WN + j * 8 + col_in;
        if (m >= M || n >= N) continue;
        float x = 0.f, y = 0.f;
        for (int z = 0; z < SPLITK; ++z) {
          float2 p;
          if (z == (int)blockIdx.y) p = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
          else p = __ldcg((const float2*)(ws + (long long)z * M * N + (long long)m * N + n));
          x += p.x;
          y += p.y;
        }
        *(u32*)(C + (long long)m * N + n) = pack2(x * SCALE(n), y * SCALE(n + 1));
      }
#else
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + warp_m * WM + i * 16 + row_in + h * 8;
        const int n = n0 + warp_n * WN + j * 8 + col_in;
        if (m < M && n < N) *(u32*)(C + (long long)m * N + n) = pack2(acc[i][j][2 * h] * SCALE(n), acc[i][j][2 * h + 1] * SCALE(n + 1));
      }
#endif
}
