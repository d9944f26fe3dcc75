#include "launch.h"

#include <algorithm>

#include "ktune/measurement.h"
#include "ukernels.h"

namespace ktune::cpu {

GridCell grid_cell(int t, int threads, long M, long N, int MR, int NR) {
  const long np = (N + NR - 1) / NR, mp = (M + MR - 1) / MR;
  int tn = 1;
  for (int d = threads; d >= 1; --d)
    if (threads % d == 0 && d <= np) {
      tn = d;
      break;
    }
  const int tm = threads / tn;
  const long r = t / tn, c = t % tn;
  return {std::min(M, r * mp / tm * MR), std::min(M, (r + 1) * mp / tm * MR), std::min(N, c * np / tn * NR),
          std::min(N, (c + 1) * np / tn * NR)};
}

std::map<std::string, long> read_params(const Config& config, std::initializer_list<const char*> names,
                                        const std::string& family) {
  std::string expected;
  for (const char* n : names) expected += (expected.empty() ? "" : ", ") + std::string(n);
  std::map<std::string, long> values;
  for (const auto& [name, value] : config.values()) {
    bool known = false;
    for (const char* n : names) known = known || name == n;
    if (!known)
      throw TrialFailure(TrialStatus::CompileError,
                         "unknown parameter '" + name + "' for " + family + " on cpu (parameters: " + expected + ")");
    values[name] = static_cast<long>(value.as_int("parameter '" + name + "'"));
  }
  for (const char* n : names)
    if (!values.count(n))
      throw TrialFailure(TrialStatus::CompileError, "config lacks parameter '" + std::string(n) + "' for " + family +
                                                        " on cpu (parameters: " + expected + ")");
  return values;
}

const UKernelSet& require_ukernels(int vec) {
  const UKernelSet* set = ukernels_for(vec);
  if (!set)
    throw TrialFailure(TrialStatus::CompileError,
                       "no micro-kernel with vec=" + std::to_string(vec) +
                           " f32 lanes on this CPU (16 needs AVX-512, 8 needs AVX2+FMA, 4 is portable)");
  return *set;
}

void require_threads(int threads, int hw_threads) {
  if (threads > hw_threads)
    throw TrialFailure(TrialStatus::LaunchError, "threads=" + std::to_string(threads) + " needs " +
                                                     std::to_string(threads) + " hardware threads, device has " +
                                                     std::to_string(hw_threads));
}

}  // namespace ktune::cpu
