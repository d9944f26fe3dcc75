// ktune paged_attention: decode attention (one query token per sequence) over a paged KV cache,
// f16 or bf16 K/V/q/out with f32 accumulation (paged_attention.json).
//
// Layout (the cpu family's, FlashInfer's "HND"): K and V are pools of pages
// [num_pages, kv_heads, PAGE, HEAD_DIM], so one kv head's rows of one page are contiguous;
// page_table[b * max_pages + i] is the physical page of sequence b's i-th logical page; q and out
// are [batch, q_heads, HEAD_DIM]; q head h reads kv head h / GROUP (GQA).
//
// A block is (split, kv head and QPB of its q heads, sequence): it reads the split's pages of one
// kv head once for QPB q heads. Its WARPS warps take TOKENS-token steps in turn; each warp streams
// its steps' K and V rows through its own cp.async ring of STAGES slots (no block-wide barrier in
// the loop) and keeps its own online softmax. The warps are merged through shared memory at the
// end; a sequence cut into several splits is merged by the last of its blocks to finish (a
// counter in `locks`, which that block resets), from f32 partials in `ws`: no second launch.
//
// A step is scored and accumulated one of two ways (MMA):
//   0  on CUDA cores: a lane holds VEC elements of a row, LPR = HEAD_DIM / VEC lanes share a row
//      (dot products summed by shuffles), RPI = 32 / LPR rows per instruction;
//   1  on tensor cores (mma.sync m16n8k16): the block's QPB q heads are the 16 rows of A (padded
//      with zeros) and K's rows B's columns, so S = Q K^T comes out with a quad of lanes per head;
//      its scores become P's A fragments in registers (as in FlashAttention-2) and O += P V takes V
//      through ldmatrix.trans. Padding wastes MMA rows, which cost nothing here (the kernel waits
//      on memory), where CUDA-core dot products take several times the instructions.
// A warp's ring is fed one of two ways (TMA):
//   0  cp.async: every lane issues 16-byte copies of the step's rows (address arithmetic and
//      issue slots spent by all 32 lanes, STAGES - 1 steps in flight);
//   1  TMA (sm_90): one lane issues the step's boxes of rows (min(TOKENS, PAGE) rows x 64
//      elements, 128-byte swizzled) against an mbarrier per slot; STAGES steps in flight, the
//      other lanes spend no issue slots on loads.
// Ring slots are XOR-swizzled per 16-byte chunk (chunk ^ row % 8): ldmatrix's eight rows and a
// warp's row reads hit distinct banks. With TMA a tile is stored as HEAD_DIM / 64 halves of
// 128-byte rows, the layout TMA's 128-byte swizzle writes. Scores are in log2 units (scaled by log2(e)/sqrt(HEAD_DIM)).
// Compiled by NVRTC: no toolkit headers, 16-bit floats are raw words converted in PTX; the copies,
// ldmatrix, conversions and MMAs it shares with the other kernels are ktune_device.cuh's.
#ifndef KT_BF16
#define KT_BF16 0
#endif
#ifndef MMA
#define MMA 0
#endif
#ifndef L2HINT
#define L2HINT 0
#endif
#ifndef TMA
#define TMA 0
#endif
#ifndef REFERENCE
#define REFERENCE 0  // 1: the reference kernel's build, which reads no tunable
#endif

#include "ktune_device.cuh"

using Elem = Float16<KT_BF16>;
#define NEG_INF __int_as_float(0xff800000)  // NVRTC has no <math.h> INFINITY

