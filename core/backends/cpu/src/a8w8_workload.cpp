#include "a8w8_workload.h"

#include <algorithm>
#include <cmath>

#include "ktune/host_data.h"
#include "low_precision.h"
#include "reference.h"

namespace ktune::cpu {

double BlockQuantized::value(QType q, long r, long c) const {
  const std::uint8_t code = codes[r * cols + c];
  const double v = q == QType::Int8 ? static_cast<double>(static_cast<std::int8_t>(code)) : kE4m3Table[code];
  return v * scales[(r / block_rows) * scale_cols() + c / kScaleBlock];
}

BlockQuantized quantize_random(QType q, long rows, long cols, long block_rows, std::uint64_t seed) {
  BlockQuantized b;
  b.rows = rows;
  b.cols = cols;
  b.block_rows = block_rows;
  b.codes.resize(rows * cols);
  const long brows = (rows + block_rows - 1) / block_rows, bcols = cols / kScaleBlock;
  b.scales.resize(brows * bcols);
  // Counter-based draws (std:: distributions differ between standard libraries): a seed is the
  // same workload on every host. Draw n of the block's stream is its magnitude, n+1.. its values.
  std::uint64_t n = 0;
  auto u = [&](double lo, double hi) { return static_cast<float>(lo + (hi - lo) * unit_draw(seed, n++)); };
  std::vector<float> x(block_rows * kScaleBlock);
  const float qmax = q == QType::Int8 ? 127.0f : kE4m3Max;
  for (long br = 0; br < brows; ++br)
    for (long bc = 0; bc < bcols; ++bc) {
      const long r0 = br * block_rows, r1 = std::min(rows, r0 + block_rows);
      // Magnitudes from 1/16 to 16 between blocks.
      const float m = std::exp2(u(-4.0, 4.0));
      float amax = 0;
      for (long i = 0; i < (r1 - r0) * kScaleBlock; ++i) {
        x[i] = m * u(-1.0, 1.0);
        amax = std::max(amax, std::fabs(x[i]));
      }
      const float scale = amax > 0 ? amax / qmax : 1.0f;
      b.scales[br * bcols + bc] = scale;
      for (long r = r0; r < r1; ++r)
        for (long k = 0; k < kScaleBlock; ++k) {
          const float v = x[(r - r0) * kScaleBlock + k] / scale;
          const auto i8 = static_cast<std::int8_t>(std::clamp(std::nearbyint(v), -127.0f, 127.0f));
          b.codes[r * cols + bc * kScaleBlock + k] = q == QType::Int8 ? static_cast<std::uint8_t>(i8) : e4m3_encode(v);
        }
    }
  return b;
}

namespace {

std::vector<double> dequantized(QType q, const BlockQuantized& b, ThreadPool& pool) {
  std::vector<double> v(static_cast<std::size_t>(b.rows * b.cols));
  const int T = pool.size();
  pool.run(T, [&](int t) {
    for (long r = t; r < b.rows; r += T)
      for (long c = 0; c < b.cols; ++c) v[r * b.cols + c] = b.value(q, r, c);
  });
  return v;
}

}  // namespace

std::vector<double> a8w8_reference(QType q, const BlockQuantized& a, const BlockQuantized& w, ThreadPool& pool) {
  const long M = a.rows, N = w.rows, K = a.cols;
  const std::vector<double> da = dequantized(q, a, pool), dw = dequantized(q, w, pool);
  std::vector<double> y(static_cast<std::size_t>(M * N));
  const int T = pool.size();
  pool.run(T, [&](int t) {
    for (long n = t; n < N; n += T)
      for (long m = 0; m < M; ++m) y[m * N + n] = dot_f64(da.data() + m * K, dw.data() + n * K, K);
  });
  return y;
}

}  // namespace ktune::cpu
