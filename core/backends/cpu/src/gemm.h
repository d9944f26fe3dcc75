#pragma once
// BLIS-style blocked f32 GEMM, row-major: C = alpha * A[M,K] * B[K,N] + beta * C.
// Cache blocks MC x KC of A and KC x NC of B are packed into micro-panels (MR rows / NR columns,
// zero-padded), and an MR x NR register micro-kernel runs over them. Threads split C into a
// grid of sub-blocks, each one blocked and packed by its own thread with its own buffers.
// The packing reads operands through views, so other drivers (grouped_gemm.h) reuse the blocked
// loop with gathered rows, transposed operands and scattered output rows fused into it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ktune/config.h"
#include "launch.h"
#include "thread_pool.h"
#include "ukernels.h"

namespace ktune::cpu {

struct GemmPlan {
  int MR = 0, NR = 0, vec = 0, threads = 1;
  // 0: jc > pc > ic > jr > ir (a packed KC x NC panel of B stays in L3/L2, A blocks stream);
  // 1: ic > pc > jc > ir > jr (a packed MC x KC block of A stays in L2, B panels stream and
  //    are repacked for every block of A).
  int loop_order = 0;
  long mc = 0, kc = 0, nc = 0;  // blocks rounded down to whole micro-panels
  GemmUKernel ukernel = nullptr;
  const char* isa = "";
  std::size_t workspace_floats_per_thread() const;
};

// Checks the blocking values (MR NR vec MC KC NC threads, loop_order when present) of `family`'s
// config against this CPU, with the errors plan_gemm documents.
GemmPlan plan_blocking(const std::map<std::string, long>& values, int hw_threads, double workspace_limit,
                       const std::string& family);

// Checks the config against this CPU; throws TrialFailure (CompileError for missing, unknown or
// impossible parameters and tiles without a micro-kernel; LaunchError for more threads than the
// hardware has or more workspace than `workspace_limit` bytes).
GemmPlan plan_gemm(const Config& config, int hw_threads, double workspace_limit);

struct GemmOperands {
  const float* A;
  const float* B;
  float* C;
  long M, N, K;
  float alpha, beta;
};

// A row-major operand as the packing reads it. Logical element (i, j) is data[row(i) * ld + j],
// or data[row(j) * ld + i] when `trans`, where row(x) = rows ? rows[x] : x: the index is a gather
// fused into the packing (MoE's permute_x / permute_y), `trans` reads op(X) = X^T in place.
struct MatrixView {
  const float* data = nullptr;
  long ld = 0;
  const std::int32_t* rows = nullptr;
  bool trans = false;
};

// The output: element (i, j) at data[row(i) * ld + j]; `rows` scatters each row of the product
// to its own place (computed beside in the edge tile, then stored).
struct OutputView {
  float* data = nullptr;
  long ld = 0;
  const std::int32_t* rows = nullptr;
};

// C[m0:m1, n0:n1] = alpha * A[m0:m1, 0:K] * B[0:K, n0:n1] + beta * C on the calling thread, blocked
// and packed as `plan` says, with `ws` its workspace (workspace_floats_per_thread()). K == 0
// scales C by beta (writes zeros when beta is 0). Returns early when `stop` fires.
void gemm_block(const GemmPlan& plan, const MatrixView& A, const MatrixView& B, const OutputView& C, long K,
                float alpha, float beta, long m0, long m1, long n0, long n1, float* ws, StopFlag& stop);

// One launch. Returns false when `stop` fired (the deadline passed) before C was complete.
bool run_gemm(const GemmPlan& plan, const GemmOperands& op, std::vector<AlignedBuffer<float>>& workspace,
              ThreadPool& pool, StopFlag& stop);

}  // namespace ktune::cpu
