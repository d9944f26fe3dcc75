// Hopper (sm_90a) helpers shared by ktune's built-in CUDA kernels that multiply with warpgroup MMA
// fed by TMA (gemm.cu's gemm_wgmma, grouped_gemm.cu's grouped_gemm_wgmma): a ring of shared
// memory stages filled by one producer thread and drained by consumer warpgroups through
// mbarriers, wgmma on 128-byte swizzled tiles, and the register hand-over between the two roles;
// gemm_a8w8_blockscale.cu multiplies fp8 e4m3 with it (128 8-bit elements a tile row).
// Embedded and handed to NVRTC like ktune_device.cuh, which it includes.
//
// The layout every user follows: a tile row is 64 16-bit elements (128 bytes, one swizzle atom),
// 8-row groups 1 KiB apart, which is what a TMA box of inner size 64 with 128-byte swizzle writes.
// Such a tile is K-major (rows of M or N, K along the row: smem_desc(base + kk * 32, 16, 1024) for
// k16 step kk) or MN-major (rows of K, 64 columns of M or N a box: smem_desc(base + kk * 2048,
// box bytes, 1024), with wgmma's transpose bit). As in ktune_device.cuh, nothing here reads a
// kernel's tunables: the stage count, the storage type and the transposes are template arguments.
#pragma once

#include "ktune_device.cuh"

// Shared memory matrix descriptor, 128-byte swizzle: start, leading and stride byte offsets.
__device__ __forceinline__ unsigned long long smem_desc(u32 addr, u32 lead, u32 stride) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lead >> 4) << 16) |
         ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}

