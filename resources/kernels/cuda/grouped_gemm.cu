// ktune grouped_gemm: the MoE grouped GEMM of Unsloth's forward and backward passes on tensor
// cores, f16 or bf16 storage with f32 accumulation (grouped_gemm.json; the CPU family's tensors):
//   x  [tokens, hidden]   w [experts, intermediate, hidden]   y, dy [R, intermediate]
//   R = tokens * topk routed rows; row r = t * topk + j is token t's j-th choice, of expert e(r).
//   PASS 0 (fwd): y[r]  = x[t(r)] w[e(r)]^T                per expert: [n_e, H] x [H, I]
//   PASS 1 (dX):  dx[r] = dy[r] w[e(r)]                    per expert: [n_e, I] x [I, H]
//   PASS 2 (dW):  dw[e] = sum over r of e: dy[r]^T x[t(r)]  per expert: [I, n_e] x [n_e, H]
// The routing's expert order (offsets, and per position s the routed row rows[s] and its token
// toks[s]) turns each expert's rows into one GEMM. permute_x fuses the x side's permutation into
// the GEMM (fwd, dW: A or B rows gathered from x by token; dX: dx rows scattered by routed row),
// permute_y the y side's (fwd: y rows scattered; dX, dW: dy rows gathered). Unfused, the spec
// runs the permutation as its own launch (permute_rows) through an expert-order buffer, as
// Unsloth's unfused path does; both are never set together (Unsloth's rule, a constraint).
//
// WGMMA=0 is the mma.sync kernel of grouped_gemm_mma.cuh (a block a tile, a cp.async ring).
// WGMMA=1 (Hopper, every pass) is grouped_gemm_wgmma, described above it: TMA, cp.async gathers
// through the routing and warpgroup MMA.
#ifndef KT_BF16
#define KT_BF16 0
#endif
#ifndef REFERENCE
#define REFERENCE 0  // 1: the reference's build, which reads no tunable
#endif
#ifndef WGMMA
#define WGMMA 0
#endif
#ifndef PERSISTENT
#define PERSISTENT 0  // 1 (WGMMA): a block an SM taking every expert's tiles in turn
#endif
#ifndef PINGPONG
#define PINGPONG 0  // 1 (PERSISTENT): two consumer warpgroups taking the block's tiles in turn
#endif
#ifndef CLUSTER
#define CLUSTER 1  // 2 (PERSISTENT): clusters of two blocks on vertically adjacent tiles, B multicast
#endif

#include "ktune_device.cuh"
#if WGMMA
#include "ktune_hopper.cuh"
#endif

using Elem = Float16<KT_BF16>;

#if !REFERENCE
#define BM BLOCK_SIZE_M
#define BN BLOCK_SIZE_N
#define BK BLOCK_SIZE_K
#define STAGES num_stages
#define THREADS (num_warps * 32)
static_assert(STAGES >= 2, "the ring needs two stages");
static_assert(!(permute_x && permute_y), "Unsloth's kernels fuse one side at most");

// One expert's GEMM: C[M, N] += A[M, K] B[K, N], rows reached through the routing.
struct Problem {
  int e, off, M, N, K;  // expert, its first expert-order position, the product's sizes
};

// Row pointers of the operands and output, by the pass and the fusions (see the header).
struct Operands {
  const int* __restrict__ rows;
  const int* __restrict__ toks;
  const u16* __restrict__ x;
  const u16* __restrict__ w;
  const u16* __restrict__ dy;
  u16* __restrict__ out;
  const u16* __restrict__ xs;   // x rows in expert order (permute_x off: fwd, dW)
  const u16* __restrict__ dys;  // dy rows in expert order (permute_y off: dX, dW)
  u16* __restrict__ outs;       // output rows in expert order (fwd without permute_y, dX without permute_x)
  int hidden, inter;