#define THREADS (WARPS * 32)
#define LPR (HEAD_DIM / VEC)
#define RPI (32 / LPR)
#define ROWS_PER_LANE (TOKENS / RPI)
#define ROW_BYTES (HEAD_DIM * 2)
#define CHUNKS_PER_ROW (ROW_BYTES / 16)
#define SLOT_BYTES (2 * TOKENS * ROW_BYTES)  // K rows, then V rows
#define SWZ (CHUNKS_PER_ROW < 8 ? CHUNKS_PER_ROW : 8)
#define KSTEPS (HEAD_DIM / 16)
#if !REFERENCE
static_assert(!MMA || (TOKENS % 16 == 0 && QPB <= 8), "MMA steps are whole 16-token tiles; heads fit 8 rows");
static_assert(VEC == 4 || VEC == 8, "a lane reads 8 or 16 bytes of a row");
static_assert(LPR <= 32 && 32 % LPR == 0, "the lanes of a warp cover whole rows");
static_assert(TOKENS % RPI == 0, "a step is whole instructions of rows");
static_assert((TOKENS * CHUNKS_PER_ROW) % 32 == 0, "a step is whole cp.async rounds");
static_assert(PAGE % TOKENS == 0 || TOKENS % PAGE == 0, "steps and pages nest");
static_assert(GROUP % QPB == 0, "q heads per block divide the GQA group");
static_assert(!TMA || (HEAD_DIM % 64 == 0 && (TOKENS < PAGE ? TOKENS : PAGE) % 8 == 0),
              "TMA boxes are 64-element halves of rows, whole 1 KiB swizzle atoms of 8 rows");
#endif

#if !REFERENCE
extern __shared__ __align__(16) char smem[];  // the warps' rings, then the merge area

// Byte offset of 16-byte chunk `chunk` of row `row` in a ring slot's K (or V) tile.
__device__ __forceinline__ int chunk_at(int row, int chunk) {
#if TMA
  return (chunk / 8) * (TOKENS * 128) + row * 128 + (((chunk % 8) ^ (row % 8)) * 16);
#else
  return row * ROW_BYTES + ((chunk ^ (row % SWZ)) * 16);
#endif
}

struct Work {
  int seq, kv_head, q_head0, split, splits_used, t0, t1;
};

// The block's sequence, heads and token range; false when its split starts past the sequence.
__device__ __forceinline__ bool block_work(const int* __restrict__ lengths, int max_pages, Work& w) {
  constexpr int slices = GROUP / QPB;
  w.seq = blockIdx.z;
  w.kv_head = blockIdx.y / slices;
  w.q_head0 = w.kv_head * GROUP + (blockIdx.y % slices) * QPB;
  w.split = blockIdx.x;
  const int len = lengths[w.seq];
  const int chunk = (max_pages + SPLITS - 1) / SPLITS * PAGE;
  w.splits_used = (len + chunk - 1) / chunk;
  w.t0 = w.split * chunk;
  w.t1 = min(len, w.t0 + chunk);
  return w.t0 < len;
}

// Issues the cp.asyncs of one step's K and V rows into a ring slot.
__device__ __forceinline__ void load_step(const u16* __restrict__ K, const u16* __restrict__ V,
                                          const int* __restrict__ table, const Work& w, int kv_heads, int t_step,
                                          u32 slot, int lane) {
  constexpr int rounds = TOKENS * CHUNKS_PER_ROW / 32;
  int page = 0;
  if constexpr (PAGE % TOKENS == 0) page = table[t_step / PAGE];  // the whole step lies in one page
#pragma unroll
  for (int r = 0; r < rounds; ++r) {
    const int c = lane + r * 32, row = c / CHUNKS_PER_ROW, col = c % CHUNKS_PER_ROW;
    const int t = t_step + row;
    const bool valid = t < w.t1;
    if constexpr (PAGE % TOKENS != 0) page = valid ? table[t / PAGE] : 0;
    const long off = ((static_cast<long>(page) * kv_heads + w.kv_head) * PAGE + t % PAGE) * HEAD_DIM + col * 8;
    const u32 dst = slot + chunk_at(row, col);
    // An invalid row (past the split's end) is zero-filled: its V never meets a NaN pool. L2HINT
    // 1 and 2 have L2 fetch the 128 or 256 bytes around each copy (a row's other chunks).
    cp_async16<L2HINT * 128>(dst, valid ? K + off : K, valid);
    cp_async16<L2HINT * 128>(dst + TOKENS * ROW_BYTES, valid ? V + off : V, valid);
  }
  cp_async_commit();
}

#if TMA
#define BOX_ROWS (TOKENS < PAGE ? TOKENS : PAGE)
#define BOX_BYTES (BOX_ROWS * 128)

