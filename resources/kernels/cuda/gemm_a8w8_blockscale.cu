// ktune gemm_a8w8_blockscale: aiter's block-scaled 8-bit GEMM (DeepSeek-V3's scales), fp8 e4m3
// codes on Hopper or int8 codes on sm_80 and later, with f32 block scales
// (gemm_a8w8_blockscale.json; the CPU family's tensors):
//   A [M, K] and W [N, K] 8-bit codes, a_scale [M, K/128] (one per 1x128 block of A),
//   b_scale [ceil(N/128), K/128] (one per 128x128 block of W), Y [M, N] bf16 or f32:
//   Y[m, n] = sum over kb of (A[m, kb-block] . W[n, kb-block]) * a_scale[m, kb] * b_scale[n/128, kb]
//
// gemm.cu's Hopper kernel with 8-bit operands: warpgroup 0 is the producer (one thread issues the
// TMA copies of each 128-deep K block of A and W into a ring of num_stages buffers,
// ktune_hopper.cuh, and a second warp copies the block's scales beside them), warpgroups
// 1..BLOCK_M/64 are consumers, each multiplying its 64 rows of A by the tile's BLOCK_N columns of
// W with wgmma.m64nNk32 (N = BLOCK_N, or 128 twice for 256) straight from shared memory. A K block (128 elements =
// 128 bytes, one swizzle atom) is one scale block: its four k32 steps accumulate into a temporary, PROMOTE_K deep at a
// time (128: DeepGEMM's four steps; 32: every step, as Triton's max_num_imprecise_acc=0), which is multiplied by the
// two scales and added to the f32 accumulators in registers, since Hopper accumulates fp8 products in reduced
// precision: the longer the run, the larger the error. A 256-column tile is two 128-column chunks, one after the
// other (a 128-float temporary would not fit in registers next to 128 accumulators). Each 8 columns take their weight
// scale block's scale: a 192-column tile (N = 2112 is 11 of them, 24576 is 128: whole tiles, one wave) spans two
// scale blocks. OVERLAP 1 keeps two temporaries and issues the next run before scaling the last, so the tensor cores
// never wait for the scaling (k_loop).
// TMA zero-fills rows past M and N; K is a multiple of 128 (a shape rule), so no K tail. SPLITK > 1 (tiles that do not
// fill the GPU): each K slice of a tile is a work item that sums its K blocks into f32 partials of its own, and a
// second launch adds the slices into Y. PERSISTENT 1 launches at most one block per SM, each taking items in turn, so
// that the ring fills with a block's next tile while its consumers store the last (the spec's grid). PERSISTENT 2
// (tiles a little past whole waves: 4.1 waves of 128 x 128 at 4096 x 2112) is PERSISTENT 1 for the whole waves' tiles
// and SPLITK K slices of each tile of the last, partial wave, so that it takes 1/SPLITK of a tile's time where it took
// a whole one while most SMs idled (CUTLASS's data-parallel + split-K hybrid): the slices meet in the workspace, and
// each adds its share of them into Y (tail_reduce), with no second launch. CLUSTER 2 pairs persistent
// blocks on tiles one above the other, W's tile multicast into both (the kernel's comment).
//
// int8 codes (KT_INT8 1) go to gemm_a8w8_blockscale_int8.cuh's kernel instead: mma.sync with
// exact int32 sums a K block, fed by a cp.async ring; it shares the split-K reduction and the
// reference below.
#ifndef KT_INT8
#define KT_INT8 0  // 1: int8 codes (mma.sync, sm_80+); 0: fp8 e4m3 (wgmma, sm_90a)
#endif
#ifndef KT_OUT_F32
#define KT_OUT_F32 0  // 1: Y is f32; 0: bf16, rounded to nearest even
#endif
#ifndef REFERENCE
#define REFERENCE 0  // 1: the reference's build, which reads no tunable
#endif
#ifndef CLUSTER
#define CLUSTER 1  // 2 (PERSISTENT, fp8): clusters of two blocks on tiles one above the other, W multicast
#endif

#include "ktune_device.cuh"
#if !REFERENCE && !KT_INT8
#include "ktune_hopper.cuh"
#endif

#define SCALE_BLOCK 128

