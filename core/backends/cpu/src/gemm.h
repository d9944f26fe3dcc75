#pragma once
// BLIS-style blocked f32 GEMM, row-major: C = alpha * A[M,K] * B[K,N] + beta * C.
// Cache blocks MC x KC of A and KC x NC of B are packed into micro-panels (MR rows / NR columns,
// zero-padded), and an MR x NR register micro-kernel runs over them. Threads split C into a
// grid of sub-blocks, each one blocked and packed by its own thread with its own buffers.
#include <cstddef>
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

// One launch. Returns false when `stop` fired (the deadline passed) before C was complete.
bool run_gemm(const GemmPlan& plan, const GemmOperands& op, std::vector<AlignedBuffer<float>>& workspace,
              ThreadPool& pool, StopFlag& stop);

}  // namespace ktune::cpu
