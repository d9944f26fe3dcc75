#include "grouped_gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ktune/error.h"
#include "ktune/measurement.h"

namespace ktune::cpu {

MoePass moe_pass_from_string(const std::string& s) {
  if (s == "fwd") return MoePass::Fwd;
  if (s == "dX") return MoePass::DX;
  if (s == "dW") return MoePass::DW;
  throw InputError("grouped_gemm pass=" + s +
                   " is unknown; use pass=fwd (y = x w^T), pass=dX (dx = dy w) or pass=dW (dw = dy^T x), as Unsloth "
                   "tunes them");
}

GroupedPlan plan_grouped_gemm(const Config& config, int hw_threads, double workspace_limit) {
  const auto v = read_params(config, {"MR", "NR", "vec", "MC", "KC", "NC", "NB", "permute_x", "permute_y", "threads"},
                             "grouped_gemm");
  if (v.at("NB") < 1)
    throw TrialFailure(TrialStatus::CompileError,
                       "grouped_gemm NB=" + std::to_string(v.at("NB")) + " must be positive");
  for (const char* flag : {"permute_x", "permute_y"})
    if (v.at(flag) != 0 && v.at(flag) != 1)
      throw TrialFailure(TrialStatus::CompileError, std::string("grouped_gemm ") + flag + "=" +
                                                        std::to_string(v.at(flag)) + " must be true or false");
  GroupedPlan p;
  p.permute_x = v.at("permute_x") != 0;
  p.permute_y = v.at("permute_y") != 0;
  if (p.permute_x && p.permute_y)
    throw TrialFailure(TrialStatus::CompileError,
                       "grouped_gemm permute_x and permute_y together: Unsloth's kernels fuse one permutation, never "
                       "both; set one of them false");
  p.gemm = plan_blocking(v, hw_threads, workspace_limit, "grouped_gemm");
  p.item_cols = v.at("NB");
  return p;
}

namespace {

// The product of one expert as gemm_block sees it (M x K times K x N).
struct ExpertProduct {
  MatrixView A, B;
  OutputView C;
  long M, N, K;
};

struct Dims {
  long M, N, K;
};

Dims dims(const GroupedShape& s, long rows) {
  switch (s.pass) {
    case MoePass::Fwd:
      return {rows, s.intermediate, s.hidden};
    case MoePass::DX:
      return {rows, s.hidden, s.intermediate};
    case MoePass::DW:
      break;
  }
  return {s.intermediate, s.hidden, rows};
}

// Expert e's operands: fused permutations read or write through the routing's index arrays,
// unfused ones use the scratch buffers the separate passes fill or drain.
ExpertProduct expert_product(const GroupedPlan& p, const Routing& r, const GroupedShape& s, const GroupedOperands& op,
                             GroupedScratch& scratch, long e) {
  const long H = s.hidden, I = s.intermediate, off = r.offset[e];
  const std::int32_t* token = r.token.data() + off;
  const std::int32_t* row = r.row.data() + off;
  const Dims d = dims(s, r.count(e));
  ExpertProduct x{{}, {}, {}, d.M, d.N, d.K};
  switch (s.pass) {
    case MoePass::Fwd:
      x.A = p.permute_x ? MatrixView{op.x, H, token} : MatrixView{scratch.in_a.data() + off * H, H};
      x.B = {op.w + e * I * H, H, nullptr, true};
      x.C = p.permute_y ? OutputView{op.out, I, row} : OutputView{scratch.out.data() + off * I, I};
      break;
    case MoePass::DX:
      x.A = p.permute_y ? MatrixView{op.dy, I, row} : MatrixView{scratch.in_a.data() + off * I, I};
      x.B = {op.w + e * I * H, H};
      x.C = p.permute_x ? OutputView{op.out, H, row} : OutputView{scratch.out.data() + off * H, H};
      break;
    case MoePass::DW:
      x.A = p.permute_y ? MatrixView{op.dy, I, row, true} : MatrixView{scratch.in_a.data() + off * I, I, nullptr, true};
      x.B = p.permute_x ? MatrixView{op.x, H, token} : MatrixView{scratch.in_b.data() + off * H, H};
      x.C = {op.out + e * I * H, H};
      break;
  }
  return x;
}

}  // namespace

void permute_rows(float* dst, const float* src, const std::vector<std::int32_t>& index, long width, bool gather,
                  ThreadPool& pool, int threads) {
  const long R = static_cast<long>(index.size()), T = threads;
  pool.run(threads, [&](int t) {
    for (long s = R * t / T; s < R * (t + 1) / T; ++s) {
      const long d = gather ? s : index[s], from = gather ? index[s] : s;
      std::memcpy(dst + d * width, src + from * width, sizeof(float) * width);
    }
  });
}

void GroupedScratch::reserve(const Routing& routing, const GroupedShape& shape) {
  const std::size_t n = static_cast<std::size_t>(routing.rows() * std::max(shape.hidden, shape.intermediate));
  for (auto* b : {&in_a, &in_b, &out})
    if (b->size() < n) b->resize(n);
}

std::vector<WorkItem> plan_work(const GroupedPlan& plan, const Routing& routing, const GroupedShape& shape) {
  std::vector<WorkItem> work;
  for (long e = 0; e < routing.experts; ++e) {
    const Dims d = dims(shape, routing.count(e));
    // All rows of an expert in one item, so each packed KC x NC panel of B serves every one of
    // them (items of MC rows would each pack it again: as costly as the product for ~64 rows).
    // fwd / dX of an empty expert have no rows; its dW is an all-zero block that must be written.
    if (d.M == 0) continue;
    for (long n0 = 0; n0 < d.N; n0 += plan.item_cols) {
      const long n1 = std::min(d.N, n0 + plan.item_cols);
      work.push_back({static_cast<std::int32_t>(e), 0, d.M, n0, n1, double(d.M) * double(n1 - n0) * double(d.K)});
    }
  }
  std::stable_sort(work.begin(), work.end(), [](const WorkItem& a, const WorkItem& b) { return a.cost > b.cost; });
  return work;
}

bool run_grouped_gemm(const GroupedPlan& plan, const std::vector<WorkItem>& work, const Routing& routing,
                      const GroupedShape& shape, const GroupedOperands& op, GroupedScratch& scratch,
                      std::vector<AlignedBuffer<float>>& workspace, ThreadPool& pool, StopFlag& stop) {
  const GemmPlan& g = plan.gemm;
  const int T = g.threads;
  reserve_per_thread(workspace, T, g.workspace_floats_per_thread());
  const long H = shape.hidden, I = shape.intermediate;

  // Unfused permutations: separate passes before and after the grouped product.
  switch (shape.pass) {
    case MoePass::Fwd:
      if (!plan.permute_x) permute_rows(scratch.in_a.data(), op.x, routing.token, H, true, pool, T);
      break;
    case MoePass::DX:
      if (!plan.permute_y) permute_rows(scratch.in_a.data(), op.dy, routing.row, I, true, pool, T);
      break;
    case MoePass::DW:
      if (!plan.permute_y) permute_rows(scratch.in_a.data(), op.dy, routing.row, I, true, pool, T);
      if (!plan.permute_x) permute_rows(scratch.in_b.data(), op.x, routing.token, H, true, pool, T);
      break;
  }
  if (stop.check()) return false;

  // Threads pull (expert, block) items, largest first, until none are left: a hot expert's
  // blocks spread over every thread while cold experts fill the gaps.
  std::atomic<std::size_t> next{0};
  pool.run(T, [&](int t) {
    float* ws = workspace[t].data();
    for (std::size_t i = next.fetch_add(1, std::memory_order_relaxed); i < work.size() && !stop.stopped();
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      const WorkItem& w = work[i];
      const ExpertProduct x = expert_product(plan, routing, shape, op, scratch, w.expert);
      gemm_block(g, x.A, x.B, x.C, x.K, 1.0f, 0.0f, w.m0, w.m1, w.n0, w.n1, ws, stop);
    }
  });
  if (stop.stopped()) return false;

  if (shape.pass == MoePass::Fwd && !plan.permute_y)
    permute_rows(op.out, scratch.out.data(), routing.row, I, false, pool, T);
  if (shape.pass == MoePass::DX && !plan.permute_x)
    permute_rows(op.out, scratch.out.data(), routing.row, H, false, pool, T);
  return !stop.check();
}

}  // namespace ktune::cpu