#if KT_OUT_F32
typedef float Out;
#else
typedef u16 Out;
#endif
// An f32 result as an element of Y (bf16: rounded to nearest even) or of the split-K partials (f32).
template <class T>
__device__ __forceinline__ T convert(float x) {
  return x;
}
template <>
__device__ __forceinline__ u16 convert<u16>(float x) {
  return Float16<1>::from_f32(x);
}
// Two adjacent outputs of row m (an MMA fragment's pair), those inside Y.
template <class T>
__device__ __forceinline__ void store_pair(T* __restrict__ y, int M, int N, int m, int n, float x0, float x1) {
  if (m >= M || n >= N) return;
  T* p = y + (long)m * N + n;
  // n is even: with N even the pair is one aligned store (half the store instructions).
  if (N % 2 == 0) {
    if constexpr (sizeof(T) == 2)
      *reinterpret_cast<u32*>(p) = Float16<1>::pack2(x0, x1);
    else
      *reinterpret_cast<float2*>(p) = make_float2(x0, x1);
    return;
  }
  p[0] = convert<T>(x0);
  if (n + 1 < N) p[1] = convert<T>(x1);
}

#if !REFERENCE && !KT_INT8
#define BM BLOCK_M
#define BN BLOCK_N
#define STAGES num_stages
#define CONSUMERS (BM / 64)
#define THREADS ((CONSUMERS + 1) * 128)
#define CN (BN == 256 ? 128 : BN)  // columns of one wgmma chunk
#define NB ((BN + 127) / 128)      // weight scale blocks a tile spans (n0: a multiple of 128, or of 64 for BN 64, 192)
#define A_BYTES (BM * 128)        // a stage of A: BM rows of 128 codes
#define B_BYTES (BN * 128)        // of W: BN rows of 128 codes
#define RUNS (128 / PROMOTE_K)    // promotion runs a chunk of a K block
#define UNITS ((BN / CN) * RUNS)  // runs a K block: the unit that is issued, waited for and promoted
static_assert(STAGES >= 2, "the ring needs two stages");
static_assert(BM == 64 || BM == 128, "64 rows per consumer warpgroup, one or two of them");
static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma's N: 64 to 192, or 256 as two chunks of 128");
static_assert(SPLITK >= 1, "K slices");
static_assert(PROMOTE_K == 32 || PROMOTE_K == 64 || PROMOTE_K == 128, "whole k32 steps of one scale block");
static_assert(OVERLAP == 0 || BN <= 128, "two partial sums of 64 floats beside 128 accumulators exceed 232 registers");
static_assert(PERSISTENT != 2 || SPLITK > 1, "the last wave's tiles are split SPLITK ways");
static_assert(CLUSTER == 1 || (CLUSTER == 2 && PERSISTENT), "clusters of two persistent blocks");
#define TILE_M (BM * CLUSTER)  // rows of a cluster's tile: its blocks' tiles one above the other
// Tiles of a cluster (of one block, without clusters): the unit of work.
#define TILES(M, N) (((M) + TILE_M - 1) / TILE_M * (((N) + BN - 1) / BN))
#define CLUSTERS (gridDim.x / CLUSTER)

// The tiles a PERSISTENT 2 grid (one block an SM) takes whole: the whole waves'. Or all of them
// where the last wave's slices would outnumber the blocks: tail_reduce waits until a tile's slices
// have all arrived, so they must be resident together. The spec's constraints keep tuned shapes
// clear of that; this keeps a config used at another shape (a registry's nearest bucket) from
// hanging there.
__device__ __forceinline__ int whole_tiles(int tiles) {
  if (PERSISTENT != 2) return 0;
  const int tail = tiles % CLUSTERS;
  return tail * SPLITK <= CLUSTERS ? tiles - tail : tiles;
}

// Work items: PERSISTENT 0 and 1 have SPLITK of each tile (one, without split-K); PERSISTENT 2
// the whole waves' tiles, then SPLITK of each of the last wave's. A cluster's blocks take the
// same items, each its rows of the tile.
__device__ __forceinline__ int item_count(int M, int N) {
  const int tiles = TILES(M, N), whole = whole_tiles(tiles);
  return whole + (tiles - whole) * SPLITK;
}

