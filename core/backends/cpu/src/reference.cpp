#include "reference.h"

#include <algorithm>

namespace ktune::cpu {

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// The reference runs once per problem but must stay quick at 2048^3: let the compiler emit a
// vectorized clone per ISA (chosen at load time), keeping double accumulation everywhere.
#define KTUNE_REF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KTUNE_REF_CLONES
#endif

// acc[r][j] += a[r] * b[j] for a block of rows: one row of B feeds kRows accumulator rows.
constexpr long kRows = 8, kCols = 512;

KTUNE_REF_CLONES void axpy_rows(double* acc, const double* a, const float* b, long n, long rows) {
  for (long r = 0; r < rows; ++r) {
    const double s = a[r];
    double* out = acc + r * kCols;
    for (long j = 0; j < n; ++j) out[j] += s * static_cast<double>(b[j]);
  }
}

KTUNE_REF_CLONES double dot_i8(const float* x, const std::int8_t* w, long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(w[i]);
  return s;
}

}  // namespace

KTUNE_REF_CLONES double dot_f64(const double* x, const double* y, long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

std::vector<double> gemm_reference(const float* A, const float* B, long M, long N, long K, double alpha,
                                   ThreadPool& pool) {
  std::vector<double> C(static_cast<std::size_t>(M * N));
  const long row_blocks = (M + kRows - 1) / kRows, col_blocks = (N + kCols - 1) / kCols;
  const long tiles = row_blocks * col_blocks;
  const int T = pool.size();
  pool.run(T, [&](int t) {
    std::vector<double> acc(kRows * kCols), a(kRows);
    for (long tile = t; tile < tiles; tile += T) {
      const long i0 = tile / col_blocks * kRows, j0 = tile % col_blocks * kCols;
      const long rows = std::min(kRows, M - i0), cols = std::min(kCols, N - j0);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (long k = 0; k < K; ++k) {
        for (long r = 0; r < rows; ++r) a[r] = alpha * A[(i0 + r) * K + k];
        axpy_rows(acc.data(), a.data(), B + k * N + j0, cols, rows);
      }
      for (long r = 0; r < rows; ++r) std::copy_n(acc.data() + r * kCols, cols, C.data() + (i0 + r) * N + j0);
    }
  });
  return C;
}

std::vector<double> qmatmul_reference(const float* x, const std::int8_t* w, const float* scale, long batch, long out,
                                      long in, ThreadPool& pool) {
  std::vector<double> y(static_cast<std::size_t>(batch * out));
  const int T = pool.size();
  pool.run(T, [&](int t) {
    for (long o = t; o < out; o += T)
      for (long b = 0; b < batch; ++b) y[b * out + o] = static_cast<double>(scale[o]) * dot_i8(x + b * in, w + o * in, in);
  });
  return y;
}

}  // namespace ktune::cpu
