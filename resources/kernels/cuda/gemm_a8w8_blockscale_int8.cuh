// gemm_a8w8_blockscale.cu's kernel for int8 codes (q_dtype=int8, KT_INT8 1), on any NVIDIA GPU
// with int8 tensor cores and cp.async (sm_80 and later). Included by that file, whose Out,
// convert, store_pair and SCALE_BLOCK it uses; the tunables are -D defines of the spec
// (gemm_a8w8_blockscale.json):
//   BLOCK_M, BLOCK_N   block tile      WARPS_M, WARPS_N   warp grid (warp tiles of the block tile)
//   num_stages         cp.async ring depth in 128-deep K blocks (BLOCK_M + BLOCK_N rows of codes)
//   SPLITK             K slices (blockIdx.y), f32 partials summed by gemm_a8w8_blockscale_reduce
//
// A K block (128 codes, one scale block) is multiplied with four mma.sync.m16n8k32 s8 steps into
// int32 sums, exact (at most 128 * 128 * 128 = 2^21 in magnitude: no rounding, unlike fp8's
// tensor-core accumulation), which are then converted to f32 and added times a_scale[row, kb] *
// b_scale[column / 128, kb] to f32 accumulators: the reference's sum up to f32 rounding. Shared
// memory tiles are rows of 128 codes whose 16-byte chunks are XOR-swizzled by the row, so the 8
// rows an ldmatrix reads at one chunk sit on distinct banks; ldmatrix's 16-bit 8x8 matrices are
// exactly the s8 fragments of m16n8k32 (4 codes a 32-bit register). cp.async zero-fills rows past
// M and N; K is a multiple of 128 (a shape rule), so no K tail.
#define BM BLOCK_M
#define BN BLOCK_N
#define STAGES num_stages
#define THREADS (WARPS_M * WARPS_N * 32)
#define WTM (BM / WARPS_M)  // warp tile rows
#define WTN (BN / WARPS_N)  // warp tile columns
#define MT (WTM / 16)       // m16 MMA tiles of a warp tile
#define NT (WTN / 8)        // n8 MMA tiles of a warp tile
#define A_BYTES (BM * 128)  // a stage of A: BM rows of a K block
#define B_BYTES (BN * 128)  // of W
static_assert(STAGES >= 2, "the ring needs two stages");
static_assert(BM % (16 * WARPS_M) == 0 && BN % (16 * WARPS_N) == 0,
              "warp tiles of whole m16n8 MMA tiles, in pairs of n8");
static_assert(128 % WTN == 0, "a warp tile's columns lie in one 128-column weight scale block");
static_assert(SPLITK >= 1, "K slices");

// Each K block's int32 sums start at this value, 1.5 * 2^23 as an f32's bits: a sum x (|x| <
// 2^22) then holds the bits of the f32 1.5 * 2^23 + x, exactly, and one subtraction gives x as
// an f32 (no int-to-float conversion, a quarter-rate instruction as frequent as the MMAs).
#define SUM_BIAS 0x4B400000
#define SUM_BIAS_F 12582912.f

// Byte offset of 16-byte chunk c of row r in a tile of 128-byte rows (chunks XOR-swizzled by the
// row: unswizzled, the 8 rows an ldmatrix phase reads at one chunk are all on the same 4 banks).
__device__ __forceinline__ u32 chunk_at(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

// A K block of `Rows` rows of a [rows, K] code matrix into the tile at `dst` by cp.async, rows
// past the matrix zero-filled. Thread t copies chunk t % 8 of rows t / 8, t / 8 + THREADS / 8, ...:
// `src` is its first chunk's address, `rows_left` the matrix's rows from its first row on,
// `row_step` the bytes between its rows and `base` any valid address (what a zero fill names).
// `src` and `rows_left` are made opaque: the compiler would otherwise hoist every copy's address
// and predicate out of the K loop and keep them live across it, 3 registers a copy next to the
// accumulators.
template <int Rows>
__device__ __forceinline__ void load_rows(u32 dst, const signed char* src, int rows_left, long row_step,
                                          const signed char* base, int tid) {
  constexpr int CHUNKS = Rows * 8, PER_THREAD = (CHUNKS + THREADS - 1) / THREADS, PASS = THREADS / 8;
  asm volatile("" : "+l"(src), "+r"(rows_left));
#pragma unroll
  for (int j = 0; j < PER_THREAD; ++j, src += row_step) {
    if (CHUNKS % THREADS != 0 && tid + j * THREADS >= CHUNKS) break;
    const bool ok = j * PASS < rows_left;
    cp_async16(dst + chunk_at(tid / 8 + j * PASS, tid % 8), ok ? src : base, ok);
  }
}

// acc[mt][j] += the warp tile's product over one K block * scale[mt][h] (row g + 8h of m-tile
// mt's a_scale * b_scale): four k32 steps, each loading the warp tile's A and W fragments and
// multiplying every pair into the int32 sums.
__device__ __forceinline__ void multiply_block(float (&acc)[MT][NT][4], u32 a_tile, u32 b_tile, int lane,
                                               const float (&scale)[MT][2]) {
  int sum[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) sum[mt][j][e] = SUM_BIAS;
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    u32 a[MT][4], b[NT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) ldmatrix_x4(a[mt], a_tile + chunk_at(mt * 16 + (lane & 15), 2 * s + (lane >> 4)));
      // Two n8 tiles a load: matrices (j, chunk 2s), (j, 2s + 1), (j + 1, 2s), (j + 1, 2s + 1).
#pragma unroll
    for (int j = 0; j < NT; j += 2) {
      u32 r[4];
      ldmatrix_x4(r, b_tile + chunk_at((j + (lane >> 4)) * 8 + (lane & 7), 2 * s + ((lane >> 3) & 1)));
      b[j][0] = r[0];
      b[j][1] = r[1];
      b[j + 1][0] = r[2];
      b[j + 1][1] = r[3];
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < NT; ++j) mma_s8(sum[mt][j], a[mt], b[j][0], b[j][1]);
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][j][e] += (__int_as_float(sum[mt][j][e]) - SUM_BIAS_F) * scale[mt][e / 2];
}