// Lane 0's TMA copies of one step's K and V rows into a ring slot: a box per page (or the step's
// part of one page) and 64-element half of a row. Boxes that start past the split's end are not
// read (their rows are zeroed by the consumer); the pool is seen as [pages * kv_heads * PAGE rows,
// HEAD_DIM].
__device__ __forceinline__ void tma_step(const TensorMap* tmK, const TensorMap* tmV, const int* __restrict__ table,
                                         const Work& w, int kv_heads, int t_step, u32 slot, u32 bar) {
  constexpr int boxes = TOKENS / BOX_ROWS, halves = HEAD_DIM / 64;
  int live = 0;
#pragma unroll
  for (int b = 0; b < boxes; ++b) live += t_step + b * BOX_ROWS < w.t1;
  mbar_expect_tx(bar, live * halves * 2 * BOX_BYTES);
#pragma unroll
  for (int b = 0; b < boxes; ++b) {
    const int t = t_step + b * BOX_ROWS;
    if (t >= w.t1) break;
    const int row = (table[t / PAGE] * kv_heads + w.kv_head) * PAGE + t % PAGE;
#pragma unroll
    for (int h = 0; h < halves; ++h) {
      const u32 dst = slot + h * (TOKENS * 128) + b * BOX_BYTES;
      tma_load(dst, tmK, h * 64, row, bar);
      tma_load(dst + TOKENS * ROW_BYTES, tmV, h * 64, row, bar);
    }
  }
}

// Rows past the split's end hold another sequence's tokens or were never copied: their scores
// are masked, and their V rows are zeroed so that P's zeros never meet a NaN there.
__device__ __forceinline__ void zero_tail(u32 slot, int rows_valid, int lane) {
  char* v = smem + (slot - smem_addr(smem)) + TOKENS * ROW_BYTES;
  for (int c = rows_valid * CHUNKS_PER_ROW + lane; c < TOKENS * CHUNKS_PER_ROW; c += 32)
    *reinterpret_cast<uint4*>(v + chunk_at(c / CHUNKS_PER_ROW, c % CHUNKS_PER_ROW)) = make_uint4(0, 0, 0, 0);
  __syncwarp();
}
#endif

// The per-warp merge area: red[warp][head][0..HEAD_DIM) = o, then m, l.
#define RED_STRIDE (HEAD_DIM + 2)

#if MMA
// c += A B for the rows 0..7 of A (a0: k 0..7, a2: k 8..15); rows 8..15 are zero.
__device__ __forceinline__ void mma_top(float (&c)[4], u32 a0, u32 a2, u32 b0, u32 b1) {
  const u32 a[4] = {a0, 0u, a2, 0u};
  Elem::mma(c, a, b0, b1);
}

// Lane (g = lane / 4, t = lane % 4) of the quad of head g: its q fragments, running max m (the
// quad's), its share of the sum l, and O's row g at columns 8i + 2t, 8i + 2t + 1.
struct Scheme {
  u32 qa[KSTEPS][2];
  float m = -1e30f, l = 0.f;
  float o[HEAD_DIM / 8][2];