// The work of a block: tile t (M fastest: blocks running together share columns of W, read from
// DRAM once), K blocks [kb0, kb0 + kbs) of it; `split` items sum K slice `slice` into f32
// partials (a slice past K's end sums nothing). Item w is tile w % tiles, slice w / tiles; with
// PERSISTENT 2, tile w of the whole waves', then the same for the last wave's tiles. Block
// `rank` of a cluster takes the tile's rows from m0 (past M in a last tile: loaded as TMA's
// zeros, multiplied, not stored).
struct Item {
  int tile, m0, n0, slice, kb0, kbs;
  int tail;  // PERSISTENT 2: how many tiles the last wave has (tile - (tiles - tail): a split one's index)
  int rank;  // of the block in its cluster
  bool split;
};
__device__ __forceinline__ Item work_item(int w, int M, int N, int kb_count, int rank) {
  const int tiles_m = (M + TILE_M - 1) / TILE_M, tiles = TILES(M, N), whole = whole_tiles(tiles);
  Item it;
  it.rank = rank;
  it.tail = tiles - whole;
  if (w < whole) {
    it.tile = w;
    it.slice = 0;
  } else {
    it.tile = whole + (w - whole) % (tiles - whole);
    it.slice = (w - whole) / (tiles - whole);
  }
  it.split = SPLITK > 1 && (PERSISTENT != 2 || w >= whole);
  it.m0 = (it.tile % tiles_m) * TILE_M + rank * BM;
  it.n0 = (it.tile / tiles_m) * BN;
  const int per_slice = it.split ? (kb_count + SPLITK - 1) / SPLITK : kb_count;
  it.kb0 = it.slice * per_slice;
  it.kbs = max(0, min(kb_count - it.kb0, per_slice));
  return it;
}

// Issues run `unit` of the K block at a_rows / b_rows (chunk unit / RUNS, PROMOTE_K / 32 k32
// steps from (unit % RUNS) PROMOTE_K / 32 on) into `part`, the first step overwriting it, as one
// committed wgmma group. Callers unroll their loops, so `unit` is a constant here.
__device__ __forceinline__ void issue_run(float (&part)[CN / 2], u32 a_rows, u32 b_rows, int unit) {
  const int c = unit / RUNS, k0 = (unit % RUNS) * (PROMOTE_K / 32);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < PROMOTE_K / 32; ++kk)
    wgmma_e4m3(part, smem_desc(a_rows + (k0 + kk) * 32, 16, 1024),
               smem_desc(b_rows + c * CN * 128 + (k0 + kk) * 32, 16, 1024), kk);
  wgmma_commit();
}

// acc[chunk's columns] += part * a_scale of the row * the column's weight scale; the thread's rows
// are r and r + 8 (wgmma_pairs' layout), their scales sa[0] and sa[1]. col0: the chunk's first
// column counted from the tile's first weight scale block (sb[0]'s), a compile-time constant in
// every instance (k_loop's OFF), so each column's select is fixed when compiling.
__device__ __forceinline__ void promote(float* acc, const float (&part)[CN / 2], const float (&sa)[2],
                                        const float (&sb)[NB], int col0) {
#pragma unroll
  for (int j = 0; j < CN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float b = sb[0];
      if constexpr (NB > 1)
        if (col0 + 8 * j >= SCALE_BLOCK) b = sb[1];  // a select, not an index into registers
      const float s = sa[h] * b;
      acc[4 * j + 2 * h] += part[4 * j + 2 * h] * s;
      acc[4 * j + 2 * h + 1] += part[4 * j + 2 * h + 1] * s;
    }
}

// A stage's scales, beside its codes: the a_scale of the tile's BM rows and the weight scale of
// each 128-column block of its BN columns, written by the producer's second warp (loads that
// would otherwise queue behind the consumers' stores and stall their K loop).
#define SCALES (BM + 4)  // floats a stage (16-byte aligned)
struct Scales {
  float a[2], b[NB];
};
// This thread's rows (r and r + 8 of its consumer's 64: wgmma_pairs' layout) from stage slot `at`.
__device__ __forceinline__ Scales read_scales(u32 at, int rows) {
  Scales sc;
  sc.a[0] = lds_f32(at + 4 * rows);
  sc.a[1] = lds_f32(at + 4 * (rows + 8));
#pragma unroll
  for (int c = 0; c < NB; ++c) sc.b[c] = lds_f32(at + 4 * (BM + c));
  return sc;
}