  // Row m (fwd, dX) or k (dW) of the expert's x-side operand, at position s = off + m.
  __device__ __forceinline__ const u16* x_row(int s) const {
    return permute_x ? x + (long)toks[s] * hidden : xs + (long)s * hidden;
  }
  __device__ __forceinline__ const u16* dy_row(int s) const {
    return permute_y ? dy + (long)rows[s] * inter : dys + (long)s * inter;
  }
  // A's row m (M-major passes) or row k (dW), K or M elements long.
  __device__ __forceinline__ const u16* a_row(const Problem& p, int i) const {
    return PASS == 0 ? x_row(p.off + i) : dy_row(p.off + i);
  }
  // B's row n (fwd: w[e] is [I, H], N x K) or k (dX: w[e] is [I, H], K x N; dW: x rows).
  __device__ __forceinline__ const u16* b_row(const Problem& p, int i) const {
    if (PASS == 2) return x_row(p.off + i);
    return w + ((long)p.e * inter + i) * hidden;
  }
  __device__ __forceinline__ u16* out_row(const Problem& p, int m) const {
    if (PASS == 2) return out + ((long)p.e * inter + m) * hidden;
    const bool fused = PASS == 0 ? permute_y : permute_x;
    return fused ? out + (long)rows[p.off + m] * p.N : outs + (long)(p.off + m) * p.N;
  }
};

// Expert e's product: its sizes and first expert-order position.
__device__ __forceinline__ Problem expert_problem(const int* __restrict__ offsets, int e, int hidden, int inter) {
  Problem p;
  p.e = e;
  p.off = offsets[p.e];
  const int n_e = offsets[p.e + 1] - p.off;
  p.M = PASS == 2 ? inter : n_e;
  p.N = PASS == 1 ? hidden : PASS == 0 ? inter : hidden;
  p.K = PASS == 0 ? hidden : PASS == 1 ? inter : n_e;
  return p;
}

#if !WGMMA
#include "grouped_gemm_mma.cuh"
#else
// ---------------------------------------------------------------------------------------------
// Hopper (sm_90a): gemm.cu's wgmma kernel per expert. Warpgroup 0 is the producer, filling a ring
// of STAGES buffers (ktune_hopper.cuh); warpgroups 1..BM/64 are consumers, each multiplying its 64
// rows of A by all BN columns with wgmma.m64nBNk16 straight from shared memory (cooperative: every
// consumer on one tile). PINGPONG=1 (persistent blocks) has two consumer warpgroups, each taking
// every other tile of the block's sequence whole (its BM/64 boxes of 64 rows): the ring holds the
// tiles' K tiles in sequence, so one warpgroup's K tiles land while the other's tile drains, and
// one stores its tile while the other multiplies (CUTLASS's ping-pong schedule). Cooperatively,
// the tensor cores idle while both store: 8-13 % of their time at Mixtral's prefill on the H100.
// CLUSTER=2 (persistent, cooperative) pairs blocks on tiles one above the other, each loading half
// of their shared B into both blocks' rings by TMA multicast (half B's L2-to-SM traffic); a stage
// is free once both blocks' consumers gave it back. On the H100, which runs prefill at its 700 W
// cap, neither beat the cooperative kernel: ping-pong lost 4-24 %, clusters tied (RESULTS.md §12).
// Tiles are 128-byte swizzled rows of 64 elements, whoever fills them:
//   fwd: A = x rows [M, H] of the expert, K-major; B = w as [E*I, H], rows e*I + n: K-major.
//   dX:  A = dy rows [M, I], K-major; B = w as [E*I, H] read as K x N (rows e*I + k): MN-major,
//        64-column boxes, wgmma's transpose bit, as gemm.cu's B.
//   dW:  A = dy^T: rows of dy (K = the expert's rows) x 64 columns of intermediate a box, MN-major;
//        B = x rows, 64 columns of hidden a box, MN-major. Both transposed.
// w comes by TMA (one producer thread). An operand the routing permutes comes one of two ways: by
// TMA from the expert-order copy a permute_rows launch made (that side's permute off), or gathered
// through the routing by the producer warpgroup's 128 threads with cp.async where that side is
// fused (fwd's x with permute_x; dX's and dW's dy with permute_y, dW's x with permute_x). On the
// H100 TMA feeds the tensor cores at prefill and gathering loses there (0.7x); at decode, where the
// weights' read is all, gathering saves the permute launch and wins. (A TMA copy a gathered row,
// 128 bytes each into the swizzled tile, validated but ran 1.3-2.2x slower than cp.async: TMA's
// issue cost is per copy.)
// fwd and dX tiles read past an expert's rows (A: the next expert's positions; fwd B: the next
// expert's weight rows) only feed outputs the stores mask; TMA zero-fills past each view's edges,
// so A's columns at and past K are zeros and K's tail adds nothing (finite weights times zero).
// dW's K runs over an expert's rows, so its last K tile must add nothing from the next expert's:
// a gathered operand is zero-filled there; where both come by TMA, each consumer warpgroup zeroes
// those rows of its A box before multiplying (ZERO_TAIL).
// Where the fused side is the output (fwd permute_y, dX permute_x), the stores scatter rows
// through rows[], as the mma.sync kernel does.
static_assert(BK == 64, "a K stage is one 128-byte swizzle atom");
static_assert(BM % 64 == 0 && (BN == 64 || BN == 128 || BN == 256),
              "64 rows per consumer; wgmma's N is 64, 128 or 256");