  __device__ __forceinline__ void init(const u16* __restrict__ Q, const Work& w, int q_heads, int lane) {
    const int g = lane / 4, t = lane % 4;
    const u32* q = reinterpret_cast<const u32*>(Q + (static_cast<long>(w.seq) * q_heads + w.q_head0 + g) * HEAD_DIM);
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      qa[ks][0] = g < QPB ? q[ks * 8 + t] : 0u;
      qa[ks][1] = g < QPB ? q[ks * 8 + 4 + t] : 0u;
    }
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 8; ++i) o[i][0] = o[i][1] = 0.f;
  }

  __device__ __forceinline__ void step(u32 slot, int t_step, int t_end, int lane) {
    constexpr int tiles = TOKENS / 16;
    const int t = lane % 4, mi = lane / 8, r = lane % 8;
    const float scale = 1.4426950408889634f * rsqrtf(static_cast<float>(HEAD_DIM));
    // s[j][0..1]: tokens 16j + 2t, +1; s[j][2..3]: tokens 16j + 8 + 2t, +1 (row g only: rows
    // g + 8 are padding and never read).
    float s[tiles][4];
#pragma unroll
    for (int j = 0; j < tiles; ++j) {
      float c0[4] = {0.f, 0.f, 0.f, 0.f}, c1[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        u32 b[4];
        ldmatrix_x4(b, slot + chunk_at(16 * j + (mi / 2) * 8 + r, 2 * ks + mi % 2));
        mma_top(c0, qa[ks][0], qa[ks][1], b[0], b[1]);
        mma_top(c1, qa[ks][0], qa[ks][1], b[2], b[3]);
      }
      const int base = t_step + 16 * j + 2 * t;
      s[j][0] = base < t_end ? c0[0] * scale : NEG_INF;
      s[j][1] = base + 1 < t_end ? c0[1] * scale : NEG_INF;
      s[j][2] = base + 8 < t_end ? c1[0] * scale : NEG_INF;
      s[j][3] = base + 9 < t_end ? c1[1] * scale : NEG_INF;
    }
    float mx = m;
#pragma unroll
    for (int j = 0; j < tiles; ++j) mx = fmaxf(mx, fmaxf(fmaxf(s[j][0], s[j][1]), fmaxf(s[j][2], s[j][3])));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float keep = exp2f(m - mx);
    m = mx;
    l *= keep;
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 8; ++i) o[i][0] *= keep, o[i][1] *= keep;
#pragma unroll
    for (int j = 0; j < tiles; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) l += s[j][e] = exp2f(s[j][e] - mx);
      const u32 p0 = Elem::pack2(s[j][0], s[j][1]), p1 = Elem::pack2(s[j][2], s[j][3]);
#pragma unroll
      for (int dp = 0; dp < KSTEPS; ++dp) {
        u32 b[4];
        ldmatrix_x4_trans(b, slot + TOKENS * ROW_BYTES + chunk_at(16 * j + (mi % 2) * 8 + r, 2 * dp + mi / 2));
        float c0[4] = {o[2 * dp][0], o[2 * dp][1], 0.f, 0.f}, c1[4] = {o[2 * dp + 1][0], o[2 * dp + 1][1], 0.f, 0.f};
        mma_top(c0, p0, p1, b[0], b[1]);
        mma_top(c1, p0, p1, b[2], b[3]);
        o[2 * dp][0] = c0[0], o[2 * dp][1] = c0[1], o[2 * dp + 1][0] = c1[0], o[2 * dp + 1][1] = c1[1];
      }
    }
  }

  __device__ __forceinline__ void write(float* red, int warp, int lane) {
    const int g = lane / 4, t = lane % 4;
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (g >= QPB) return;
    float* p = red + (warp * QPB + g) * RED_STRIDE;
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 8; ++i) p[8 * i + 2 * t] = o[i][0], p[8 * i + 2 * t + 1] = o[i][1];
    if (t == 0) p[HEAD_DIM] = m, p[HEAD_DIM + 1] = l;
  }
};

#else  // !MMA

// VEC elements of a row of a ring slot's tile as f32.
__device__ __forceinline__ void load_vec(const char* tile, int row, int col, float (&x)[VEC]) {
  const char* at = tile + chunk_at(row, col * VEC / 8) + col * VEC * 2 % 16;
#if VEC == 8
  const uint4 w = *reinterpret_cast<const uint4*>(at);
  Elem::unpack2(w.x, x[0], x[1]);
  Elem::unpack2(w.y, x[2], x[3]);
  Elem::unpack2(w.z, x[4], x[5]);
  Elem::unpack2(w.w, x[6], x[7]);
#else
  const uint2 w = *reinterpret_cast<const uint2*>(at);
  Elem::unpack2(w.x, x[0], x[1]);
  Elem::unpack2(w.y, x[2], x[3]);
#endif
}

// The lane's VEC columns of its q heads (pre-scaled to log2 units), the running max m and sum l
// per head (the same in every lane), and acc[h] for those columns, summed over the lane's rows.
struct Scheme {
  float q[QPB][VEC];
  float m[QPB], l[QPB], acc[QPB][VEC];

