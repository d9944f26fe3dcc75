#pragma once
// Grouped (MoE) GEMM on the CPU, as Unsloth's grouped GEMM computes it: every token is routed to
// `topk` experts; the routed rows of each expert are multiplied by that expert's weights. The
// per-expert products run through the blocked GEMM of gemm.h, whose packing reads gathered rows
// and whose stores scatter rows, which is how permute_x / permute_y are fused here.
//
// Tensors, with R = tokens * topk routed rows, row r = t * topk + j (token t's j-th choice):
//   x  [tokens, hidden]                 token order
//   w  [experts, intermediate, hidden]  Unsloth's [E, N, K]
//   y  [R, intermediate]                fwd:  y[r]  = x[t] w[e(r)]^T
//   dy [R, intermediate]                      (the gradient of y)
//   dx [R, hidden]                      dX:   dx[r] = dy[r] w[e(r)]    (summing over topk is the caller's)
//   dw [experts, intermediate, hidden]  dW:   dw[e] = sum over r of e: dy[r]^T x[t]
// The flags name the forward tensors: permute_x fuses the x side (the gather of x in fwd and dW,
// the scatter of dx in dX), permute_y the y side (the scatter of y in fwd, the gather of dy in dX
// and dW). Unfused, the same permutation is a separate pass over a contiguous buffer in expert
// order. Both flags are never set together (Unsloth's rule; the family's constraints say so).
#include <cstdint>
#include <string>
#include <vector>

#include "gemm.h"
#include "ktune/moe_routing.h"
#include "ktune/problem.h"

namespace ktune::cpu {

enum class MoePass { Fwd, DX, DW };
// "fwd", "dX", "dW"; anything else is an InputError naming the three.
MoePass moe_pass_from_string(const std::string& s);

// Which expert each routed row goes to, and the rows in expert order: the core's generator, which
// kernel specs share (ktune/moe_routing.h).
using Routing = MoeRouting;

// The routing the family measures `problem` on for the run's workload seed: its experts, tokens and
// topk through the seed rule kernel specs use too (moe_routing_seed), so that every pass of a shape,
// and a GPU spec's run of it, time the same experts' rows. InputError for a count out of range.
Routing grouped_gemm_routing(const Problem& problem, std::uint64_t workload_seed);

struct GroupedPlan {
  GemmPlan gemm;
  long item_cols = 0;  // NB: output columns of one work item
  bool permute_x = false, permute_y = false;
};

// Reads MR NR vec MC KC NC NB permute_x permute_y threads with plan_gemm's errors; both permutes is
// a CompileError (Unsloth's kernels have no such variant).
GroupedPlan plan_grouped_gemm(const Config& config, int hw_threads, double workspace_limit);

// One block of one expert's product: rows [m0, m1) and columns [n0, n1) of its output.
struct WorkItem {
  std::int32_t expert;
  long m0, m1, n0, n1;
  double cost;  // multiply-adds, for the largest-first order
};

struct GroupedShape {
  MoePass pass;
  long hidden, intermediate;
};

// Work items: every row of one expert's output by NB of its columns (empty experts included for
// dW, whose output they zero), largest first, so threads pulling them from a shared counter
// balance uneven expert loads.
std::vector<WorkItem> plan_work(const GroupedPlan& plan, const Routing& routing, const GroupedShape& shape);

struct GroupedOperands {
  const float* x;   // fwd, dW
  const float* w;   // fwd, dX
  const float* dy;  // dX, dW
  float* out;       // y, dx or dw
};

// Buffers of the unfused passes, in expert order: [R, max(hidden, intermediate)] each.
struct GroupedScratch {
  AlignedBuffer<float> in_a, in_b, out;
  void reserve(const Routing& routing, const GroupedShape& shape);
};

// The unfused permutation: dst[s] = src[index[s]] (gather) or dst[index[s]] = src[s] (scatter)
// for every expert-order row s, rows of `width` floats, split over `threads` threads.
void permute_rows(float* dst, const float* src, const std::vector<std::int32_t>& index, long width, bool gather,
                  ThreadPool& pool, int threads);

// One launch; false when `stop` fired before the output was complete.
bool run_grouped_gemm(const GroupedPlan& plan, const std::vector<WorkItem>& work, const Routing& routing,
                      const GroupedShape& shape, const GroupedOperands& op, GroupedScratch& scratch,
                      std::vector<AlignedBuffer<float>>& workspace, ThreadPool& pool, StopFlag& stop);

}  // namespace ktune::cpu