// ---- wgmma: one warpgroup's d[64 x N] += A[64 x 16] B[16 x N], f32 accumulators ----

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N of the warpgroup's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Pins registers a wgmma still in flight writes: the compiler must not read, move or reuse them
// across this point (its model of inline PTX is synchronous). Called after the wait for them.
template <int K>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[K]) {
#pragma unroll
  for (int i = 0; i < K; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The accumulator operands of an instruction with K of them ("+f" on d[0..K)) and their
// placeholders; inline PTX has no loops, so both are spelled out once here.
// clang-format off
#define KT_WG_G0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define KT_WG_G1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define KT_WG_G2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define KT_WG_G3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define KT_WG_G4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define KT_WG_G5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define KT_WG_G6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define KT_WG_G7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define KT_WG_G8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define KT_WG_G9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define KT_WG_G10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define KT_WG_G11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define KT_WG_G12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define KT_WG_G13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define KT_WG_G14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define KT_WG_G15 "%120, %121, %122, %123, %124, %125, %126, %127"
#define KT_WG_D8 "{" KT_WG_G0 "}"
#define KT_WG_D16 "{" KT_WG_G0 ", " KT_WG_G1 "}"
#define KT_WG_D32 "{" KT_WG_G0 ", " KT_WG_G1 ", " KT_WG_G2 ", " KT_WG_G3 "}"
#define KT_WG_D64 "{" KT_WG_G0 ", " KT_WG_G1 ", " KT_WG_G2 ", " KT_WG_G3 ", " KT_WG_G4 ", " KT_WG_G5 ", " KT_WG_G6 ", " KT_WG_G7 "}"
#define KT_WG_D96 "{" KT_WG_G0 ", " KT_WG_G1 ", " KT_WG_G2 ", " KT_WG_G3 ", " KT_WG_G4 ", " KT_WG_G5 ", " KT_WG_G6 ", " KT_WG_G7 ", " \
                  KT_WG_G8 ", " KT_WG_G9 ", " KT_WG_G10 ", " KT_WG_G11 "}"
#define KT_WG_D128 "{" KT_WG_G0 ", " KT_WG_G1 ", " KT_WG_G2 ", " KT_WG_G3 ", " KT_WG_G4 ", " KT_WG_G5 ", " KT_WG_G6 ", " KT_WG_G7 ", " \
                   KT_WG_G8 ", " KT_WG_G9 ", " KT_WG_G10 ", " KT_WG_G11 ", " KT_WG_G12 ", " KT_WG_G13 ", " KT_WG_G14 ", " KT_WG_G15 "}"
#define KT_WG_ACC8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define KT_WG_ACC16(d, i) KT_WG_ACC8(d, i), KT_WG_ACC8(d, i + 8)
#define KT_WG_ACC32(d, i) KT_WG_ACC16(d, i), KT_WG_ACC16(d, i + 16)
#define KT_WG_ACC64(d, i) KT_WG_ACC32(d, i), KT_WG_ACC32(d, i + 32)
#define KT_WG_ACC96(d, i) KT_WG_ACC64(d, i), KT_WG_ACC32(d, i + 64)
#define KT_WG_ACC128(d, i) KT_WG_ACC64(d, i), KT_WG_ACC64(d, i + 64)

// wgmma<Bf16, TransA, TransB>(d, da, db): both operands in shared memory (descriptors); the
// immediates after them are scale-d, scale-a, scale-b and the transposes (1: the operand is
// MN-major). wgmma<Bf16, TransB>(d, a, db): A from registers (four per thread, mma.sync's
// m16n8k16 A fragment), which has no transpose. d's length K picks the shape: m64n(2K)k16.
#define KT_WGMMA_SHAPE(K, N, IDX_DA, IDX_DB, IDX_TA, IDX_TB, IDX_A0, IDX_A1, IDX_A2, IDX_A3, IDX_RB, IDX_RTB)                     \
  template <bool Bf16, int TransA, int TransB>                                                                                 \
  __device__ __forceinline__ void wgmma(float (&d)[K], unsigned long long da, unsigned long long db) {                        \
    if constexpr (Bf16)                                                                                                        \
      asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 " KT_WG_D##K ", %" #IDX_DA ", %" #IDX_DB         \
                   ", 1, 1, 1, %" #IDX_TA ", %" #IDX_TB ";\n"                                                                  \
                   : KT_WG_ACC##K(d, 0) : "l"(da), "l"(db), "n"(TransA), "n"(TransB));                                         \
    else                                                                                                                       \
      asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16 " KT_WG_D##K ", %" #IDX_DA ", %" #IDX_DB           \
                   ", 1, 1, 1, %" #IDX_TA ", %" #IDX_TB ";\n"                                                                  \
                   : KT_WG_ACC##K(d, 0) : "l"(da), "l"(db), "n"(TransA), "n"(TransB));                                         \
  }                                                                                                                            \
  template <bool Bf16, int TransB>                                                                                             \
  __device__ __forceinline__ void wgmma(float (&d)[K], const u32 (&a)[4], unsigned long long db) {                            \
    if constexpr (Bf16)                                                                                                        \
      asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 " KT_WG_D##K ", {%" #IDX_A0 ", %" #IDX_A1         \
                   ", %" #IDX_A2 ", %" #IDX_A3 "}, %" #IDX_RB ", 1, 1, 1, %" #IDX_RTB ";\n"                                    \
                   : KT_WG_ACC##K(d, 0) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(TransB));                   \
    else                                                                                                                       \
      asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16 " KT_WG_D##K ", {%" #IDX_A0 ", %" #IDX_A1           \
                   ", %" #IDX_A2 ", %" #IDX_A3 "}, %" #IDX_RB ", 1, 1, 1, %" #IDX_RTB ";\n"                                    \
                   : KT_WG_ACC##K(d, 0) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(TransB));                   \
  }
KT_WGMMA_SHAPE(8, 16, 8, 9, 10, 11, 8, 9, 10, 11, 12, 13)
KT_WGMMA_SHAPE(16, 32, 16, 17, 18, 19, 16, 17, 18, 19, 20, 21)
KT_WGMMA_SHAPE(32, 64, 32, 33, 34, 35, 32, 33, 34, 35, 36, 37)
KT_WGMMA_SHAPE(64, 128, 64, 65, 66, 67, 64, 65, 66, 67, 68, 69)
KT_WGMMA_SHAPE(128, 256, 128, 129, 130, 131, 128, 129, 130, 131, 132, 133)
// wgmma_e4m3(d, da, db, accumulate): d[64 x N] (+)= A[64 x 32] B[32 x N], fp8 e4m3 operands both
// K-major in shared memory (8-bit wgmma has no transpose): a k32 step is 32 bytes of a 128-byte
// row, as a 16-bit k16 step is. accumulate 0 overwrites d (no zeroing in registers). Hopper sums
// these products in reduced precision (not full f32): callers accumulate a short run of steps
// here and add it to their f32 sums themselves.
#define KT_WGMMA_E4M3(K, N, IDX_DA, IDX_DB, IDX_ACC)                                                                        \
  __device__ __forceinline__ void wgmma_e4m3(float (&d)[K], unsigned long long da, unsigned long long db, int accumulate) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IDX_ACC ", 0;\n"                                                    \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 " KT_WG_D##K ", %" #IDX_DA ", %" #IDX_DB         \
                 ", p, 1, 1;\n}\n"                                                                                          \
                 : KT_WG_ACC##K(d, 0) : "l"(da), "l"(db), "r"(accumulate));                                                 \
  }
KT_WGMMA_E4M3(32, 64, 32, 33, 34)
KT_WGMMA_E4M3(64, 128, 64, 65, 66)
KT_WGMMA_E4M3(96, 192, 96, 97, 98)
// clang-format on
#undef KT_WGMMA_SHAPE
#undef KT_WGMMA_E4M3

// Calls f(row, col, x, y) for each pair of adjacent accumulators of the m64nN fragment `d` a
// thread holds: row in [0, 64), col even in [0, N). d[4j + 2h] and d[4j + 2h + 1] sit at row
// warp * 16 + lane / 4 + 8h of the warpgroup, columns 8j + 2 (lane % 4) and the next.
template <int K, class F>
__device__ __forceinline__ void wgmma_pairs(const float (&d)[K], const F& f) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < K / 4; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      f(warp * 16 + (lane >> 2) + 8 * h, j * 8 + (lane & 3) * 2, d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
}

// Calls store(row, col, words) with 8 adjacent columns of the m64nN fragment `d` as 16-bit
// values (`words`, 16 bytes), col a multiple of 8: the four threads holding a row's pairs swap
// them (a 4 x 4 transpose in two shuffles) so that each holds one 8-column group, a quarter of
// the store instructions of pairs. N must be a multiple of 32.
template <bool Bf16, int K, class F>
__device__ __forceinline__ void wgmma_rows16(const float (&d)[K], const F& store) {
  static_assert(K % 16 == 0, "groups of four 8-column blocks");
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, q = lane & 3;
#pragma unroll
  for (int j0 = 0; j0 < K / 4; j0 += 4)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      u32 v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = Float16<Bf16>::pack2(d[4 * (j0 + i) + 2 * h], d[4 * (j0 + i) + 2 * h + 1]);
      // v[i] holds columns 8 (j0 + i) + 2q of this thread; afterwards v[i] holds 8 (j0 + q) + 2i.
      const bool hi2 = q & 2, hi1 = q & 1;
      u32 r0 = __shfl_xor_sync(0xffffffff, hi2 ? v[0] : v[2], 2);
      u32 r1 = __shfl_xor_sync(0xffffffff, hi2 ? v[1] : v[3], 2);
      if (hi2) {
        v[0] = r0;
        v[1] = r1;
      } else {
        v[2] = r0;
        v[3] = r1;
      }
      r0 = __shfl_xor_sync(0xffffffff, hi1 ? v[0] : v[1], 1);
      r1 = __shfl_xor_sync(0xffffffff, hi1 ? v[2] : v[3], 1);
      if (hi1) {
        v[0] = r0;
        v[2] = r1;
      } else {
        v[1] = r0;
        v[3] = r1;
      }
      store(warp * 16 + (lane >> 2) + 8 * h, 8 * (j0 + q), make_uint4(v[0], v[1], v[2], v[3]));
    }
}

