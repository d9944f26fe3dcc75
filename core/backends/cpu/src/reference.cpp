#include "reference.h"

#include <algorithm>
#include <cmath>

#include "grouped_gemm.h"

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

KTUNE_REF_CLONES double dot_f32(const float* a, const float* b, long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return s;
}

KTUNE_REF_CLONES void axpy(double* acc, double a, const float* b, long n) {
  for (long j = 0; j < n; ++j) acc[j] += a * static_cast<double>(b[j]);
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
      for (long b = 0; b < batch; ++b)
        y[b * out + o] = static_cast<double>(scale[o]) * dot_i8(x + b * in, w + o * in, in);
  });
  return y;
}

std::vector<double> grouped_gemm_reference(MoePass pass, const MoeRouting& routing, const float* x, const float* w,
                                           const float* dy, long hidden, long intermediate, ThreadPool& pool) {
  const long H = hidden, I = intermediate, R = routing.rows(), E = routing.experts, k = routing.topk;
  const int T = pool.size();
  if (pass == MoePass::DW) {
    std::vector<std::vector<long>> rows_of(E);
    for (long r = 0; r < R; ++r) rows_of[routing.expert[r]].push_back(r);
    std::vector<double> dw(static_cast<std::size_t>(E * I * H), 0.0);
    pool.run(T, [&](int t) {
      for (long en = t; en < E * I; en += T) {
        const long e = en / I, n = en % I;
        for (long r : rows_of[e]) axpy(dw.data() + en * H, dy[r * I + n], x + r / k * H, H);
      }
    });
    return dw;
  }
  const long width = pass == MoePass::Fwd ? I : H;
  std::vector<double> out(static_cast<std::size_t>(R * width), 0.0);
  pool.run(T, [&](int t) {
    for (long r = t; r < R; r += T) {
      const float* we = w + routing.expert[r] * I * H;
      double* o = out.data() + r * width;
      if (pass == MoePass::Fwd) {
        for (long n = 0; n < I; ++n) o[n] = dot_f32(x + r / k * H, we + n * H, H);
      } else {
        for (long n = 0; n < I; ++n) axpy(o, dy[r * I + n], we + n * H, H);
      }
    }
  });
  return out;
}

std::vector<double> paged_attention_reference(const PagedAttentionOperands& op, ThreadPool& pool) {
  const PagedAttentionShape& sh = op.shape;
  const long d = sh.head_dim, G = sh.group(), rows = sh.batch * sh.q_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> out(static_cast<std::size_t>(rows * d));
  const int T = pool.size();
  pool.run(T, [&](int t) {
    std::vector<double> w;
    for (long r = t * rows / T; r < (t + 1) * rows / T; ++r) {
      const long b = r / sh.q_heads, h = (r % sh.q_heads) / G, len = op.lengths[b];
      const float* q = op.q + r * d;
      auto row = [&](const float* cache, long tok) {
        const long page = op.page_table[b * sh.max_pages + tok / sh.page_size];
        return cache + ((page * sh.kv_heads + h) * sh.page_size + tok % sh.page_size) * d;
      };
      w.assign(static_cast<std::size_t>(len), 0.0);
      double mx = -INFINITY;
      for (long tok = 0; tok < len; ++tok) {
        const float* k = row(op.k, tok);
        double s = 0;
        for (long j = 0; j < d; ++j) s += static_cast<double>(q[j]) * static_cast<double>(k[j]);
        w[tok] = s * scale;
        mx = std::max(mx, w[tok]);
      }
      double sum = 0;
      for (long tok = 0; tok < len; ++tok) sum += (w[tok] = std::exp(w[tok] - mx));
      double* o = out.data() + r * d;
      for (long tok = 0; tok < len; ++tok) {
        const float* v = row(op.v, tok);
        for (long j = 0; j < d; ++j) o[j] += w[tok] / sum * static_cast<double>(v[j]);
      }
    }
  });
  return out;
}

}  // namespace ktune::cpu