// A consumer warpgroup's K loop over one item: ring tiles [g, g + kbs). Each K block is UNITS
// runs, each one wgmma group into a partial sum that is promoted into acc. OVERLAP 0 waits for a
// run before promoting it; OVERLAP 1 keeps two partial sums and issues run u + 1 before it waits
// for run u, so the tensor cores multiply while the run before is scaled. The loop takes two K
// blocks an iteration so that which partial sum and which scales a run uses are known when
// compiling. A block's scales are read before its first run is issued: the stage goes back to
// the producer only once that run is done, which needs every warp of the warpgroup to issue it.
// OFF: the tile's first column in its first weight scale block (0 but for 192-column tiles).
template <int OFF, class Ring>
__device__ __forceinline__ void k_loop(float (&acc)[BN / 2], const Ring& ring, int g, int kbs, u32 a_base, u32 sB,
                                       u32 sS, int rows, bool leader) {
  float part[OVERLAP + 1][CN / 2];
  Scales sc[2];
  const auto a_at = [&](int gi) { return a_base + (gi % STAGES) * A_BYTES; };
  const auto b_at = [&](int gi) { return sB + (gi % STAGES) * B_BYTES; };
  const auto s_at = [&](int gi) { return sS + (gi % STAGES) * SCALES * 4; };
  if (OVERLAP && kbs > 0) {
    ring.wait_full(g);
    sc[0] = read_scales(s_at(g), rows);
    issue_run(part[0], a_at(g), b_at(g), 0);
  }
  for (int b = 0; b < kbs; b += 2) {
#pragma unroll
    for (int v = 0; v < 2 * UNITS; ++v) {
      const int j = v / UNITS, unit = v % UNITS, gi = g + b + j;
      if (b + j >= kbs) break;
      float(&cur)[CN / 2] = part[OVERLAP ? v % 2 : 0];
      if (OVERLAP) {
        if (b + j + 1 < kbs || unit + 1 < UNITS) {
          const int gn = unit + 1 < UNITS ? gi : gi + 1;
          if (unit + 1 == UNITS) {
            ring.wait_full(gn);
            sc[1 - j] = read_scales(s_at(gn), rows);
          }
          issue_run(part[(v + 1) % 2], a_at(gn), b_at(gn), (unit + 1) % UNITS);
          wgmma_wait<1>();
        } else {
          wgmma_wait<0>();
        }
      } else {
        if (unit == 0) {
          ring.wait_full(gi);
          sc[j] = read_scales(s_at(gi), rows);
        }
        issue_run(cur, a_at(gi), b_at(gi), unit);
        wgmma_wait<0>();
      }
      wgmma_fence_operands(cur);
      if (unit == UNITS - 1) ring.release(gi, leader);
      promote(acc + (unit / RUNS) * (CN / 2), cur, sc[j].a, sc[j].b, OFF + (unit / RUNS) * CN);
    }
  }
  if (OVERLAP) wgmma_wait<0>();
}

// The producer's second warp: each K block's scales into its stage's slot, once the stage is
// free; every lane arrives on the stage's "full" barrier after its stores (33 arrivals with the
// TMA thread's). The next block's scales load while the warp waits for its stage. Rows past M
// get 0 (their codes are TMA's zeros anyway).
__device__ __forceinline__ void produce_scales(const TmaRing<STAGES, CLUSTER>& ring, int g, const Item& it, u32 sS,
                                               const float* __restrict__ a_scale, const float* __restrict__ b_scale,
                                               int M, int kb_count, int nb_count, int lane) {
  if (it.kbs == 0) return;
  const float* a_col[BM / 32];  // this lane's rows' scales at the item's first K block
#pragma unroll
  for (int i = 0; i < BM / 32; ++i)
    a_col[i] = it.m0 + lane + 32 * i < M ? a_scale + (long)(it.m0 + lane + 32 * i) * kb_count + it.kb0 : nullptr;
  const float* b_col = b_scale + (long)min(it.n0 / SCALE_BLOCK + lane % NB, nb_count - 1) * kb_count + it.kb0;
  float va[BM / 32], vb = 0.f;
  const auto load = [&](int i) {
#pragma unroll
    for (int r = 0; r < BM / 32; ++r) va[r] = a_col[r] ? a_col[r][i] : 0.f;
    vb = b_col[i];
  };
  load(0);
  for (int i = 0; i < it.kbs; ++i, ++g) {
    ring.wait_empty(g);
    const u32 at = sS + (g % STAGES) * SCALES * 4;
#pragma unroll
    for (int r = 0; r < BM / 32; ++r) sts_f32(at + 4 * (lane + 32 * r), va[r]);
    if (lane < NB) sts_f32(at + 4 * (BM + lane), vb);
    mbar_arrive(ring.full(g % STAGES));
    if (i + 1 < it.kbs) load(i + 1);
  }
}

