#pragma once
// The seeded workload of gemm_a8w8_blockscale and its reference. Random f32 data, given a
// different magnitude per scale block (so a kernel that mixes up or drops block scales fails
// validation), quantized per block as DeepSeek-V3's recipe does: scale = max|x| / 127 (int8,
// symmetric codes in [-127, 127]) or max|x| / 448 (fp8 e4m3, nearest code). The reference is
// the exact dequantized product in f64.
#include <cstdint>
#include <vector>

#include "a8w8.h"
#include "launch.h"
#include "thread_pool.h"

namespace ktune::cpu {

// A rows x cols matrix of 8-bit codes with one f32 scale per (block_rows x 128) block.
struct BlockQuantized {
  long rows = 0, cols = 0, block_rows = 1;
  AlignedBuffer<std::uint8_t> codes;  // [rows, cols]
  std::vector<float> scales;          // [ceil(rows / block_rows), cols / 128]
  long scale_cols() const { return cols / kScaleBlock; }
  // The dequantized value code * scale, exact in double.
  double value(QType q, long r, long c) const;
};

// cols must be a multiple of 128. Activations: block_rows 1; weights: 128.
BlockQuantized quantize_random(QType q, long rows, long cols, long block_rows, std::uint64_t seed);

// Y[m, n] = sum_k value(A, m, k) * value(W, n, k), accumulated in double.
std::vector<double> a8w8_reference(QType q, const BlockQuantized& a, const BlockQuantized& w, ThreadPool& pool);

}  // namespace ktune::cpu