// ---- registers: the producer warpgroup hands what it does not need to the consumers ----

// A producer warpgroup that only issues TMA copies keeps 40 registers a thread; one whose 128
// threads gather rows with cp.async (row pointers, masks) keeps 56.
constexpr int kProducerRegs = 40;
constexpr int kGatherProducerRegs = 56;
// What each consumer thread may take (setmaxnreg.inc) once the producer gave its surplus back
// (setmaxnreg.dec to `producer`), for a block of `threads` with `consumers` consumer
// warpgroups: exactly what is freed, multiples of 8; asking for more waits forever.
__host__ __device__ constexpr int consumer_regs(int threads, int consumers, int producer = kProducerRegs) {
  return (65536 / threads / 8 * 8 + (65536 / threads / 8 * 8 - producer) / consumers) / 8 * 8;
}
template <int Regs = kProducerRegs>
__device__ __forceinline__ void producer_regs() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
}
template <int Regs>
__device__ __forceinline__ void take_regs() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
}

__device__ __forceinline__ void prefetch_tensormap(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)map) : "memory");
}

// Orders generic-proxy writes to shared memory this thread wrote or has seen land (its stores, a
// stage's cp.async copies once its barrier completed) before its later async-proxy reads of them
// (wgmma, TMA stores).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// 16 bytes into a 128-byte swizzled tile at row r, 16-byte chunk c (of 8): where TMA's 128-byte
// swizzle puts them, so that a tile filled by cp.async reads as one TMA wrote (the tile 1 KiB aligned).
__device__ __forceinline__ u32 swizzle128(u32 tile, int r, int c) { return tile + r * 128 + ((c ^ (r & 7)) << 4); }

