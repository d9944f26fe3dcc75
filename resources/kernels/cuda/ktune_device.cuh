// Device helpers shared by ktune's built-in CUDA kernels (gemm.cu, paged_attention.cu): copies
// into shared memory (cp.async, TMA with mbarriers), ldmatrix, int8 tensor-core MMA, and 16-bit
// floats with their tensor-core MMA. Embedded in the binary like the kernels and handed to NVRTC
// as a named header, so `#include "ktune_device.cuh"` needs no include path; a kernel spec of
// your own includes a copy of it from the spec's folder the same way (README, "Your CUDA kernel
// as it is").
//
// NVRTC compiles these kernels without the toolkit's headers: 16-bit floats are raw words and
// every conversion is PTX. Nothing here reads a kernel's tunables (KT_BF16, VEC, L2HINT): what
// varies per build is a template argument the kernel passes, so each helper says what it depends
// on and one header serves every build of every kernel.
#pragma once

typedef unsigned short u16;
typedef unsigned int u32;

__device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// ---- cp.async (sm_80): copies into shared memory that skip registers, waited for by group ----

// Copies 16 bytes through L2 only (.cg), or zero-fills them when `valid` is false (rows past the
// end read nothing and leave no stale data). L2Prefetch (0, 128 or 256) asks L2 to fetch the
// whole 128- or 256-byte sector group around the copy, where its neighbours come from the same lines.
template <int L2Prefetch = 0>
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, bool valid) {
  static_assert(L2Prefetch == 0 || L2Prefetch == 128 || L2Prefetch == 256, "L2 prefetches 128 or 256 bytes");
  if constexpr (L2Prefetch == 256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
  else if constexpr (L2Prefetch == 128)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
// Bytes (4, 8 or 16) bytes, or zeros when `valid` is false: 16 as cp_async16, narrower copies
// through L1 (.ca), the only form that takes them.
template <int Bytes>
__device__ __forceinline__ void cp_async(u32 dst, const void* src, bool valid) {
  static_assert(Bytes == 16 || Bytes == 8 || Bytes == 4, "cp.async moves 16, 8 or 4 bytes");
  if constexpr (Bytes == 16)
    cp_async16(dst, src, valid);
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(Bytes),
                 "r"(valid ? Bytes : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// ---- ldmatrix: four 8x8 tiles of 16-bit values from shared memory into mma.sync fragments ----

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// ---- int8 tensor cores (sm_80): exact int32 sums of s8 products ----

// d += A B with mma.sync m16n8k32: `a` is the row-major A fragment (4 codes a register), b0 and
// b1 the column-major B fragment. An ldmatrix (16-bit 8x8) of rows of 16 codes loads both, as
// it loads m16n8k16's 16-bit fragments.
__device__ __forceinline__ void mma_s8(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- 16-bit floats: f16 (Bf16 false) or bf16, held as raw words ----

// A kernel names its storage type once (`using Elem = Float16<KT_BF16>;`) and calls Elem::pack2,
// Elem::mma, ...: a template argument rather than a macro read here, so the header compiles the
// same whatever the including kernel defines.
template <bool Bf16>
struct Float16 {
  static __device__ __forceinline__ float to_f32(u16 h) {
    if constexpr (Bf16) {
      return __uint_as_float(static_cast<u32>(h) << 16);
    } else {
      float f;
      asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
      return f;
    }
  }
  // Rounded to nearest even.
  static __device__ __forceinline__ u16 from_f32(float f) {
    u16 h;
    if constexpr (Bf16)
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    else
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
  // The two values of a 32-bit word; `lo` is the one at the lower address.
  static __device__ __forceinline__ void unpack2(u32 w, float& lo, float& hi) {
    if constexpr (Bf16) {
      lo = __uint_as_float(w << 16);
      hi = __uint_as_float(w & 0xffff0000u);
    } else {
      lo = to_f32(static_cast<u16>(w));
      hi = to_f32(static_cast<u16>(w >> 16));
    }
  }
  // Two floats rounded and packed into a word, `lo` at the lower address.
  static __device__ __forceinline__ u32 pack2(float lo, float hi) {
    u32 r;
    if constexpr (Bf16)
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    else
      asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  // d += A B on tensor cores (mma.sync m16n8k16, f32 accumulators): `a` is the row-major A
  // fragment, b0 and b1 the column-major B fragment.
  static __device__ __forceinline__ void mma(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    if constexpr (Bf16)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// ---- TMA and mbarriers (sm_90): bulk tensor copies that signal a barrier in shared memory ----

struct alignas(64) TensorMap {
  unsigned long long opaque[16];  // CUtensorMap, encoded on the host (cuTensorMapEncodeTiled)
};

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
// Spins until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  u32 done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrives and says how many bytes the phase's copies will bring: the phase completes when they have landed.
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// The box of `map` at element (inner, outer) into shared memory at `dst`, counted on `bar`.
__device__ __forceinline__ void tma_load(u32 dst, const TensorMap* map, int inner, int outer, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(dst),
      "l"((unsigned long long)map), "r"(inner), "r"(outer), "r"(bar)
      : "memory");
}