// A consumer warpgroup's 64 rows of Y's tile, 16 bytes a store where rows are whole 8-column
// groups of bf16 (N % 8 == 0); otherwise pairs (f32 Y, odd N).
__device__ __forceinline__ void store_y(const float (&acc)[BN / 2], Out* __restrict__ y, int row0, int n0, int M,
                                        int N) {
  if (!KT_OUT_F32 && N % 8 == 0) {
    wgmma_rows16<true>(acc, [&](int r, int c, uint4 words) {
      if (row0 + r < M && n0 + c < N) *reinterpret_cast<uint4*>(y + (long)(row0 + r) * N + n0 + c) = words;
    });
    return;
  }
  wgmma_pairs(acc, [&](int r, int c, float x0, float x1) { store_pair(y, M, N, row0 + r, n0 + c, x0, x1); });
}

// PERSISTENT 2: the SPLITK K slices of a last-wave tile meet here, each on a block of its own and
// all in the same wave (a constraint). Each consumer warpgroup stores its partials in its slice
// of ws, counts itself in on its rows' counter in `arrivals` and waits until all SPLITK have;
// then each slice adds up its 1/SPLITK share of the tile from every slice, in slice order (the
// same sum whichever block does it), and stores that share of Y. The first version had the last
// slice to arrive add everything: SPLITK times the loads on one SM, waiting on one another, which
// cost 10-15 us of a 134 us GEMM at SPLITK 8 (bench/cuda/RESULTS.md section 14). Partials are kept
// as the registers hold them, float4 j of thread t at [j][t] of a warpgroup's part: whole 512-byte
// runs a warp, no bounds to test. The counter counts on as slices leave, and the last to leave
// sets it back to 0, so that every launch (and a config of another SPLITK) finds it at 0; it is
// zeroed once, as the spec's workspace. Waiting for other blocks needs them resident: the grid is
// at most one block per SM, all in one wave, on a device whose SMs are all the kernel's (not an
// MPS share of them).
__device__ __forceinline__ void tail_reduce(const float (&acc)[BN / 2], Out* __restrict__ y, float* __restrict__ ws,
                                            int* __restrict__ arrivals, const Item& it, int row0, int M, int N,
                                            int wg) {
  const int t = threadIdx.x % 128;
  const auto part = [&](int s) {
    return reinterpret_cast<float4*>(ws) +
           (((long)(s * it.tail + it.tile - (TILES(M, N) - it.tail)) * CLUSTER + it.rank) * CONSUMERS + (wg - 1)) *
               (BN / 8) * 128 +
           t;
  };
  float4* mine = part(it.slice);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
    mine[j * 128] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
  int* counter = arrivals + (it.tile * CLUSTER + it.rank) * CONSUMERS + (wg - 1);
  __threadfence();                                           // this thread's partials, before the count
  asm volatile("bar.sync %0, 128;\n" ::"r"(wg) : "memory");  // named barrier wg (1..): this warpgroup
  if (t == 0) {
    atomicAdd(counter, 1);
    int seen;
    do {
      asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen < SPLITK);
  }
  asm volatile("bar.sync %0, 128;\n" ::"r"(wg) : "memory");
  __threadfence();  // the others' partials, after their count
  // This slice's share: float4s [j0, j0 + J) of every thread, all SPLITK of each in flight at once.
  constexpr int J = BN / 8 / SPLITK;
  static_assert(J * SPLITK == BN / 8, "SPLITK divides a warpgroup's float4 columns");
  const int j0 = it.slice * J;
  float4 v[SPLITK][J];
#pragma unroll
  for (int s = 0; s < SPLITK; ++s)
#pragma unroll
    for (int j = 0; j < J; ++j) v[s][j] = __ldcg(part(s) + (j0 + j) * 128);
  const int r = (t / 32) * 16 + (t % 32) / 4, c = 2 * (t % 4);  // wgmma_pairs' row and column of float4 0
#pragma unroll
  for (int j = 0; j < J; ++j) {
    float4 sum = v[0][j];
#pragma unroll
    for (int s = 1; s < SPLITK; ++s) {
      sum.x += v[s][j].x;
      sum.y += v[s][j].y;
      sum.z += v[s][j].z;
      sum.w += v[s][j].w;
    }
    const int n = it.n0 + 8 * (j0 + j) + c;
    store_pair(y, M, N, row0 + r, n, sum.x, sum.y);
    store_pair(y, M, N, row0 + r + 8, n, sum.z, sum.w);
  }
  // Leaving: the last of the 2 * SPLITK counts sets the counter back to 0 (no slice reads it any more).
  asm volatile("bar.sync %0, 128;\n" ::"r"(wg) : "memory");
  if (t == 0 && atomicAdd(counter, 1) == 2 * SPLITK - 1) *counter = 0;
}