  __device__ __forceinline__ void init(const u16* __restrict__ Q, const Work& w, int q_heads, int lane) {
    const float scale = 1.4426950408889634f * rsqrtf(static_cast<float>(HEAD_DIM));
#pragma unroll
    for (int h = 0; h < QPB; ++h) {
      const u16* qrow = Q + (static_cast<long>(w.seq) * q_heads + w.q_head0 + h) * HEAD_DIM + (lane % LPR) * VEC;
      m[h] = -1e30f, l[h] = 0.f;
#pragma unroll
      for (int e = 0; e < VEC; ++e) q[h][e] = Elem::to_f32(qrow[e]) * scale, acc[h][e] = 0.f;
    }
  }

  __device__ __forceinline__ void step(u32 slot_addr, int t_step, int t_end, int lane) {
    const char* slot = smem + (slot_addr - smem_addr(smem));
    const int sub = lane / LPR, col = lane % LPR;
    float s[QPB][ROWS_PER_LANE];
#pragma unroll
    for (int j = 0; j < ROWS_PER_LANE; ++j) {
      float k[VEC];
      load_vec(slot, j * RPI + sub, col, k);
#pragma unroll
      for (int h = 0; h < QPB; ++h) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < VEC; ++e) dot = fmaf(q[h][e], k[e], dot);
#pragma unroll
        for (int o = LPR / 2; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        s[h][j] = t_step + j * RPI + sub < t_end ? dot : NEG_INF;
      }
    }
#pragma unroll
    for (int h = 0; h < QPB; ++h) {
      float mx = m[h];
#pragma unroll
      for (int j = 0; j < ROWS_PER_LANE; ++j) mx = fmaxf(mx, s[h][j]);
#pragma unroll
      for (int o = LPR; o < 32; o *= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float keep = exp2f(m[h] - mx);
      m[h] = mx;
      l[h] *= keep;
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[h][e] *= keep;
#pragma unroll
      for (int j = 0; j < ROWS_PER_LANE; ++j) l[h] += s[h][j] = exp2f(s[h][j] - mx);
    }
#pragma unroll
    for (int j = 0; j < ROWS_PER_LANE; ++j) {
      float v[VEC];
      load_vec(slot + TOKENS * ROW_BYTES, j * RPI + sub, col, v);
#pragma unroll
      for (int h = 0; h < QPB; ++h)
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[h][e] = fmaf(s[h][j], v[e], acc[h][e]);
    }
  }

  __device__ __forceinline__ void write(float* red, int warp, int lane) {
    // Lanes of one column (RPI of them, one per row offset) hold partial sums: combine them.
#pragma unroll
    for (int h = 0; h < QPB; ++h)
#pragma unroll
      for (int o = LPR; o < 32; o *= 2) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], o);
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[h][e] += __shfl_xor_sync(0xffffffffu, acc[h][e], o);
      }
    if (lane >= LPR) return;
#pragma unroll
    for (int h = 0; h < QPB; ++h) {
      float* p = red + (warp * QPB + h) * RED_STRIDE;
#pragma unroll
      for (int e = 0; e < VEC; ++e) p[lane * VEC + e] = acc[h][e];
      if (lane == 0) p[HEAD_DIM] = m[h], p[HEAD_DIM + 1] = l[h];
    }
  }
};
#endif  // MMA

// Merges (m, l, o) triples by their maxima: o and l of each rescaled to the largest m.
struct Merge {
  float m = -1e30f, l = 0.f, o = 0.f;
  __device__ __forceinline__ void add(float m2, float l2, float o2) {
    const float mx = fmaxf(m, m2), a = exp2f(m - mx), b = exp2f(m2 - mx);
    m = mx, l = l * a + l2 * b, o = o * a + o2 * b;
  }
};