// Block (tile blockIdx.x, M fastest: blocks running together share columns of W; K slice
// blockIdx.y) of WARPS_M x WARPS_N warps, each a WTM x WTN warp tile. It asks for one block an
// SM at least: with no such bound ptxas spills a few bytes for occupancy of its own accord. The
// spec's warp-tile limits keep every config within 255 registers, spill-free on sm_80 and sm_90a.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm_a8w8_blockscale_int8(const signed char* __restrict__ A, const signed char* __restrict__ W,
                              const float* __restrict__ a_scale, const float* __restrict__ b_scale, Out* __restrict__ y,
                              float* __restrict__ ws, int M, int N, int K) {
  const int tiles_m = (M + BM - 1) / BM;
  const int m0 = (blockIdx.x % tiles_m) * BM, n0 = (blockIdx.x / tiles_m) * BN;
  const int kb_count = K / SCALE_BLOCK, nb_count = (N + SCALE_BLOCK - 1) / SCALE_BLOCK;
  // Split-K: slice blockIdx.y's K blocks [kb0, kb0 + kbs); a slice past K's end sums nothing.
  const int per_slice = (kb_count + SPLITK - 1) / SPLITK, kb0 = blockIdx.y * per_slice;
  const int kbs = max(0, min(kb_count - kb0, per_slice));

  extern __shared__ __align__(16) unsigned char smem[];
  const u32 sA = smem_addr(smem), sB = sA + STAGES * A_BYTES;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = (warp / WARPS_N) * WTM, wn = (warp % WARPS_N) * WTN;
  // This thread's first chunk of A and of W in K block kb0 (load_rows).
  const signed char* a_src = A + (long)(m0 + tid / 8) * K + kb0 * SCALE_BLOCK + (tid % 8) * 16;
  const signed char* w_src = W + (long)(n0 + tid / 8) * K + kb0 * SCALE_BLOCK + (tid % 8) * 16;
  const long row_step = (long)(THREADS / 8) * K;
  const auto load_block = [&](int i) {
    const int s = i % STAGES;
    load_rows<BM>(sA + s * A_BYTES, a_src + i * SCALE_BLOCK, M - m0 - tid / 8, row_step, A, tid);
    load_rows<BN>(sB + s * B_BYTES, w_src + i * SCALE_BLOCK, N - n0 - tid / 8, row_step, W, tid);
  };
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) {
    if (i < kbs) load_block(i);
    cp_async_commit();
  }

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][j][e] = 0.f;
  const int row = m0 + wm + lane / 4;  // the thread's rows: row + 16 mt + 8 h
  const long nb = min((n0 + wn) / SCALE_BLOCK, nb_count - 1);
  for (int i = 0; i < kbs; ++i) {
    // The scales load while the block's codes land; rows past M scale zeros (cp.async's fill).
    const int kb = kb0 + i;
    const float sb = b_scale[nb * kb_count + kb];
    float scale[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row + 16 * mt + 8 * h;
        scale[mt][h] = r < M ? a_scale[(long)r * kb_count + kb] * sb : 0.f;
      }
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // block i has landed for every thread, and every warp is done with block i - 1's stage
    if (i + STAGES - 1 < kbs) load_block(i + STAGES - 1);
    cp_async_commit();
    const int s = i % STAGES;
    multiply_block(acc, sA + s * A_BYTES + wm * 128, sB + s * B_BYTES + wn * 128, lane, scale);
  }
  cp_async_wait<0>();

  // Split-K slices write f32 partials, summed into Y by gemm_a8w8_blockscale_reduce.
  float* slice = ws + (long)blockIdx.y * M * N;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = row + 16 * mt + 8 * h, n = n0 + wn + j * 8 + (lane % 4) * 2;
        if (SPLITK == 1)
          store_pair(y, M, N, m, n, acc[mt][j][2 * h], acc[mt][j][2 * h + 1]);
        else
          store_pair(slice, M, N, m, n, acc[mt][j][2 * h], acc[mt][j][2 * h + 1]);
      }
}