static_assert(!PINGPONG || PERSISTENT, "ping-pong consumers take turns over a persistent block's tiles");
static_assert(!PINGPONG || BM * BN <= 16384, "a ping-pong consumer holds its whole tile: 128 accumulators at most");
#define TILE_M (BM * CLUSTER)  // rows of a cluster's tile: its blocks' tiles one above the other
#define CONSUMERS (PINGPONG ? 2 : BM / 64)
#define BOXES (PINGPONG ? BM / 64 : 1)  // 64-row boxes of A a consumer multiplies, an accumulator each
static_assert(num_warps == 4 * (CONSUMERS + 1), "a producer warpgroup and the consumer warpgroups");
#define A_BYTES (BM * 128)  // a stage of A: BM rows of 64 elements (dW: BM/64 boxes of 64 x 64)
#define B_BYTES (BN * 128)  // of B: BN rows of 64 (fwd) or BN/64 boxes of 64 rows x 64 columns (dX, dW)
#define BOX_BYTES 8192
#define A_GATHERED (PASS == 0 ? permute_x : permute_y)
#define B_GATHERED (PASS == 2 && permute_x)
#define GATHER (A_GATHERED || B_GATHERED)
#define ZERO_TAIL (PASS == 2 && !GATHER)
static_assert(CLUSTER == 1 || (CLUSTER == 2 && PERSISTENT && !PINGPONG && !B_GATHERED && (PASS == 0 || BN >= 128)),
              "a cluster shares B, loaded by TMA in halves, over a persistent cooperative block's tiles");
// Bytes a stage's TMA copies bring: the operands not gathered.
#define TMA_BYTES ((A_GATHERED ? 0 : A_BYTES) + (B_GATHERED ? 0 : B_BYTES))
#define PRODUCER_REGS (GATHER ? kGatherProducerRegs : kProducerRegs)

// A producer thread's cp.async copies of a tile's gathered operand: chunk t % 8 (16 bytes) of rows
// t / 8 + 16 q (q < 4) of every 64 x 64 box, swizzled as TMA would have written them. A row's
// source comes through the routing, an index load that misses L1 (shared memory takes most of
// it); read where the copy is issued, it stalled each stage for a round trip to L2 and ran about
// 0.65x TMA's speed (Nsight Compute at Mixtral's prefill on the H100: L1TEX scoreboard stalls, 55 %
// of the cycles between issues). So indices are read ahead: fwd's and dX's A rows are the same in
// every K tile of an output tile, read once a tile; dW's (K is the expert's rows) a K tile ahead.
struct Gather {
  // The gathered operand is x's rows, by token (fwd's A, dW's B), or dy's, by routed row.
  static constexpr bool kXSide = PASS == 0 || B_GATHERED;
  const u16* src[PASS == 2 ? 1 : BM / 64][4];  // fwd, dX: row q of A's box j (nullptr: past the expert)
  int next[4];                                 // dW: the next K tile's source rows (-1: past the expert)

