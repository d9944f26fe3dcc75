#include "ktune/trial.h"

#include "ktune/error.h"

namespace ktune {

const char* to_string(TrialStatus s) {
  switch (s) {
    case TrialStatus::Ok:
      return "ok";
    case TrialStatus::Pruned:
      return "pruned";
    case TrialStatus::CompileError:
      return "compile_error";
    case TrialStatus::LaunchError:
      return "launch_error";
    case TrialStatus::WrongResult:
      return "wrong_result";
    case TrialStatus::Timeout:
      return "timeout";
    case TrialStatus::Crashed:
      return "crashed";
    case TrialStatus::SlowAbort:
      return "slow_abort";
  }
  return "unknown";
}

TrialStatus trial_status_from_string(const std::string& s) {
  for (TrialStatus st : kAllTrialStatuses)
    if (s == to_string(st)) return st;
  throw InputError("unknown trial status '" + s +
                   "' (expected ok, pruned, compile_error, launch_error, wrong_result, timeout, crashed, slow_abort)");
}

void set_rates(Trial& t, double flops, double bytes) {
  const double ns = t.stats.median_ns;
  t.tflops = ns > 0 ? flops / ns / 1e3 : 0;
  t.gbps = ns > 0 ? bytes / ns : 0;
}

bool note_best_median(const Trial& t, std::map<std::string, double>& best) {
  if (t.status != TrialStatus::Ok || !(t.stats.median_ns > 0)) return false;
  // find before emplace: an emplace builds (and allocates) a node even for a key that is there.
  const auto it = best.find(t.problem_key);
  if (it == best.end()) {
    best.emplace(t.problem_key, t.stats.median_ns);
    return true;
  }
  if (t.stats.median_ns >= it->second) return false;
  it->second = t.stats.median_ns;
  return true;
}

}  // namespace ktune
