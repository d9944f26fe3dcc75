// ktune grouped_gemm's mma.sync kernel (WGMMA=0), included by grouped_gemm.cu, whose Problem,
// Operands and tunables it reads. A block computes a BLOCK_SIZE_M x BLOCK_SIZE_N tile of one
// expert's product (blockIdx.y is the expert; blocks past a small expert's rows return at once):
// mma.sync m16n8k16 on operands staged by a cp.async ring num_stages deep, fragments through
// ldmatrix (.trans where a tile is stored K-major: dW's A, dX's and dW's B). Shared rows are padded
// by 16 bytes so ldmatrix's eight rows land on distinct banks. hidden and intermediate are
// multiples of 8 (the spec's shape rule): every row copy is whole 16-byte chunks.
#pragma once

// 4 warps tile the block 2 x 2, 8 warps 4 x 2 along its longer side.
#define WARPS_M (num_warps == 4 ? 2 : BM >= BN ? 4 : 2)
#define WARPS_N (num_warps / WARPS_M)
#define WM (BM / WARPS_M)
#define WN (BN / WARPS_N)
#define MI (WM / 16)
#define NI (WN / 8)
#define PAD 8
// Tiles stored M- or N-major hold rows of K (stride BK + PAD); K-major tiles rows of M or N.
#define A_KMAJOR (PASS == 2)
#define B_KMAJOR (PASS != 0)
#define A_STAGE (A_KMAJOR ? BK * (BM + PAD) : BM * (BK + PAD))
#define B_STAGE (B_KMAJOR ? BK * (BN + PAD) : BN * (BK + PAD))

static_assert(BM % (16 * WARPS_M) == 0 && BN % (16 * WARPS_N) == 0, "warp tiles are whole 16 x 16 MMA tiles");
static_assert(BK % 16 == 0, "K tiles are whole MMA steps");
static_assert(num_warps == 4 || num_warps == 8, "4 or 8 warps a block");

// The rows x cols chunk grid of one tile, 8 elements (16 bytes) a chunk; row r's source is
// `src(r)` (already offset to the tile's first column), read only while r < rows_left and the column
// < cols_left. A copy past either edge reads nothing and zero-fills (`any` is a valid address).
template <int ROWS, int COLS, class Src>
__device__ __forceinline__ void load_rows(u16* tile, int rows_left, int cols_left, Src src, const u16* any, int tid) {
  constexpr int PER_ROW = COLS / 8, CHUNKS = ROWS * PER_ROW;
#pragma unroll
  for (int c = tid; c < CHUNKS; c += THREADS) {
    const int r = c / PER_ROW, col = (c % PER_ROW) * 8;
    const bool ok = r < rows_left && col < cols_left;
    cp_async16(smem_addr(tile + r * (COLS + PAD) + col), ok ? src(r) + col : any, ok);
  }
}

// K tile k0 of A and B into a stage.
__device__ __forceinline__ void load_stage(u16* As, u16* Bs, const Operands& o, const Problem& p, int m0, int n0,
                                           int k0, int tid) {
  if (A_KMAJOR)  // dW: rows of dy (k = expert-order positions), M = intermediate columns
    load_rows<BK, BM>(As, p.K - k0, p.M - m0, [&](int r) { return o.a_row(p, k0 + r) + m0; }, o.w, tid);
  else
    load_rows<BM, BK>(As, p.M - m0, p.K - k0, [&](int r) { return o.a_row(p, m0 + r) + k0; }, o.w, tid);
  if (B_KMAJOR)
    load_rows<BK, BN>(Bs, p.K - k0, p.N - n0, [&](int r) { return o.b_row(p, k0 + r) + n0; }, o.w, tid);
  else
    load_rows<BN, BK>(Bs, p.N - n0, p.K - k0, [&](int r) { return o.b_row(p, n0 + r) + k0; }, o.w, tid);
  cp_async_commit();
}

// One K tile's MMAs for the warp's WM x WN tile at (wm, wn) of the block's.
__device__ __forceinline__ void mma_stage(float (&acc)[MI][NI][4], const u16* As, const u16* Bs, int wm, int wn,
                                          int lane) {
  const int i = lane % 8, j = lane / 8;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    u32 a[MI][4], b[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const int m = wm + mi * 16;
      if (A_KMAJOR)  // stored [k][m]: the transposed load yields the row-major fragment
        ldmatrix_x4_trans(a[mi], smem_addr(As + (kk + (j / 2) * 8 + i) * (BM + PAD) + m + (j % 2) * 8));
      else
        ldmatrix_x4(a[mi], smem_addr(As + (m + lane % 16) * (BK + PAD) + kk + (lane / 16) * 8));
    }
#pragma unroll
    for (int ni = 0; ni < NI; ni += 2) {
      const int n = wn + ni * 8;
      u32 r[4];
      if (B_KMAJOR)  // stored [k][n]
        ldmatrix_x4_trans(r, smem_addr(Bs + (kk + (j % 2) * 8 + i) * (BN + PAD) + n + (j / 2) * 8));
      else  // stored [n][k]: already the column-major fragment
        ldmatrix_x4(r, smem_addr(Bs + (n + (j / 2) * 8 + i) * (BK + PAD) + kk + (j % 2) * 8));
      b[ni][0] = r[0], b[ni][1] = r[1], b[ni + 1][0] = r[2], b[ni + 1][1] = r[3];
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) Elem::mma(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    grouped_gemm(const int* __restrict__ offsets, const int* __restrict__ rows, const int* __restrict__ toks,
                 const u16* __restrict__ x, const u16* __restrict__ w, const u16* __restrict__ dy, u16* __restrict__ out,
                 const u16* __restrict__ xs, const u16* __restrict__ dys, u16* __restrict__ outs, int hidden,
                 int inter) {
  const Operands o{rows, toks, x, w, dy, out, xs, dys, outs, hidden, inter};
  const Problem p = expert_problem(offsets, blockIdx.y, hidden, inter);
  const int tiles_n = (p.N + BN - 1) / BN;
  const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
  if (m0 >= p.M) return;  // past a small expert's rows (the grid covers the busiest)

  extern __shared__ __align__(16) u16 smem[];
  u16* As = smem;
  u16* Bs = smem + STAGES * A_STAGE;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  float acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = acc[mi][ni][3] = 0.f;

  const int kt = (p.K + BK - 1) / BK;  // 0 for dW of an empty expert: its rows are written as zeros
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < kt)
      load_stage(As + s * A_STAGE, Bs + s * B_STAGE, o, p, m0, n0, s * BK, tid);
    else
      cp_async_commit();
  }
  for (int t = 0; t < kt; ++t) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // stage t landed for every thread, and stage t - 1 is free
    const int next = t + STAGES - 1;
    if (next < kt)
      load_stage(As + (next % STAGES) * A_STAGE, Bs + (next % STAGES) * B_STAGE, o, p, m0, n0, next * BK, tid);
    else
      cp_async_commit();
    mma_stage(acc, As + (t % STAGES) * A_STAGE, Bs + (t % STAGES) * B_STAGE, wm, wn, lane);
  }
  cp_async_wait<0>();

  // Lane (g = lane / 4, q = lane % 4) holds rows g and g + 8 of each 16 x 8 tile at columns 2q, 2q + 1.
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + wm + mi * 16 + g + h * 8;
      if (m >= p.M) continue;
      u16* row = o.out_row(p, m);
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const int n = n0 + wn + ni * 8 + 2 * q;
        if (n < p.N) *reinterpret_cast<u32*>(row + n) = Elem::pack2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
      }
    }
}