  __device__ __forceinline__ int index(const Operands& o, int s) const { return kXSide ? o.toks[s] : o.rows[s]; }
  __device__ __forceinline__ const u16* row(const Operands& o, int idx) const {
    return idx < 0 ? nullptr : kXSide ? o.x + (long)idx * o.hidden : o.dy + (long)idx * o.inter;
  }
  __device__ __forceinline__ void read_ahead(const Operands& o, const Problem& p, int k0, int t) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int k = k0 + t / 8 + 16 * q;
      next[q] = k < p.K ? index(o, p.off + k) : -1;
    }
  }
  __device__ __forceinline__ Gather(const Operands& o, const Problem& p, int m0, int t) {
    if constexpr (PASS == 2) {
      read_ahead(o, p, 0, t);
    } else {
#pragma unroll
      for (int j = 0; j < BM / 64; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int m = m0 + j * 64 + t / 8 + 16 * q;
          src[j][q] = m < p.M ? row(o, index(o, p.off + m)) : nullptr;
        }
    }
  }
  // Rows r[q] from column col on into the box at `tile`, zeros past a row's end (cols_left) and
  // for absent rows (`any` is a valid address for the zero-filling copies).
  __device__ __forceinline__ static void box(u32 tile, const u16* const (&r)[4], int col, int cols_left,
                                             const u16* any, int t) {
    const int c = t % 8;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const bool ok = r[q] != nullptr && c * 8 < cols_left;
      cp_async16(swizzle128(tile, t / 8 + 16 * q, c), ok ? r[q] + col + c * 8 : any, ok);
    }
  }
  // K tile i's copies into the stage at sA, sB.
  __device__ __forceinline__ void issue(const Operands& o, const Problem& p, u32 sA, u32 sB, int m0, int n0, int i,
                                        int t) {
    const int k0 = i * BK;
    if constexpr (PASS == 2) {  // rows k0.. of dy (A: 64 intermediate columns a box) or x (B: 64 hidden)
      const u16* r[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) r[q] = row(o, next[q]);
      read_ahead(o, p, k0 + BK, t);  // in flight while this tile's copies go out and the ring fills
#pragma unroll
      for (int j = 0; j < (A_GATHERED ? BM : BN) / 64; ++j) {
        const int col = (A_GATHERED ? m0 : n0) + j * 64;
        box((A_GATHERED ? sA : sB) + j * BOX_BYTES, r, col, (A_GATHERED ? p.M : p.N) - col, o.dy, t);
      }
    } else {  // A's rows, columns k0..
#pragma unroll
      for (int j = 0; j < BM / 64; ++j) box(sA + j * BOX_BYTES, src[j], k0, p.K - k0, o.dy, t);
    }
  }
};

// Tile i's TMA copies into stage s (thread 0): the operands not gathered. In a cluster, whose
// blocks multiply the same B, block `rank` loads its part of B into every block's stage.
__device__ __forceinline__ void issue_tma(u32 sA, u32 sB, u32 bar, const TensorMap* tmA, const TensorMap* tmB,
                                          const Operands& o, const Problem& p, int m0, int n0, int i, int rank) {
  const auto load_b = [&](u32 dst, int inner, int outer) {
    if constexpr (CLUSTER > 1)
      tma_load_multicast(dst, tmB, inner, outer, bar, (1 << CLUSTER) - 1);
    else
      tma_load(dst, tmB, inner, outer, bar);
  };
  const int k0 = i * BK;
  if constexpr (!A_GATHERED) {
    if constexpr (PASS == 2) {
#pragma unroll
      for (int j = 0; j < BM / 64; ++j) tma_load(sA + j * BOX_BYTES, tmA, m0 + j * 64, p.off + k0, bar);
    } else {
      tma_load(sA, tmA, k0, p.off + m0, bar);
    }
  }
  if constexpr (!B_GATHERED) {
    // fwd: w's rows e*I + n; dX: w's rows e*I + k, 64 columns a box; dW: xs's rows from the expert's.
    const int outer = PASS == 0 ? p.e * o.inter + n0 : PASS == 1 ? p.e * o.inter + k0 : p.off + k0;
    if constexpr (PASS == 0) {  // BN / CLUSTER rows a part (the tensor map's box)
      load_b(sB + rank * (BN / CLUSTER) * 128, k0, outer + rank * (BN / CLUSTER));
    } else {
      constexpr int kPart = BN / 64 / CLUSTER;  // 64-column boxes a part
#pragma unroll
      for (int j = rank * kPart; j < (rank + 1) * kPart; ++j) load_b(sB + j * BOX_BYTES, n0 + j * 64, outer);
    }
  }
}

