#include "qmatmul.h"

#include <algorithm>
#include <string>

#include "ktune/measurement.h"

namespace ktune::cpu {

namespace {

// Largest micro-block size the tables hold that fits in `n` (tails of batch and out).
int fit(long n, int cap) {
  for (int s : {8, 4, 2, 1})
    if (s <= cap && s <= n) return s;
  return 1;
}

void block_dots(const QmmPlan& p, const QmmOperands& op, long b0, long bt, long o0, long ou, long i0, long n) {
  const bool accumulate = i0 > 0;
  for (long r = 0; r < bt;) {
    const int rb = fit(bt - r, p.BT);
    for (long u = 0; u < ou;) {
      const int ub = fit(ou - u, p.U);
      p.set->qmm[rb][ub](static_cast<int>(n), op.x + (b0 + r) * op.in + i0, op.in, op.w + (o0 + u) * op.in + i0, op.in,
                         op.y + (b0 + r) * op.out + o0 + u, op.out, accumulate);
      u += ub;
    }
    r += rb;
  }
}

[[noreturn]] void fail(TrialStatus status, const std::string& msg) { throw TrialFailure(status, msg); }

}  // namespace

QmmPlan plan_qmatmul(const Config& config, int hw_threads) {
  const auto v = read_params(config, {"OB", "IB", "BT", "U", "vec", "threads"}, "qmatmul");
  for (const auto& [name, value] : v)
    if (value < 1)
      fail(TrialStatus::CompileError, "qmatmul parameter " + name + "=" + std::to_string(value) + " is out of range");
  QmmPlan p;
  p.BT = static_cast<int>(v.at("BT"));
  p.U = static_cast<int>(v.at("U"));
  p.vec = static_cast<int>(v.at("vec"));
  p.threads = static_cast<int>(v.at("threads"));
  p.set = &require_ukernels(p.vec);
  if (p.BT > kMaxBT || p.U > kMaxU || !p.set->qmm[p.BT][p.U])
    fail(TrialStatus::CompileError, "no qmatmul micro-kernel for BT=" + std::to_string(p.BT) +
                                        " U=" + std::to_string(p.U) + " on " + p.set->isa + " (BT: 1 2 4 8, U: 1 2 4)");
  if (v.at("OB") < p.U || v.at("IB") < p.vec)
    fail(TrialStatus::CompileError,
         "qmatmul OB=" + std::to_string(v.at("OB")) + " must be >= U and IB=" + std::to_string(v.at("IB")) + " >= vec");
  p.OB = v.at("OB") / p.U * p.U;
  p.IB = v.at("IB") / p.vec * p.vec;
  require_threads(p.threads, hw_threads);
  return p;
}

bool run_qmatmul(const QmmPlan& p, const QmmOperands& op, ThreadPool& pool, StopFlag& stop) {
  const long blocks = (op.out + p.OB - 1) / p.OB;
  const int T = p.threads;
  pool.run(T, [&](int t) {
    for (long blk = t * blocks / T; blk < (t + 1) * blocks / T; ++blk) {
      const long o0 = blk * p.OB, ou = std::min(p.OB, op.out - o0);
      for (long i0 = 0; i0 < op.in; i0 += p.IB) {
        const long n = std::min(p.IB, op.in - i0);
        for (long b0 = 0; b0 < op.batch; b0 += p.BT)
          block_dots(p, op, b0, std::min<long>(p.BT, op.batch - b0), o0, ou, i0, n);
        if (stop.check()) return;
      }
      for (long b = 0; b < op.batch; ++b)
        for (long o = o0; o < o0 + ou; ++o) op.y[b * op.out + o] *= op.scale[o];
    }
  });
  return !stop.stopped();
}

}  // namespace ktune::cpu