// Merges the per-warp states in `red`; writes the output, or the split's partial and, for the
// last split of a sequence to finish, the merged output.
__device__ void finish(const float* red, const Work& w, int q_heads, u16* __restrict__ out, float* __restrict__ ws,
                       int* __restrict__ locks) {
  const bool alone = w.splits_used == 1;
  for (int i = threadIdx.x; i < QPB * HEAD_DIM; i += THREADS) {
    const int h = i / HEAD_DIM, d = i % HEAD_DIM;
    Merge r;
    for (int wp = 0; wp < WARPS; ++wp) {
      const float* p = red + (wp * QPB + h) * RED_STRIDE;
      r.add(p[HEAD_DIM], p[HEAD_DIM + 1], p[d]);
    }
    const long row = static_cast<long>(w.seq) * q_heads + w.q_head0 + h;
    if (alone) {
      out[row * HEAD_DIM + d] = Elem::from_f32(r.o / r.l);
    } else {
      float* part = ws + (row * SPLITS + w.split) * RED_STRIDE;
      part[d] = r.o;
      if (d == 0) part[HEAD_DIM] = r.m, part[HEAD_DIM + 1] = r.l;
    }
  }
  if (alone) return;
  __threadfence();
  __syncthreads();
  __shared__ int is_last;
  const int lock = blockIdx.z * gridDim.y + blockIdx.y;
  if (threadIdx.x == 0) {
    is_last = atomicAdd(&locks[lock], 1) == w.splits_used - 1;
    if (is_last) locks[lock] = 0;  // for the next launch
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  for (int i = threadIdx.x; i < QPB * HEAD_DIM; i += THREADS) {
    const int h = i / HEAD_DIM, d = i % HEAD_DIM;
    const long row = static_cast<long>(w.seq) * q_heads + w.q_head0 + h;
    Merge r;
    for (int s = 0; s < w.splits_used; ++s) {
      const volatile float* part = ws + (row * SPLITS + s) * RED_STRIDE;
      r.add(part[HEAD_DIM], part[HEAD_DIM + 1], part[d]);
    }
    out[row * HEAD_DIM + d] = Elem::from_f32(r.o / r.l);
  }
}

#if TMA
#define KV_PARAMS const __grid_constant__ TensorMap tmK, const __grid_constant__ TensorMap tmV
#else
#define KV_PARAMS const u16* __restrict__ K, const u16* __restrict__ V
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
    paged_attention(const u16* __restrict__ Q, KV_PARAMS, const int* __restrict__ page_table,
                    const int* __restrict__ lengths, u16* __restrict__ out, float* __restrict__ ws,
                    int* __restrict__ locks, int kv_heads, int max_pages) {
  Work w;
  if (!block_work(lengths, max_pages, w)) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int q_heads = kv_heads * GROUP;
  const int* table = page_table + static_cast<long>(w.seq) * max_pages;
  Scheme st;
  st.init(Q, w, q_heads, lane);

  // Warp `warp` takes steps warp, warp + WARPS, ... of the split through its own ring.
  const int steps = (w.t1 - w.t0 + TOKENS - 1) / TOKENS;
  const int mine = steps > warp ? (steps - warp + WARPS - 1) / WARPS : 0;
  auto step_start = [&](int i) { return w.t0 + (warp + i * WARPS) * TOKENS; };
#if TMA
  // Swizzled boxes need 1 KiB alignment (the spec asks for 1 KiB of slack).
  const u32 raw = smem_addr(smem);
  const u32 ring = ((raw + 1023) & ~1023u) + warp * STAGES * SLOT_BYTES;
  __shared__ __align__(8) unsigned long long full[WARPS * STAGES];
  const u32 bars = smem_addr(full) + warp * STAGES * 8;
  if (lane == 0) {
    for (int s = 0; s < STAGES; ++s) mbar_init(bars + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int i = 0; i < STAGES && i < mine; ++i)
      tma_step(&tmK, &tmV, table, w, kv_heads, step_start(i), ring + i * SLOT_BYTES, bars + 8 * i);
  }
  __syncwarp();
  for (int i = 0; i < mine; ++i) {
    const int s = i % STAGES;
    mbar_wait(bars + 8 * s, (i / STAGES) & 1);
    const int t_step = step_start(i);
    if (t_step + TOKENS > w.t1) zero_tail(ring + s * SLOT_BYTES, w.t1 - t_step, lane);
    st.step(ring + s * SLOT_BYTES, t_step, w.t1, lane);
    __syncwarp();  // every lane is done with the slot before it is refilled
    if (lane == 0 && i + STAGES < mine)
      tma_step(&tmK, &tmV, table, w, kv_heads, step_start(i + STAGES), ring + s * SLOT_BYTES, bars + 8 * s);
  }
#else
  const u32 ring = smem_addr(smem) + warp * STAGES * SLOT_BYTES;
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) {
    if (i < mine)
      load_step(K, V, table, w, kv_heads, step_start(i), ring + i * SLOT_BYTES, lane);
    else
      cp_async_commit();
  }
  for (int i = 0; i < mine; ++i) {
    cp_async_wait<STAGES - 2>();
    __syncwarp();
    const int next = i + STAGES - 1;  // into the slot computed in the previous iteration
    if (next < mine)
      load_step(K, V, table, w, kv_heads, step_start(next), ring + (next % STAGES) * SLOT_BYTES, lane);
    else
      cp_async_commit();
    st.step(ring + (i % STAGES) * SLOT_BYTES, step_start(i), w.t1, lane);
    __syncwarp();
  }
  cp_async_wait<0>();
#endif
  __syncthreads();  // every ring is drained: reuse the memory for the merge
  float* red = reinterpret_cast<float*>(smem);
  st.write(red, warp, lane);
  __syncthreads();
  finish(red, w, q_heads, out, ws, locks);
}
#endif  // !REFERENCE