// dW with both operands by TMA: rows [valid, 64) of a consumer's A box in its last K tile belong
// to the next expert (or are TMA's zeros past the end); the warpgroup zeroes them, whole 128-byte
// rows (so the swizzle does not matter), and makes the zeros visible to its wgmma.
__device__ __forceinline__ void zero_tail_rows(u32 box, int valid, int wg) {
  const int t = threadIdx.x % 128;
  for (int c = valid * 8 + t; c < 64 * 8; c += 128)
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(box + c * 16), "r"(0) : "memory");
  fence_proxy_async_shared();
  asm volatile("bar.sync %0, 128;\n" ::"r"(wg) : "memory");  // named barrier wg (1..): this warpgroup
}

// Ping-pong consumers' turns at the tensor cores: consumer c (0, 1) starts the K loop of its n-th
// tile once the other has issued its last wgmma of the tile before (a barrier each, one arrival a
// phase). Beyond taking turns, this keeps each consumer at most one lap of the ring ahead of its
// barriers: a consumer free to wait for its tile's first stage while the other's tile still filled
// the ring would wait on a barrier several phases early, and an mbarrier's wait tells phases apart
// by their parity alone (it took the other's stage for its own: faults at Mixtral's prefill).
struct Turns {
  u32 bars;  // two 8-byte mbarriers: consumer c waits on bars + 8c

  __device__ __forceinline__ void init() const {
    mbar_init(bars, 1);
    mbar_init(bars + 8, 1);
  }
  // Consumer 0's n-th tile follows consumer 1's tile n - 1 (its first goes at once); consumer 1's
  // follows consumer 0's tile n.
  __device__ __forceinline__ void wait(int c, int n) const {
    if (c == 1 || n > 0) mbar_wait(bars + 8 * c, (c == 0 ? n - 1 : n) & 1);
  }
  __device__ __forceinline__ void pass(int c, bool leader) const {
    if (leader) mbar_arrive(bars + 8 * (1 - c));
  }
};