// A consumer warpgroup's 64 rows of an item's tile: into Y, or (split K) into its slice of f32
// partials, summed into Y by gemm_a8w8_blockscale_reduce or, with PERSISTENT 2, tail_reduce.
__device__ __forceinline__ void store_tile(float (&acc)[BN / 2], Out* __restrict__ y, float* __restrict__ ws,
                                           int* __restrict__ arrivals, const Item& it, int row0, int M, int N, int wg) {
  if (!it.split) {
    store_y(acc, y, row0, it.n0, M, N);
  } else if (PERSISTENT == 2) {
    tail_reduce(acc, y, ws, arrivals, it, row0, M, N, wg);
  } else {
    wgmma_pairs(acc, [&](int r, int c, float x0, float x1) {
      store_pair(ws + (long)it.slice * M * N, M, N, row0 + r, it.n0 + c, x0, x1);
    });
  }
}

// Items blockIdx.x, blockIdx.x + gridDim.x, ...: one a block, or (a persistent grid of at most
// one block per SM) several, the producer filling the ring with the next item's K blocks while
// the consumers store the last one's tile. A cluster (consecutive blocks) takes items as one
// block would, each block multiplying its rows of the tile by the same W: each loads its A and
// half of W, which TMA multicasts into both blocks' stages (a quarter less traffic from L2 into
// the SMs: 24 KiB a K block of a 128 x 128 tile where it was 32; on an H200 that moved times by
// about 1 %, RESULTS.md section 14), and a stage goes back to the producers once both blocks'
// consumers are done with it.
extern "C" __global__ void __launch_bounds__(THREADS, 1) KT_CLUSTER_DIMS(CLUSTER)
    gemm_a8w8_blockscale(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
                         const float* __restrict__ a_scale, const float* __restrict__ b_scale, Out* __restrict__ y,
                         float* __restrict__ ws, int* __restrict__ arrivals, int M, int N, int K) {
  const int kb_count = K / SCALE_BLOCK, nb_count = (N + SCALE_BLOCK - 1) / SCALE_BLOCK;
  const int items = item_count(M, N);

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Swizzled tiles need 1024-byte alignment (the spec asks for 1 KiB of slack).
  const u32 raw = smem_addr(smem_raw);
  const u32 sA = (raw + 1023) & ~1023u, sB = sA + STAGES * A_BYTES, sS = sB + STAGES * B_BYTES;
  const TmaRing<STAGES, CLUSTER> ring{sS + STAGES * SCALES * 4};
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int rank = CLUSTER > 1 ? cluster_rank() : 0;
  if (tid == 0) {
    prefetch_tensormap(&tmA);
    prefetch_tensormap(&tmB);
    ring.init(CONSUMERS, 1 + 32);
  }
  if constexpr (CLUSTER > 1)
    cluster_sync();  // the peer's barriers are ready before a multicast or a release reaches them
  else
    __syncthreads();

  if (wg == 0) {
#if CONSUMERS > 1
    producer_regs();
#endif
    for (int w = blockIdx.x / CLUSTER, g = 0; w < items; w += CLUSTERS) {
      const Item it = work_item(w, M, N, kb_count, rank);
      if (warp == 1) produce_scales(ring, g, it, sS, a_scale, b_scale, M, kb_count, nb_count, lane);
      if (tid == 0)
        for (int i = 0; i < it.kbs; ++i) {
          const int s = ring.acquire(g + i, A_BYTES + B_BYTES), k = (it.kb0 + i) * SCALE_BLOCK;
          tma_load(sA + s * A_BYTES, &tmA, k, it.m0, ring.full(s));
          // W's BN / CLUSTER rows from this block's part on (the tensor map's box).
          const u32 part = rank * (BN / CLUSTER);
          if constexpr (CLUSTER > 1)
            tma_load_multicast(sB + s * B_BYTES + part * 128, &tmB, k, it.n0 + part, ring.full(s),
                               (1 << CLUSTER) - 1);
          else
            tma_load(sB + s * B_BYTES, &tmB, k, it.n0, ring.full(s));
        }
      g += it.kbs;
    }
    return;  // exited threads count as arrived at the cluster barrier at the end
  }
#if CONSUMERS > 1
  take_regs<consumer_regs(THREADS, CONSUMERS)>();
#endif
  const u32 a_base = sA + (wg - 1) * 64 * 128;
  const int rows = (wg - 1) * 64 + warp * 16 + lane / 4;  // this thread's first row in the tile
  for (int w = blockIdx.x / CLUSTER, g = 0; w < items; w += CLUSTERS) {
    const Item it = work_item(w, M, N, kb_count, rank);
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
    // A 192-column tile starts at 0 or 64 in its first weight scale block: a constant in each
    // instance, so that the promotion picks each column's scale by a select the compiler fixes.
    // Read at run time, it put per-thread predicates beside the scaling in every K block: 128 x 192
    // at 4096 x 2112 x 7168 took 128 us where it takes 110 (bench/cuda/RESULTS.md section 14).
    if (NB > 1 && it.n0 % SCALE_BLOCK)
      k_loop<SCALE_BLOCK / 2>(acc, ring, g, it.kbs, a_base, sB, sS, rows, tid % 128 == 0);
    else
      k_loop<0>(acc, ring, g, it.kbs, a_base, sB, sS, rows, tid % 128 == 0);
    g += it.kbs;
    store_tile(acc, y, ws, arrivals, it, it.m0 + (wg - 1) * 64, M, N, wg);
  }
  // No block leaves while its peer may still give a stage back to its barriers.
  if constexpr (CLUSTER > 1) cluster_sync();
}