// Shared memory by address (the ring's stages are addresses, not pointers).
__device__ __forceinline__ float lds_f32(u32 addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void sts_f32(u32 addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}

// ---- clusters: blocks that load into each other's shared memory ----

// A kernel's attribute for clusters of n blocks along x (2, the only size the kernels use), nothing
// for n = 1: that kernel launches as any other. KT_CLUSTER_DIMS(CLUSTER) expands the define before
// pasting.
#define KT_CLUSTER_DIMS_1
#define KT_CLUSTER_DIMS_2 __cluster_dims__(2, 1, 1)
#define KT_CLUSTER_DIMS_PASTE(n) KT_CLUSTER_DIMS_##n
#define KT_CLUSTER_DIMS(n) KT_CLUSTER_DIMS_PASTE(n)

__device__ __forceinline__ u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Every thread of the cluster's blocks that has not exited, converged or not (a producer thread
// whose warp-mates left: exited threads count as arrived).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// Arrives on the mbarrier at shared address `bar` of the cluster's block `rank`, releasing at the
// block's scope only: what it orders (a stage's wgmma reads) is done by then, and a release at the
// cluster's scope fences the thread's earlier global stores too (the last tile's epilogue).
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 rank) {
  asm volatile(
      "{\n.reg .b32 r;\nmapa.shared::cluster.u32 r, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, [r];\n}\n" ::"r"(
          bar),
      "r"(rank)
      : "memory");
}
// tma_load into the same shared address of each block in `mask` (cluster ranks), each block's
// barrier at `bar` counting the bytes that land there.
__device__ __forceinline__ void tma_load_multicast(u32 dst, const TensorMap* map, int inner, int outer, u32 bar,
                                                   unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"((unsigned long long)map), "r"(inner), "r"(outer), "r"(bar), "h"(mask)
      : "memory");
}

// ---- the ring: Stages buffers, each guarded by a "full" and an "empty" mbarrier ----

struct NoOp {
  __device__ __forceinline__ void operator()() const {}
};

// One producer thread fills stage i % Stages with tile i once every consumer warpgroup is done
// with the tile before it there; consumers wait for "full", multiply, and give the stage back
// on "empty". `bars` is the shared address of 2 * Stages 8-byte barriers. With Cluster > 1 the
// blocks of a cluster multicast parts of a stage into each other's rings, so a stage is free only
// once every block's consumers are done with it: they give it back to every block's "empty".
template <int Stages, int Cluster = 1>
struct TmaRing {
  u32 bars;

  __device__ __forceinline__ u32 full(int s) const { return bars + 8 * s; }
  __device__ __forceinline__ u32 empty(int s) const { return bars + 8 * (Stages + s); }