// A consumer warpgroup's part of one tile: kt K tiles from the ring's tile `first` on, into acc
// (a 64 x BN accumulator a box); a_rows is its first 64-row box of A in stage 0, the others follow.
// issued() runs once the tile's last wgmma is issued.
template <class Issued>
__device__ __forceinline__ void consume_tile(const TmaRing<STAGES, CLUSTER>& ring, float (&acc)[BOXES][BN / 2],
                                             u32 a_rows, u32 sB, int kt, int first, int K, int wg,
                                             const Issued& issued) {
  const auto multiply = [&](int i) {
    const int s = i % STAGES;
    if constexpr (GATHER) fence_proxy_async_shared();  // the stage's cp.async copies, before wgmma reads them
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
      for (int b = 0; b < BOXES; ++b) {
        // K-major tiles step 32 bytes per k16 inside the swizzle atom; MN-major ones 16 rows (2 KiB).
        const u32 a = a_rows + b * BOX_BYTES + s * A_BYTES;
        if constexpr (PASS == 0)
          wgmma<KT_BF16, 0, 0>(acc[b], smem_desc(a + kk * 32, 16, 1024),
                               smem_desc(sB + s * B_BYTES + kk * 32, 16, 1024));
        else if constexpr (PASS == 1)
          wgmma<KT_BF16, 0, 1>(acc[b], smem_desc(a + kk * 32, 16, 1024),
                               smem_desc(sB + s * B_BYTES + kk * 2048, BOX_BYTES, 1024));
        else
          wgmma<KT_BF16, 1, 1>(acc[b], smem_desc(a + kk * 2048, BOX_BYTES, 1024),
                               smem_desc(sB + s * B_BYTES + kk * 2048, BOX_BYTES, 1024));
      }
    wgmma_commit();
  };
  const bool leader = threadIdx.x % 128 == 0;
  if constexpr (ZERO_TAIL) {
    // The partial last tile on its own, once the others' wgmma are done: stores into registers
    // wgmma still owns would serialize the whole pipeline (ptxas C7515).
    const int tail = K % BK != 0;
    ring.consume(kt - tail, leader, multiply, first, [&] {
      if (!tail) issued();
    });
    if (tail)
      ring.consume(
          1, leader,
          [&](int i) {
#pragma unroll
            for (int b = 0; b < BOXES; ++b) zero_tail_rows(a_rows + b * BOX_BYTES + (i % STAGES) * A_BYTES, K % BK, wg);
            multiply(i);
          },
          first + kt - 1, issued);
  } else {
    ring.consume(kt, leader, multiply, first, issued);
  }
}

// The origin of an expert's tile `i` of tiles_m x tiles_n, in the order the blocks running
// together share the most from L2. fwd and dX: M fastest, so they read the same columns of the
// expert's weights (from DRAM once) while its rows of A, the smaller operand, stay in L2. dW: N
// fastest, so they share dy's columns (a slab of the expert's rows) while all of x's fits L2; M
// fastest re-read the expert's dy, larger than L2, once for every column tile of x (3.4 GB of
// DRAM traffic at Mixtral's prefill on the H100, by Nsight Compute; half of that N fastest).
__device__ __forceinline__ void tile_origin(int i, int tiles_m, int tiles_n, int& m0, int& n0) {
  const bool n_fastest = PASS == 2;
  m0 = (n_fastest ? i / tiles_n : i % tiles_m) * TILE_M;
  n0 = (n_fastest ? i % tiles_n : i / tiles_m) * BN;
}

