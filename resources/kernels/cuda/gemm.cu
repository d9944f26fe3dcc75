// ktune gemm: C[M,N] = A[M,K] * B[K,N], row-major, f16 or bf16 storage, f32 accumulation.
// Two kernels, picked by WGMMA: `gemm` (any NVIDIA tensor-core GPU) multiplies with mma.sync
// m16n8k16, operands staged in shared memory by a cp.async pipeline STAGES deep, fragments
// loaded with ldmatrix; `gemm_wgmma` (Hopper) is described above it. Every tunable is a -D
// define set by the spec (gemm.json):
//   BM, BN, BK   block tile          WM, WN   warp tile (the block has (BM/WM)*(BN/WN) warps)
//   STAGES       cp.async depth      SPLITK   K slices per tile, reduced in-kernel by the last
//   SWIZZLE      tile rows per rasterization group (L2 reuse of B across neighbouring blocks)
//   VEC          elements per cp.async (8: 16 bytes; 4 and 2 serve K or N not a multiple of 8)
//   KT_BF16      1 for bf16 storage
//   WGMMA        1 for the Hopper kernel (TMA + wgmma; WM = 64 rows per consumer, WN = BN)
//   SWAP_AB      1 (with WGMMA, for skinny M): computes C^T = B^T A^T, so the weights fill
//                wgmma's 64-row side and the BM activation rows its narrow N side
//   PERSISTENT   1 (with WGMMA, unswapped, no split-K): at most one block per SM (the spec's
//                grid), each taking tiles in turn, the ring filling with its next tile while
//                the consumers store the last
//   W8           1 for w8a16 (the qmatmul family): B is int8 weights stored N x K (out x in), with
//                one f16 scale per output column applied to the f32 sum; A and C stay f16. The
//                weights are widened to f16 in registers (mma.sync's B fragments, or with WGMMA
//                the swapped kernel's register A fragments)
// Compiled by NVRTC: no toolkit headers, so half/bf16 values are raw 16-bit words; the copies,
// ldmatrix, conversions and MMAs they share with the other kernels are ktune_device.cuh's.
#ifndef KT_BF16
#define KT_BF16 0
#endif
#ifndef W8
#define W8 0
#endif
#ifndef WGMMA
#define WGMMA 0
#endif
#ifndef SWAP_AB
#define SWAP_AB 0
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif

#include "ktune_device.cuh"
#if WGMMA
#include "ktune_hopper.cuh"
#endif

using Elem = Float16<KT_BF16>;

#define PAD 8  // halves added to every shared row: ldmatrix rows land on distinct banks
#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#if WGMMA
// A producer warpgroup and one consumer per 64 rows of the MMA's M side: rows of A, or when
// swapped, of the weights (columns of C).
#define CONSUMERS (SWAP_AB ? BN / 64 : BM / 64)
#define THREADS ((CONSUMERS + 1) * 128)
// Two unswapped consumers hold up to 128 accumulators per thread in 65536 / 384 = 168 registers
// each: the producer keeps 40 and hands the rest over (setmaxnreg), 232 each, exactly what it
// frees (asking for more waits forever). Only without split-K, whose reduction needs the
// producer's threads back. One consumer has 255 registers anyway, and swapped tiles hold at
// most 64 accumulators.
#define SHIFT_REGS (SPLITK == 1 && !SWAP_AB && CONSUMERS > 1)
#else
#define THREADS (WARPS_M * WARPS_N * 32)
#endif
#define MI (WM / 16)
#define NI (WN / 8)
#define AS_STRIDE (BK + PAD)
#define BS_STRIDE (BN + PAD)
#define A_STAGE (BM * AS_STRIDE)
#if W8
#define BS8_STRIDE (BK + 16)           // bytes per weight row (N x K int8), padded like A
#define B_STAGE (BN * BS8_STRIDE / 2)  // in 16-bit units, so stages index like A's
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