// The reference: one block per (sequence, q head), f32 throughout, natural exp, the plain
// softmax of the textbook (max, sum, then the weighted V rows), tokens read through the same page
// table. Launched with HEAD_DIM threads (at most 1024), one per output element.
extern "C" __global__ void paged_attention_reference(const u16* __restrict__ Q, const u16* __restrict__ K,
                                                     const u16* __restrict__ V, const int* __restrict__ page_table,
                                                     const int* __restrict__ lengths, u16* __restrict__ out,
                                                     int kv_heads, int max_pages) {
  __shared__ float qs[HEAD_DIM];
  __shared__ float p[HEAD_DIM];
  __shared__ float red[HEAD_DIM];
  const int seq = blockIdx.y, qh = blockIdx.x, d = threadIdx.x, kvh = qh / GROUP;
  const int len = lengths[seq];
  const long qrow = (static_cast<long>(seq) * kv_heads * GROUP + qh) * HEAD_DIM;
  qs[d] = Elem::to_f32(Q[qrow + d]);
  __syncthreads();
  auto row = [&](int t) {
    const int page = page_table[static_cast<long>(seq) * max_pages + t / PAGE];
    return ((static_cast<long>(page) * kv_heads + kvh) * PAGE + t % PAGE) * HEAD_DIM;
  };
  auto score = [&](int t) {
    float s = 0.f;
    const long r = row(t);
    for (int e = 0; e < HEAD_DIM; ++e) s += qs[e] * Elem::to_f32(K[r + e]);
    return s / sqrtf(static_cast<float>(HEAD_DIM));
  };
  auto block_reduce = [&](float x, bool take_max) {
    red[d] = x;
    __syncthreads();
    for (int o = HEAD_DIM / 2; o > 0; o /= 2) {
      if (d < o) red[d] = take_max ? fmaxf(red[d], red[d + o]) : red[d] + red[d + o];
      __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
  };
  float mx = NEG_INF;
  for (int t = d; t < len; t += HEAD_DIM) mx = fmaxf(mx, score(t));
  mx = block_reduce(mx, true);
  float sum = 0.f;
  for (int t = d; t < len; t += HEAD_DIM) sum += expf(score(t) - mx);
  sum = block_reduce(sum, false);
  float acc = 0.f;
  for (int t0 = 0; t0 < len; t0 += HEAD_DIM) {
    p[d] = t0 + d < len ? expf(score(t0 + d) - mx) / sum : 0.f;
    __syncthreads();
    for (int i = 0; i < HEAD_DIM && t0 + i < len; ++i) acc += p[i] * Elem::to_f32(V[row(t0 + i) + d]);
    __syncthreads();
  }
  out[qrow + d] = Elem::from_f32(acc);
}