// Tile `pid` of the expert-major sequence of every expert's real tiles (within an expert in
// tile_origin's order, as the one-tile grid), for PERSISTENT blocks (clusters: their TILE_M rows)
// false past the last one.
__device__ __forceinline__ bool tile_at(int pid, const int* __restrict__ offsets, int experts, int hidden, int inter,
                                        Problem& p, int& m0, int& n0) {
  for (int e = 0; e < experts; ++e) {
    p = expert_problem(offsets, e, hidden, inter);
    const int tiles_m = (p.M + TILE_M - 1) / TILE_M, tiles_n = (p.N + BN - 1) / BN;
    if (pid < tiles_m * tiles_n) {
      tile_origin(pid, tiles_m, tiles_n, m0, n0);
      return true;
    }
    pid -= tiles_m * tiles_n;
  }
  return false;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) KT_CLUSTER_DIMS(CLUSTER)
    grouped_gemm_wgmma(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
                       const int* __restrict__ offsets, const int* __restrict__ rows, const int* __restrict__ toks,
                       const u16* __restrict__ x, const u16* __restrict__ dy, u16* __restrict__ out,
                       const u16* __restrict__ xs, const u16* __restrict__ dys, u16* __restrict__ outs, int hidden,
                       int inter, int experts) {
  const Operands o{rows, toks, x, nullptr, dy, out, xs, dys, outs, hidden, inter};
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Swizzled tiles need 1024-byte alignment (the spec asks for 1 KiB of slack).
  const u32 raw = smem_addr(smem_raw);
  const u32 sA = (raw + 1023) & ~1023u, sB = sA + STAGES * A_BYTES;
  const TmaRing<STAGES, CLUSTER> ring{sB + STAGES * B_BYTES};
  const Turns turns{ring.bars + 16 * STAGES};
  const int tid = threadIdx.x, wg = tid / 128;
  const int rank = CLUSTER > 1 ? cluster_rank() : 0;
  if (tid == 0) {
    if (TMA_BYTES != 0) {
      prefetch_tensormap(&tmA);
      prefetch_tensormap(&tmB);
    }
    // A gathered stage is full once each producer thread's copies landed (and w's bytes).
    // A stage goes back once each consumer of its tile is done: every one, or its ping-pong owner.
    ring.init(PINGPONG ? 1 : CONSUMERS, GATHER ? 128 + (TMA_BYTES != 0) : 1);
    if (PINGPONG) turns.init();
  }
  if constexpr (CLUSTER > 1)
    cluster_sync();  // the peer's barriers are ready before a multicast or a release reaches them
  else
    __syncthreads();
#if CONSUMERS > 1
  // Two consumers with 128 accumulators each need the producer's registers (gemm.cu).
  if (wg == 0)
    producer_regs<PRODUCER_REGS>();
  else
    take_regs<consumer_regs(THREADS, CONSUMERS, PRODUCER_REGS)>();
#endif
  // One thread issues every TMA copy (exited threads count as arrived at the cluster barrier at the end).
  if (wg == 0 && !GATHER && tid != 0) return;

  // One tile a block (blockIdx.y the expert; blocks past a small expert's rows have none), or with
  // PERSISTENT (a block an SM) tiles blockIdx.x, + gridDim.x, ... of every expert's: the ring's
  // count g runs on over them, so the producer fills it with the next tile while the consumers
  // store the last; with PINGPONG consumer warpgroup wg takes the block's tiles j = wg - 1, wg + 1, ...
  // A cluster's blocks (consecutive in x) take the rows of its tiles in turn.
  for (int pid = blockIdx.x / CLUSTER, g = 0, j = 0;; pid += gridDim.x / CLUSTER, ++j) {
    Problem p;
    int m0, n0;
#if PERSISTENT
    if (!tile_at(pid, offsets, experts, hidden, inter, p, m0, n0)) break;
    m0 += rank * BM;  // past the expert's rows in a cluster's last tile: loaded, multiplied, not stored
#else
    if (pid != (int)blockIdx.x) break;
    p = expert_problem(offsets, blockIdx.y, hidden, inter);
    const int tiles_n = (p.N + BN - 1) / BN;
    tile_origin(blockIdx.x, gridDim.x / tiles_n, tiles_n, m0, n0);
    if (m0 >= p.M) break;  // past a small expert's rows (the grid covers the busiest)
#endif
    const int kt = (p.K + BK - 1) / BK;  // 0 for dW of an empty expert: its rows are written as zeros
    if (wg == 0) {
      const auto tma = [&](int s, int i, u32 bar) {
        issue_tma(sA + s * A_BYTES, sB + s * B_BYTES, bar, &tmA, &tmB, o, p, m0, n0, i, rank);
      };
      if constexpr (GATHER) {
        Gather gather(o, p, m0, tid);
        ring.produce_async(kt, TMA_BYTES, tid == 0,
                           [&](int s, int i, u32 bar) {
                             gather.issue(o, p, sA + s * A_BYTES, sB + s * B_BYTES, m0, n0, i, tid);
                             if (TMA_BYTES != 0 && tid == 0) tma(s, i, bar);
                           },
                           g);
      } else {
        ring.produce(kt, TMA_BYTES, tma, g);
      }
      g += kt;
      continue;
    }
    if (PINGPONG && j % 2 != wg - 1) {  // the other consumer's tile
      g += kt;
      continue;
    }
    float acc[BOXES][BN / 2];
#pragma unroll
    for (int b = 0; b < BOXES; ++b)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[b][i] = 0.f;
    const int row0 = PINGPONG ? 0 : (wg - 1) * 64;  // the consumer's first row of the tile
    if (PINGPONG) turns.wait(wg - 1, j / 2);
    consume_tile(ring, acc, sA + row0 * 128, sB, kt, g, p.K, wg, [&] {
      if (PINGPONG) turns.pass(wg - 1, tid % 128 == 0);
    });
    g += kt;

    // 16 bytes a store: rows are whole 8-column groups (hidden and intermediate are multiples of 8).
#pragma unroll
    for (int b = 0; b < BOXES; ++b)
      wgmma_rows16<KT_BF16>(acc[b], [&](int r, int c, uint4 words) {
        const int m = m0 + row0 + b * 64 + r, n = n0 + c;
        if (m < p.M && n < p.N) *reinterpret_cast<uint4*>(o.out_row(p, m) + n) = words;
      });
  }
  // A gathering producer thread leaves no copy of its own in flight behind it.
  if (GATHER && wg == 0) asm volatile("cp.async.wait_all;\n" ::: "memory");
  // No block leaves while its peer may still give a stage back to its barriers.
  if constexpr (CLUSTER > 1) cluster_sync();
}
#endif  // !WGMMA
#endif  // !REFERENCE

