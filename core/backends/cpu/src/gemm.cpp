#include "gemm.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ktune/measurement.h"

namespace ktune::cpu {

namespace {

template <class View>
long row_of(const View& v, long x) {
  return v.rows ? v.rows[x] : x;
}

// op(A)[ic:ic+mc, pc:pc+kc] -> micro-panels of MR rows: ap[panel][k][r], scaled by alpha, rows
// past mc zero (so edge tiles can run the full micro-kernel).
void pack_a(const MatrixView& A, long ic, long pc, long mc, long kc, int MR, float alpha, float* ap) {
  for (long i0 = 0; i0 < mc; i0 += MR, ap += MR * kc) {
    const long mr = std::min<long>(MR, mc - i0);
    if (!A.trans) {
      for (long r = 0; r < mr; ++r) {
        const float* src = A.data + row_of(A, ic + i0 + r) * A.ld + pc;
        for (long k = 0; k < kc; ++k) ap[k * MR + r] = alpha * src[k];
      }
    } else {
      // op(A)(i, k) = A[row(k), i]: each stored row holds mr consecutive entries of one packed column.
      for (long k = 0; k < kc; ++k) {
        const float* src = A.data + row_of(A, pc + k) * A.ld + ic + i0;
        for (long r = 0; r < mr; ++r) ap[k * MR + r] = alpha * src[r];
      }
    }
    for (long r = mr; r < MR; ++r)
      for (long k = 0; k < kc; ++k) ap[k * MR + r] = 0.0f;
  }
}

// op(B)[pc:pc+kc, jc:jc+nc] -> micro-panels of NR columns: bp[panel][k][j], columns past nc zero.
void pack_b(const MatrixView& B, long pc, long jc, long kc, long nc, int NR, float* bp) {
  for (long j0 = 0; j0 < nc; j0 += NR, bp += NR * kc) {
    const long nr = std::min<long>(NR, nc - j0);
    if (!B.trans) {
      for (long k = 0; k < kc; ++k) {
        std::memcpy(bp + k * NR, B.data + row_of(B, pc + k) * B.ld + jc + j0, sizeof(float) * nr);
        std::fill(bp + k * NR + nr, bp + (k + 1) * NR, 0.0f);
      }
    } else {
      // op(B)(k, j) = B[row(j), k]: a transpose, in 8 x 8 register blocks where AVX2 runs (a
      // scalar one costs as much as the products of a small expert's rows).
      static const PackTransposed vector_transpose = [] {
        const UKernelSet* avx2 = ukernels_for(8);
        return avx2 ? avx2->pack_transposed : nullptr;
      }();
      const float* rows[kMaxNV * 16];
      for (long j = 0; j < nr; ++j) rows[j] = B.data + row_of(B, jc + j0 + j) * B.ld + pc;
      if (vector_transpose) {
        vector_transpose(rows, kc, nr, NR, bp);
      } else {
        for (long j = 0; j < nr; ++j)
          for (long k = 0; k < kc; ++k) bp[k * NR + j] = rows[j][k];
      }
      for (long k = 0; k < kc; ++k) std::fill(bp + k * NR + nr, bp + (k + 1) * NR, 0.0f);
    }
  }
}

// Every micro-tile of one packed (mc x kc) x (kc x nc) block pair, into C at (ic, jc), in the
// plan's order.
void macro_kernel(const GemmPlan& p, long mc, long nc, long kc, const float* ap, const float* bp, const OutputView& C,
                  long ic, long jc, float beta, float* edge) {
  auto tile = [&](long ir, long jr) {
    const float* a = ap + ir * kc;
    const float* b = bp + jr * kc;
    const long mr = std::min<long>(p.MR, mc - ir), nr = std::min<long>(p.NR, nc - jr);
    if (!C.rows && mr == p.MR && nr == p.NR) {
      p.ukernel(static_cast<int>(kc), a, b, C.data + (ic + ir) * C.ld + jc + jr, C.ld, beta);
      return;
    }
    // Edge or scattered tile: compute the full padded tile aside and merge the part inside C,
    // each row at its own place.
    p.ukernel(static_cast<int>(kc), a, b, edge, p.NR, 0.0f);
    for (long r = 0; r < mr; ++r) {
      float* ct = C.data + row_of(C, ic + ir + r) * C.ld + jc + jr;
      const float* e = edge + r * p.NR;
      for (long j = 0; j < nr; ++j) ct[j] = beta == 0.0f ? e[j] : e[j] + beta * ct[j];
    }
  };
  if (p.loop_order == 0) {
    for (long jr = 0; jr < nc; jr += p.NR)
      for (long ir = 0; ir < mc; ir += p.MR) tile(ir, jr);
  } else {
    for (long ir = 0; ir < mc; ir += p.MR)
      for (long jr = 0; jr < nc; jr += p.NR) tile(ir, jr);
  }
}

[[noreturn]] void fail(TrialStatus status, const std::string& msg) { throw TrialFailure(status, msg); }

}  // namespace

void gemm_block(const GemmPlan& p, const MatrixView& A, const MatrixView& B, const OutputView& C, long K, float alpha,
                float beta, long m0, long m1, long n0, long n1, float* ws, StopFlag& stop) {
  if (K == 0) {
    // An empty reduction (an MoE expert no token chose): C = beta * C, zeros for beta 0.
    for (long i = m0; i < m1; ++i) {
      float* c = C.data + row_of(C, i) * C.ld;
      for (long j = n0; j < n1; ++j) c[j] = beta == 0.0f ? 0.0f : beta * c[j];
    }
    return;
  }
  float* ap = ws;
  float* bp = ap + p.mc * p.kc;
  float* edge = bp + p.kc * p.nc;
  // Later KC blocks accumulate into C (beta 1).
  if (p.loop_order == 0) {
    for (long jc = n0; jc < n1; jc += p.nc) {
      const long nc = std::min(p.nc, n1 - jc);
      for (long pc = 0; pc < K; pc += p.kc) {
        const long kc = std::min(p.kc, K - pc);
        const float b = pc == 0 ? beta : 1.0f;
        pack_b(B, pc, jc, kc, nc, p.NR, bp);
        for (long ic = m0; ic < m1; ic += p.mc) {
          const long mc = std::min(p.mc, m1 - ic);
          pack_a(A, ic, pc, mc, kc, p.MR, alpha, ap);
          macro_kernel(p, mc, nc, kc, ap, bp, C, ic, jc, b, edge);
          if (stop.check()) return;
        }
      }
    }
  } else {
    for (long ic = m0; ic < m1; ic += p.mc) {
      const long mc = std::min(p.mc, m1 - ic);
      for (long pc = 0; pc < K; pc += p.kc) {
        const long kc = std::min(p.kc, K - pc);
        const float b = pc == 0 ? beta : 1.0f;
        pack_a(A, ic, pc, mc, kc, p.MR, alpha, ap);
        for (long jc = n0; jc < n1; jc += p.nc) {
          const long nc = std::min(p.nc, n1 - jc);
          pack_b(B, pc, jc, kc, nc, p.NR, bp);
          macro_kernel(p, mc, nc, kc, ap, bp, C, ic, jc, b, edge);
          if (stop.check()) return;
        }
      }
    }
  }
}

std::size_t GemmPlan::workspace_floats_per_thread() const {
  return static_cast<std::size_t>(mc * kc + kc * nc + MR * NR);
}

GemmPlan plan_gemm(const Config& config, int hw_threads, double workspace_limit) {
  return plan_blocking(read_params(config, {"MR", "NR", "vec", "MC", "KC", "NC", "loop_order", "threads"}, "gemm"),
                       hw_threads, workspace_limit, "gemm");
}

GemmPlan plan_blocking(const std::map<std::string, long>& v, int hw_threads, double workspace_limit,
                       const std::string& family) {
  for (const char* name : {"MR", "NR", "vec", "MC", "KC", "NC", "threads"})
    if (v.at(name) < 1)
      fail(TrialStatus::CompileError,
           family + " parameter " + name + "=" + std::to_string(v.at(name)) + " is out of range");
  GemmPlan p;
  p.MR = static_cast<int>(v.at("MR"));
  p.NR = static_cast<int>(v.at("NR"));
  p.vec = static_cast<int>(v.at("vec"));
  p.threads = static_cast<int>(v.at("threads"));
  p.loop_order = v.count("loop_order") ? static_cast<int>(v.at("loop_order")) : 0;
  if (p.loop_order < 0 || p.loop_order > 1)
    fail(TrialStatus::CompileError, family + " loop_order=" + std::to_string(p.loop_order) +
                                        " is unknown (0: B panel resident, 1: A block resident)");
  const UKernelSet* set = &require_ukernels(p.vec);
  p.isa = set->isa;
  const std::string tile = "MR=" + std::to_string(p.MR) + " NR=" + std::to_string(p.NR);
  if (p.NR % p.vec != 0 || p.MR > kMaxMR || p.NR / p.vec > kMaxNV || !set->gemm[p.MR][p.NR / p.vec])
    fail(TrialStatus::CompileError,
         "no micro-kernel for " + tile + " on " + set->isa + " (vec=" + std::to_string(p.vec) + "; NR must be 1 to " +
             std::to_string(kMaxNV) + " vectors, MR one of 1 2 4 6 8 12 14 16 within the register file)");
  p.ukernel = set->gemm[p.MR][p.NR / p.vec];
  if (v.at("MC") < p.MR || v.at("NC") < p.NR)
    fail(TrialStatus::CompileError, family + " MC=" + std::to_string(v.at("MC")) + " / NC=" +
                                        std::to_string(v.at("NC")) + " must be at least the micro-tile " + tile);
  p.mc = v.at("MC") / p.MR * p.MR;
  p.nc = v.at("NC") / p.NR * p.NR;
  p.kc = v.at("KC");
  require_threads(p.threads, hw_threads);
  const double bytes = static_cast<double>(p.workspace_floats_per_thread()) * sizeof(float) * p.threads;
  if (bytes > workspace_limit)
    fail(TrialStatus::LaunchError,
         family + " packing workspace (MC=" + std::to_string(v.at("MC")) + " KC=" + std::to_string(p.kc) +
             " NC=" + std::to_string(v.at("NC")) + ", threads=" + std::to_string(p.threads) + ") needs " +
             std::to_string(static_cast<long long>(bytes)) + " bytes, device allows " +
             std::to_string(static_cast<long long>(workspace_limit)) + " (max_workspace_bytes)");
  return p;
}

bool run_gemm(const GemmPlan& p, const GemmOperands& op, std::vector<AlignedBuffer<float>>& workspace, ThreadPool& pool,
              StopFlag& stop) {
  const int T = p.threads;
  reserve_per_thread(workspace, T, p.workspace_floats_per_thread());

  pool.run(T, [&](int t) {
    const GridCell g = grid_cell(t, T, op.M, op.N, p.MR, p.NR);
    if (!g.empty())
      gemm_block(p, {op.A, op.K}, {op.B, op.N}, {op.C, op.N}, op.K, op.alpha, op.beta, g.m0, g.m1, g.n0, g.n1,
                 workspace[t].data(), stop);
  });
  return !stop.stopped();
}

}  // namespace ktune::cpu