#endif  // !REFERENCE && !KT_INT8

#if !REFERENCE && KT_INT8
#include "gemm_a8w8_blockscale_int8.cuh"
#endif

#if !REFERENCE
// Split-K's second launch: Y = the sum of the SPLITK slices' partials, in slice order.
extern "C" __global__ void gemm_a8w8_blockscale_reduce(const float* __restrict__ ws, Out* __restrict__ y, int M,
                                                       int N) {
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x, total = (long)M * N;
  if (i >= total) return;
  float sum = 0.f;
#pragma unroll
  for (int s = 0; s < SPLITK; ++s) sum += ws[s * total + i];
  y[i] = convert<Out>(sum);
}
#endif  // !REFERENCE

// The e4m3 ("fn": no infinities, 0x7f and 0xff NaN) value of a code, exact in f32.
__device__ __forceinline__ float e4m3_to_f32(unsigned char code) {
  const u32 sign = (u32)(code & 0x80) << 24, exp = (code >> 3) & 15, man = code & 7;
  if (exp == 15 && man == 7) return __int_as_float(0x7fc00000);
  const float v = exp == 0 ? man * (1.f / 512.f) : __int_as_float((int)(((exp + 120) << 23) | (man << 20)));
  return __int_as_float(__float_as_int(v) | (int)sign);
}

// The value of a code: an int8 or an e4m3, exact in f32.
__device__ __forceinline__ float code_value(unsigned char code) {
  return KT_INT8 ? (float)(signed char)code : e4m3_to_f32(code);
}

// The reference: one thread per output, f32, each code dequantized with its block's scale and
// multiplied in K order (no promotion, no tiles).
extern "C" __global__ void gemm_a8w8_blockscale_reference(const unsigned char* __restrict__ a,
                                                          const unsigned char* __restrict__ w,
                                                          const float* __restrict__ a_scale,
                                                          const float* __restrict__ b_scale, Out* __restrict__ y, int M,
                                                          int N, int K) {
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)M * N) return;
  const int m = i / N, n = i % N, kb_count = K / SCALE_BLOCK;
  const unsigned char *ar = a + (long)m * K, *wr = w + (long)n * K;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) {
    const int kb = k / SCALE_BLOCK;
    acc += (code_value(ar[k]) * a_scale[(long)m * kb_count + kb]) *
           (code_value(wr[k]) * b_scale[(long)(n / SCALE_BLOCK) * kb_count + kb]);
  }
  y[i] = convert<Out>(acc);
}