// One K tile of A (BM x BK) and B (BK x BN) into stage `s`.
__device__ __forceinline__ void load_tile(u16* As, u16* Bs, const u16* A, const u16* B, int M, int N, int K, int m0,
                                          int n0, int k0, int tid) {
  constexpr int A_CHUNKS = BM * BK / VEC, A_PER_ROW = BK / VEC;
#pragma unroll
  for (int c = tid; c < A_CHUNKS; c += THREADS) {
    const int r = c / A_PER_ROW, col = (c % A_PER_ROW) * VEC;
    const int gm = m0 + r, gk = k0 + col;
    const bool ok = gm < M && gk < K;
    cp_async<VEC * 2>(smem_addr(As + r * AS_STRIDE + col), ok ? A + (long long)gm * K + gk : A, ok);
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
    cp_async16(smem_addr(Ws + r * BS8_STRIDE + col), ok ? W + (long long)gn * K + gk : W, ok);
  }
#else
  constexpr int B_CHUNKS = BK * BN / VEC, B_PER_ROW = BN / VEC;
#pragma unroll
  for (int c = tid; c < B_CHUNKS; c += THREADS) {
    const int r = c / B_PER_ROW, col = (c % B_PER_ROW) * VEC;
    const int gk = k0 + r, gn = n0 + col;
    const bool ok = gk < K && gn < N;
    cp_async<VEC * 2>(smem_addr(Bs + r * BS_STRIDE + col), ok ? B + (long long)gk * N + gn : B, ok);
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
#define SCALE(n) Float16<false>::to_f32(scales[n])  // f16 whatever the activations' type
// The per-column scales: the last parameter of the w8a16 kernels, a null pointer otherwise.
#define SCALES_PARAM , const u16* __restrict__ scales
#define SCALES_NONE
#else
#define SCALE(n) 1.f
#define SCALES_PARAM
#define SCALES_NONE const u16* scales = nullptr;
#endif

// This block's output tile and K slice. Rasterization: groups of SWIZZLE tile rows walk N
// together, so blocks running at the same time share B columns in L2.
struct Tile {
  int m0, n0, tile, kt_begin, kt_count;
};
__device__ __forceinline__ Tile block_tile(int M, int N, int K, int pid = blockIdx.x) {
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int group = SWIZZLE * tiles_n;
  const int first_m = (pid / group) * SWIZZLE;
  const int group_m = min(tiles_m - first_m, SWIZZLE);
  const int tile_m = first_m + (pid % group) % group_m;
  const int tile_n = (pid % group) / group_m;
  const int k_tiles = (K + BK - 1) / BK;
  const int per_split = (k_tiles + SPLITK - 1) / SPLITK;
  const int kt_begin = blockIdx.y * per_split;
  return {tile_m * BM, tile_n * BN, tile_m * tiles_n + tile_n, kt_begin,
          max(0, min(k_tiles, kt_begin + per_split) - kt_begin)};
}

// Writes the tile of C from the f32 accumulators, summing the SPLITK slices of the tile first.
// `visit(f)` calls f(r, c, x, y) for each pair of adjacent accumulators the thread holds (r, c:
// row and even column in the tile), so both kernels share this whatever their fragment layout.
// Every thread of the block calls it when SPLITK > 1 (the reductions synchronize the block).
template <class Visit>
__device__ __forceinline__ void epilogue(const Visit& visit, void* smem, u16* __restrict__ C, float* __restrict__ ws,
                                         int* __restrict__ locks, const Tile& t, int M, int N,
                                         const u16* __restrict__ scales) {
#if CLUSTER_REDUCE
  const int tid = threadIdx.x;
  // Each slice leaves its f32 partial in its own shared memory; after a cluster barrier, slice r
  // sums rows [r*BM/SPLITK, (r+1)*BM/SPLITK) of every slice's partial (in slice order) and
  // writes them; a second barrier keeps each partial alive until all have been read.
  __syncthreads();
  float* red = (float*)smem;
  visit([&](int r, int c, float x, float y) { *(float2*)(red + r * RED_STRIDE + c) = make_float2(x, y); });
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    constexpr int CHUNKS = BM * BN / 4, PER_SLICE = CHUNKS / SPLITK;
    const u32 base = smem_addr(red);
    for (int q = rank * PER_SLICE + tid; q < (int)(rank + 1) * PER_SLICE; q += THREADS) {
      const int r = q / (BN / 4), c = (q % (BN / 4)) * 4;
      const int m = t.m0 + r, n = t.n0 + c;
      if (m >= M || n >= N) continue;
      const u32 off = (u32)(r * RED_STRIDE + c) * 4;
      float x = 0.f, y = 0.f, z = 0.f, w = 0.f;
#pragma unroll
      for (int s = 0; s < SPLITK; ++s) {
        u32 remote;
        float a, b, cc, d;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(base + off), "r"(s));
        asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=f"(a), "=f"(b), "=f"(cc), "=f"(d)
                     : "r"(remote));
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
        *(uint2*)out = make_uint2(Elem::pack2(x, y), Elem::pack2(z, w));
      } else {
        const u32 lo = Elem::pack2(x, y), hi = Elem::pack2(z, w);
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
  visit([&](int r, int c, float x, float y) {
    const int m = t.m0 + r, n = t.n0 + c;
    if (m < M && n < N) *(float2*)(part + (long long)m * N + n) = make_float2(x, y);
  });
  __threadfence();
  __syncthreads();
  __shared__ int is_last;
  if (threadIdx.x == 0) {
    is_last = atomicAdd(&locks[t.tile], 1) == SPLITK - 1;
    if (is_last) locks[t.tile] = 0;
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  visit([&](int r, int c, float mx, float my) {
    const int m = t.m0 + r, n = t.n0 + c;
    if (m >= M || n >= N) return;
    float x = 0.f, y = 0.f;
#pragma unroll 1  // unrolled into every visited pair this loop only costs compile time
    for (int z = 0; z < SPLITK; ++z) {
      float2 p;
      if (z == (int)blockIdx.y)
        p = make_float2(mx, my);
      else
        p = __ldcg((const float2*)(ws + (long long)z * M * N + (long long)m * N + n));
      x += p.x;
      y += p.y;
    }
    *(u32*)(C + (long long)m * N + n) = Elem::pack2(x * SCALE(n), y * SCALE(n + 1));
  });
#else
  visit([&](int r, int c, float x, float y) {
    const int m = t.m0 + r, n = t.n0 + c;
    if (m < M && n < N) *(u32*)(C + (long long)m * N + n) = Elem::pack2(x * SCALE(n), y * SCALE(n + 1));
  });
#endif
}

#if !WGMMA
extern "C" __global__ void KERNEL_CLUSTER __launch_bounds__(THREADS)
    gemm(const u16* __restrict__ A, const u16* __restrict__ B, u16* __restrict__ C, float* __restrict__ ws,
         int* __restrict__ locks, int M, int N, int K SCALES_PARAM) {
  SCALES_NONE
  extern __shared__ __align__(16) u16 smem[];
  u16* As = smem;
  u16* Bs = smem + STAGES * A_STAGE;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const Tile t = block_tile(M, N, K);
  const int m0 = t.m0, n0 = t.n0, kt_begin = t.kt_begin, kt_count = t.kt_count;

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

  for (int kt = 0; kt < kt_count; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      const int next = kt + STAGES - 1;
      const int s = next % STAGES;
      if (next < kt_count)
        load_tile(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, m0, n0, (kt_begin + next) * BK, tid);
      cp_async_commit();
    }
    const u16* as = As + (kt % STAGES) * A_STAGE;
    const u16* bs = Bs + (kt % STAGES) * B_STAGE;
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
        for (int j = 0; j < NI; ++j) Elem::mma(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
  cp_async_wait<0>();

  const int row_in = lane >> 2, col_in = (lane & 3) * 2;
  epilogue(
      [&](auto&& f) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
              f(warp_m * WM + i * 16 + row_in + h * 8, warp_n * WN + j * 8 + col_in, acc[i][j][2 * h],
                acc[i][j][2 * h + 1]);
      },
      smem, C, ws, locks, t, M, N, scales);
}
#else
// ---------------------------------------------------------------------------------------------
// Hopper (sm_90a): warpgroup MMA fed by the Tensor Memory Accelerator. Warpgroup 0 is the
// producer: one thread issues TMA copies of each K tile into a ring of STAGES buffers, each
// guarded by a "full" mbarrier (the copy landed) and an "empty" one (every consumer is done
// with it). Warpgroups 1..BM/64 are consumers: each owns 64 rows of the tile and multiplies
// them by all BN columns with wgmma.m64nBNk16, reading both operands straight from shared
// memory. Swapped, the consumers are 1..BN/64: each owns 64 weight rows (columns of C) and
// multiplies them by all BM activation rows with wgmma.m64nBMk16. Tiles are 128-byte swizzled (what TMA writes and
// wgmma reads, free of bank conflicts); B is row-major K x N, i.e. "MN-major" for wgmma, which transposes it in flight.
// TMA zero-fills rows and columns past M, N and K, so only the stores check bounds. The ring,
// the wgmma wrappers and the register hand-over are ktune_hopper.cuh's.
static_assert(BK == 64 && WN == BN, "wgmma tiles: BK = 64 (one swizzle atom), a consumer spans BN");
static_assert(SWAP_AB ? BM % 16 == 0 && (BM <= 64 || (W8 && BM == 128)) : WM == 64 && BM % 64 == 0,
              "64 rows per consumer; swapped, BM is wgmma's N (up to 128 tokens for w8a16 batches)");
static_assert(!W8 || SWAP_AB, "w8a16 on wgmma is the swapped kernel");
#define A_BYTES (BM * 128)  // a stage of A: BM rows of 64 elements
#define B_BOX_BYTES 8192    // 64 rows of 64 16-bit elements
#if W8
// w8a16: a stage of W is BN rows (output features) of 64 int8 weights, 64-byte swizzled by TMA.
// Each consumer warp reads its rows' weights as wgmma's register A fragments, widening them to
// f16 on the way: the weights never pass through shared memory as f16.
#define B_BYTES (BN * 64)
#else
#define B_BYTES (BN * 128)  // a stage of B: BN/64 boxes of 64 K-rows x 64 columns
#endif

#if W8
// The register A fragment of 16 weight rows x 16 k (a warp's share of a 64-row box) for one k16
// step, widened to f16x2: rows g and g+8, k pairs 2t and 2t+8 (g = lane/4, t = lane%4), as in
// mma.sync's m16n8k16. The tile is 64-byte rows, 64-byte swizzled: 16-byte chunk c of row r sits
// at chunk c ^ ((r/2) % 4), which spreads the eight rows a load touches over distinct banks.
__device__ __forceinline__ void weight_fragment(u32 (&a)[4], const unsigned char* w, int row, int k) {
  const auto at = [&](int r, int kk) {
    return (u32) * (const unsigned short*)(w + r * 64 + ((((kk >> 4) ^ (r >> 1)) & 3) << 4) + (kk & 15));
  };
  a[0] = i8x2_to_f16x2(at(row, k));
  a[1] = i8x2_to_f16x2(at(row + 8, k));
  a[2] = i8x2_to_f16x2(at(row, k + 8));
  a[3] = i8x2_to_f16x2(at(row + 8, k + 8));
}
#endif

extern "C" __global__ void KERNEL_CLUSTER __launch_bounds__(THREADS, 1)
    gemm_wgmma(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB, u16* __restrict__ C,
               float* __restrict__ ws, int* __restrict__ locks, int M, int N, int K SCALES_PARAM) {
  SCALES_NONE
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Swizzled tiles need 1024-byte alignment (the spec asks for 1 KiB of slack).
  const u32 raw = smem_addr(smem_raw);
  const u32 base = (raw + 1023) & ~1023u;
  unsigned char* smem = smem_raw + (base - raw);
  const u32 sA = base, sB = base + STAGES * A_BYTES;
  const TmaRing<STAGES> ring{sB + STAGES * B_BYTES};
  const int tid = threadIdx.x, wg = tid / 128;
  if (tid == 0) {
    // Fetch the descriptors while the barriers are set up, not on the first copy's critical path.
    prefetch_tensormap(&tmA);
    prefetch_tensormap(&tmB);
    ring.init(CONSUMERS);
  }
  __syncthreads();
#if SHIFT_REGS
  if (wg == 0)
    producer_regs();
  else
    take_regs<consumer_regs(THREADS, CONSUMERS)>();
#endif

  // One tile a block, or with PERSISTENT (a grid of at most one block per SM) tiles blockIdx.x,
  // + gridDim.x, ...: the ring's count g runs on over them, so the producer fills it with the
  // next tile while the consumers store the last.
  const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  for (int pid = blockIdx.x, g = 0; pid < tiles; pid += PERSISTENT ? gridDim.x : tiles) {
    const Tile t = block_tile(M, N, K, pid);
    // This consumer's 64 rows of D: rows of C, or swapped (D = C^T) 64 columns of C by BM rows.
    float acc[SWAP_AB ? BM / 2 : BN / 2];
#pragma unroll
    for (int i = 0; i < (int)(sizeof(acc) / sizeof(float)); ++i) acc[i] = 0.f;

    if (wg == 0) {
      if (tid == 0)
        for (int i = 0; i < t.kt_count; ++i) {
          const int s = ring.acquire(g + i, A_BYTES + B_BYTES), k0 = (t.kt_begin + i) * BK;
          tma_load(sA + s * A_BYTES, &tmA, k0, t.m0, ring.full(s));
#if W8
          tma_load(sB + s * B_BYTES, &tmB, k0, t.n0, ring.full(s));
#else
#pragma unroll
          for (int j = 0; j < BN / 64; ++j)
            tma_load(sB + s * B_BYTES + j * B_BOX_BYTES, &tmB, t.n0 + j * 64, k0, ring.full(s));
#endif
        }
#if SPLITK == 1
      g += t.kt_count;
      continue;  // no reduction to take part in
#endif
    } else {
#if SWAP_AB
      const u32 a_rows = sA;  // every consumer multiplies all BM activation rows by its 64 weight rows
#else
      const u32 a_rows = sA + (wg - 1) * 64 * 128;
#endif
      // The wgmma group of the ring's tile i, whose stage has landed (W8: weights from `frag`).
      const auto multiply = [&](int i, [[maybe_unused]] const u32(*frag)[4]) {
        const int s = i % STAGES;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
          // A: K-major, 8-row groups 1 KiB apart, +32 bytes per k16 step inside the swizzle atom.
          // B: MN-major, 64-column boxes B_BOX_BYTES apart, +16 rows (2 KiB) per k16 step.
          const unsigned long long da = smem_desc(a_rows + s * A_BYTES + kk * 32, 16, 1024);
#if W8
          wgmma<false, 0>(acc, frag[kk], da);
#elif SWAP_AB
          // This consumer's 64-column box of B, transposed, is the A operand; the activations are B.
          wgmma<KT_BF16, 1, 0>(acc, smem_desc(sB + s * B_BYTES + (wg - 1) * B_BOX_BYTES + kk * 2048, B_BOX_BYTES, 1024),
                               da);
#else
          wgmma<KT_BF16, 0, 1>(acc, da, smem_desc(sB + s * B_BYTES + kk * 2048, B_BOX_BYTES, 1024));
#endif
        }
        wgmma_commit();
      };
#if W8
      // The weights reach wgmma through registers: each consumer thread widens its share of a
      // tile's weights into `frag` registers, which the group then reads.
      const int lane = tid & 31, row = (wg - 1) * 64 + ((tid & 127) >> 5) * 16 + (lane >> 2);
      const auto load = [&](u32(&f)[BK / 16][4], int i) {
        ring.wait_full(i);
        const unsigned char* w = smem + (sB - base) + (i % STAGES) * B_BYTES;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) weight_fragment(f[kk], w, row, kk * 16 + (lane & 3) * 2);
      };
#if BM >= 64
      // 64 or more tokens: the MMAs are the bottleneck, so the next tile is widened into a second
      // set while one group stays in flight (unrolled by two, so each set keeps fixed registers;
      // `keep` holds a set live until its group is done, or the compiler could reuse its
      // registers meanwhile). At batch 16 that holds each stage a tile longer and costs 10-20 %
      // (bench/cuda/RESULTS.md, 1b): the ring's depth is what counts there.
      u32 fa[BK / 16][4], fb[BK / 16][4];
      const auto keep = [](u32(&f)[BK / 16][4]) {
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
          for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(f[kk][e])::"memory");
      };
      const auto step = [&](int i, u32(&cur)[BK / 16][4], u32(&other)[BK / 16][4]) {
        multiply(i, cur);
        // Group i - 1, which read `other`, is done: its stage goes back, its set is free.
        wgmma_wait<1>();
        keep(other);
        if (i > 0 && tid % 128 == 0) mbar_arrive(ring.empty((i - 1) % STAGES));
        if (i + 1 < t.kt_count) load(other, i + 1);
      };
      if (t.kt_count > 0) load(fa, 0);
      for (int i = 0; i < t.kt_count; i += 2) {
        step(i, fa, fb);
        if (i + 1 < t.kt_count) step(i + 1, fb, fa);
      }
      wgmma_wait<0>();
      keep(fa);
      keep(fb);
#else
      // Decode batches: each group finishes before the next tile is widened into the same
      // registers, and its stage goes back to the producer at once.
      for (int i = 0; i < t.kt_count; ++i) {
        u32 frag[BK / 16][4];
        load(frag, i);
        multiply(i, frag);
        wgmma_wait<0>();
        if (tid % 128 == 0) mbar_arrive(ring.empty(i % STAGES));
      }
#endif
#else
      ring.consume(
          t.kt_count, tid % 128 == 0, [&](int i) { multiply(i, nullptr); }, g);
#endif
    }
    g += t.kt_count;

#if !SWAP_AB && !W8 && SPLITK == 1
    // 16 bytes a store where rows are whole 8-column groups (a quarter of the pairs' stores).
    if (N % 8 == 0) {
      const int row0 = t.m0 + (wg - 1) * 64;
      wgmma_rows16<KT_BF16>(acc, [&](int r, int c, uint4 words) {
        if (row0 + r < M && t.n0 + c < N) *reinterpret_cast<uint4*>(C + (long long)(row0 + r) * N + t.n0 + c) = words;
      });
      continue;
    }
#endif
#if SWAP_AB
    const int warp = (tid % 128) / 32, lane = tid % 32;
#endif
    epilogue(
        [&](auto&& f) {
          if (wg == 0) return;
#if SWAP_AB
          // A thread holds D^T[n][m], D^T[n][m+1]: two rows of C. Lanes a row of D^T apart (lane
          // ^ 4) trade one value, so each ends up with two adjacent columns of one row of C.
          const bool even = ((lane >> 2) & 1) == 0;
#pragma unroll
          for (int q = 0; q < BM / 8; ++q)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const float x = acc[4 * q + 2 * h], y = acc[4 * q + 2 * h + 1];
              const float other = __shfl_xor_sync(0xffffffffu, even ? y : x, 4);
              const int n = (wg - 1) * 64 + warp * 16 + (lane >> 2) + 8 * h, m = q * 8 + (lane & 3) * 2;
              if (even)
                f(m, n, x, other);
              else
                f(m + 1, n - 1, other, y);
            }
#else
          wgmma_pairs(acc, [&](int r, int c, float x, float y) { f((wg - 1) * 64 + r, c, x, y); });
#endif
        },
        smem, C, ws, locks, t, M, N, scales);
  }
}
#endif
