#pragma once
// Block-scaled 8-bit GEMM as DeepSeek-V3 and aiter's gemm_a8w8_blockscale define it:
//   Y[M,N] = sum over 128-deep K blocks kb of (A_kb . W_kb^T) * a_scale[m,kb] * w_scale[n/128,kb]
// with A [M,K] and W [N,K] 8-bit codes (int8, or fp8 e4m3), row-major, and Y f32 or bf16.
// Blocked as gemm.h is: each thread takes a grid cell of Y; NC-column panels of W, MC-row
// blocks of A and KC-deep chunks of K (whole scale blocks) are packed into micro-panels, in
// one of two loop orders (A8Plan::loop_order). int8 stays int8 (exact int32 dots per block,
// a8w8_ukernels.h); fp8 is decoded through the e4m3 table with its scales folded in while
// packing and runs the f32 micro-kernels.
// bf16 outputs accumulate in an f32 block and are rounded once, at the end.
#include <cstdint>
#include <vector>

#include "a8w8_ukernels.h"
#include "ktune/config.h"
#include "launch.h"
#include "thread_pool.h"
#include "ukernels.h"

namespace ktune::cpu {

enum class QType { Int8, Fp8E4m3 };
enum class OutType { F32, Bf16 };

struct A8Plan {
  int MR = 0, NR = 0, vec = 0, threads = 1;
  long mc = 0, nc = 0, kc = 0;  // rounded to whole micro-panels and scale blocks
  // 0: jc > pc > ic, each NC x KC panel of W packed once and kept while all of A passes (bf16
  //    outputs accumulate in an M x NC f32 block); 1: jc > ic > pc, W repacked for each MC-row
  //    block of A (an MC x NC f32 block suffices).
  int loop_order = 0;
  long block_rows = 0;  // rows of the f32 block of bf16 outputs
  bool vnni = false;
  QType q = QType::Int8;
  OutType out = OutType::F32;
  A8UKernel int8_kernel = nullptr;  // int8
  bool biased_w = false;
  GemmUKernel f32_kernel = nullptr;  // fp8, on decoded panels
  const char* isa = "";
  std::size_t workspace_bytes_per_thread() const;
};

// Checks the config against this CPU and the problem's types; throws TrialFailure
// (CompileError for missing, unknown or impossible parameters and tiles without a kernel;
// LaunchError for more threads than the hardware has or more workspace than allowed).
A8Plan plan_a8w8(const Config& config, QType q, OutType out, long M, int hw_threads, double workspace_limit);

struct A8Operands {
  const std::uint8_t* a;  // [M,K] codes (int8 bit patterns, or e4m3)
  const float* a_scale;   // [M, K/128]
  const std::uint8_t* w;  // [N,K] codes
  const float* w_scale;   // [ceil(N/128), K/128]
  void* y;                // [M,N] f32 or bf16 bits
  long M, N, K;
};

// One launch. Returns false when `stop` fired before Y was complete.
bool run_a8w8(const A8Plan& plan, const A8Operands& op, std::vector<AlignedBuffer<unsigned char>>& workspace,
              ThreadPool& pool, StopFlag& stop);

}  // namespace ktune::cpu
