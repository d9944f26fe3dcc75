#pragma once
// Weight-only int8 matmul: y[batch, out] = x[batch, in] . (w[out, in] * scale[out])^T, x and y f32.
// Weights are dequantized on the fly inside the micro-kernel (never materialized as f32):
// threads take contiguous ranges of OB-output blocks; within a block, IB-long slices of `in`
// keep an OB x IB tile of w in cache while every BT-row tile of x passes over it, U outputs at
// a time. The per-channel scale is applied once per output at the end.
#include <cstdint>

#include "ktune/config.h"
#include "launch.h"
#include "thread_pool.h"
#include "ukernels.h"

namespace ktune::cpu {

struct QmmPlan {
  long OB = 0, IB = 0;  // rounded to whole micro-blocks (U outputs, vec lanes)
  int BT = 1, U = 1, vec = 4, threads = 1;
  const UKernelSet* set = nullptr;
};

// Throws TrialFailure: CompileError for missing/unknown/impossible parameters or a micro-block
// with no kernel, LaunchError for more threads than the hardware has.
QmmPlan plan_qmatmul(const Config& config, int hw_threads);

struct QmmOperands {
  const float* x;
  const std::int8_t* w;
  const float* scale;
  float* y;
  long batch, out, in;
};

// One launch. Returns false when `stop` fired before y was complete.
bool run_qmatmul(const QmmPlan& plan, const QmmOperands& op, ThreadPool& pool, StopFlag& stop);

}  // namespace ktune::cpu