// The unfused permutation, a launch of its own: dst[s] = src[index[s]] (gather) or
// dst[index[s]] = src[s] (scatter), rows of `cols` elements (a multiple of 8), a block per row.
extern "C" __global__ void permute_rows(u16* __restrict__ dst, const u16* __restrict__ src,
                                        const int* __restrict__ index, int cols, int scatter) {
  const int s = blockIdx.x;
  const long from = (long)(scatter ? s : index[s]) * cols, to = (long)(scatter ? index[s] : s) * cols;
  const uint4* in = reinterpret_cast<const uint4*>(src + from);
  uint4* o = reinterpret_cast<uint4*>(dst + to);
  for (int c = threadIdx.x; c < cols / 8; c += blockDim.x) o[c] = in[c];
}

// The reference: one thread per output element, f32, from each routed row's expert (`route`), not
// through the expert order the kernel uses; dW's sum runs over the expert's positions in order.
extern "C" __global__ void grouped_gemm_reference(const int* __restrict__ route, const int* __restrict__ offsets,
                                                  const int* __restrict__ rows, const u16* __restrict__ x,
                                                  const u16* __restrict__ w, const u16* __restrict__ dy,
                                                  u16* __restrict__ out, int topk, int hidden, int inter,
                                                  int out_rows) {
  const int cols = PASS == 1 ? hidden : PASS == 0 ? inter : hidden;
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)out_rows * cols) return;
  const int r = i / cols, n = i % cols;
  float acc = 0.f;
  if (PASS == 0) {  // y[r][n] = sum_k x[t][k] w[e][n][k]
    const u16* xr = x + (long)(r / topk) * hidden;
    const u16* wr = w + ((long)route[r] * inter + n) * hidden;
    for (int k = 0; k < hidden; ++k) acc += Elem::to_f32(xr[k]) * Elem::to_f32(wr[k]);
  } else if (PASS == 1) {  // dx[r][n] = sum_k dy[r][k] w[e][k][n]
    const u16* d = dy + (long)r * inter;
    const u16* we = w + (long)route[r] * inter * hidden + n;
    for (int k = 0; k < inter; ++k) acc += Elem::to_f32(d[k]) * Elem::to_f32(we[(long)k * hidden]);
  } else {  // dw[e][m][n] = sum over the expert's rows of dy[row][m] x[t][n]; r = e * inter + m
    const int e = r / inter, m = r % inter;
    for (int s = offsets[e]; s < offsets[e + 1]; ++s) {
      const int row = rows[s];
      if (route[row] != e) {  // the expert order disagrees with the routing: poison the output
        acc = __int_as_float(0x7fc00000);
        break;
      }
      acc += Elem::to_f32(dy[(long)row * inter + m]) * Elem::to_f32(x[(long)(row / topk) * hidden + n]);
    }
  }
  out[i] = Elem::from_f32(acc);
}