  // By one thread, before a barrier of the whole block (cluster). A stage is full once
  // `full_arrivals` threads arrived (the one issuing its copies, and any that fill it with stores)
  // and its copies landed; empty once `consumers` warpgroups of each block gave it back.
  __device__ __forceinline__ void init(u32 consumers, u32 full_arrivals = 1) const {
    for (int s = 0; s < Stages; ++s) {
      mbar_init(full(s), full_arrivals);
      mbar_init(empty(s), consumers * Cluster);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }

  // Until stage g % Stages is free for tile g of the producer's sequence (which may run over
  // several output tiles: a persistent block's).
  __device__ __forceinline__ void wait_empty(int g) const {
    if (g >= Stages) mbar_wait(empty(g % Stages), ((g / Stages) - 1) & 1);
  }

  // The producer thread, before it fills the ring with tile g of its sequence: waits until the
  // stage is free and arms its "full" barrier for `bytes`. Returns the stage.
  __device__ __forceinline__ int acquire(int g, u32 bytes) const {
    wait_empty(g);
    mbar_expect_tx(full(g % Stages), bytes);
    return g % Stages;
  }

  // The producer thread: tiles [first, first + count) of the ring's sequence, `bytes` each;
  // load(stage, i, bar) issues the copies of the i-th of them (from 0) into `stage`, counted on `bar`.
  template <class Load>
  __device__ __forceinline__ void produce(int count, u32 bytes, const Load& load, int first = 0) const {
    for (int i = 0; i < count; ++i) {
      const int s = acquire(first + i, bytes);
      load(s, i, full(s));
    }
  }

  // All 128 threads of a producer warpgroup, where stages are filled (or partly filled) by cp.async:
  // issue(stage, i, bar) issues tile i's copies, cp.async by every thread (and TMA counted on
  // `bar` by the `leader`, who has armed it for `tma_bytes`). Each thread's arrival on the stage's
  // "full" barrier is left to the hardware, made once its copies there have landed
  // (cp.async.mbarrier.arrive.noinc), so that no thread waits for its own copies and the ring
  // keeps every stage in flight, as TMA does. (Arriving by hand after cp.async.wait_group had to
  // lag Stages - 2 tiles behind the issue, and ran about 0.7x TMA's speed on the H100.) cp.async
  // writes through the generic proxy: consumers call fence_proxy_async_shared() after wait_full
  // and before wgmma reads the stage. The ring is init()ed with full_arrivals = 128 (+1 where the
  // leader arms TMA bytes). Tiles [first, first + count) of the ring's sequence, as produce's.
  template <class Issue>
  __device__ __forceinline__ void produce_async(int count, u32 tma_bytes, bool leader, const Issue& issue,
                                                int first = 0) const {
    for (int i = 0; i < count; ++i) {
      wait_empty(first + i);
      const int s = (first + i) % Stages;
      if (leader && tma_bytes) mbar_expect_tx(full(s), tma_bytes);
      issue(s, i, full(s));
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full(s)) : "memory");
    }
  }

  // Until tile i has landed.
  __device__ __forceinline__ void wait_full(int i) const { mbar_wait(full(i % Stages), (i / Stages) & 1); }
  // A consumer warpgroup's `leader` thread, once the warpgroup's wgmma reading tile i are done.
  __device__ __forceinline__ void release(int i, bool leader) const {
    if (!leader) return;
    if constexpr (Cluster == 1) {
      mbar_arrive(empty(i % Stages));
    } else {
#pragma unroll
      for (int c = 0; c < Cluster; ++c) mbar_arrive_cluster(empty(i % Stages), c);
    }
  }

  // A consumer warpgroup: multiply(i) issues and commits tile i's wgmma group, for tiles
  // [first, first + count) of the ring's sequence. One group stays in flight: once group i - 1
  // is done, its stage goes back (by the `leader` thread). issued() runs once every group is
  // issued, before the last one is waited for.
  template <class Multiply, class Issued = NoOp>
  __device__ __forceinline__ void consume(int count, bool leader, const Multiply& multiply, int first = 0,
                                          const Issued& issued = Issued()) const {
    for (int i = first; i < first + count; ++i) {
      wait_full(i);
      multiply(i);
      wgmma_wait<1>();
      if (i > first) release(i - 1, leader);
    }
    issued();
    wgmma_wait<0>();
    if (count > 0) release(first + count - 1, leader);
  }
};
