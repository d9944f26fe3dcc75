#pragma once
// Checks the GPU family tests share: a family's reference kernel against the test's own brute
// force on the host, and configs validated against that reference.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "check.h"
#include "ktune/backend.h"
#include "ktune/measurement.h"

namespace ktune_test {

inline void check_reference(const std::vector<double>& ref, const std::vector<double>& want,
                            const ktune::Tolerance& tol, const std::string& key) {
  CHECK_MSG(ref.size() == want.size(), key);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < std::min(ref.size(), want.size()); ++i)
    bad += !(std::abs(ref[i] - want[i]) <= tol.atol + tol.rtol * std::abs(want[i]));
  CHECK_MSG(bad == 0, key + ": the reference kernel differs from the brute force in " + std::to_string(bad) + " of " +
                          std::to_string(want.size()) + " elements");
}

// Each config prepared once and validated `rounds(config)` times (a kernel that leaves state for
// its next launch, as split counters, is validated twice); returns the validations run.
template <class Rounds>
int validate_configs(ktune::ProblemSession& session, const std::vector<ktune::Config>& configs,
                     const ktune::Tolerance& tol, const std::string& key, Rounds rounds) {
  CHECK_MSG(!configs.empty(), key);
  int validated = 0;
  for (const ktune::Config& c : configs) {
    try {
      auto kernel = session.prepare(c);
      for (int round = 0; round < rounds(c); ++round) {
        const ktune::Validation v = session.validate(*kernel, tol);
        CHECK_MSG(v.mismatch_fraction <= tol.max_mismatch_fraction,
                  key + " " + c.key() + " round " + std::to_string(round) + ": " +
                      std::to_string(100 * v.mismatch_fraction) + " % of outputs out of tolerance");
        ++validated;
      }
    } catch (const ktune::TrialFailure& e) {
      CHECK_MSG(false, key + " " + c.key() + ": " + to_string(e.status()) + ": " + e.what());
    }
  }
  return validated;
}

}  // namespace ktune_test
