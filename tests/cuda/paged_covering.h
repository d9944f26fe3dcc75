#pragma once
// The paged_attention configs the spec test builds and the GPU test validates: few enough to
// compile in seconds, yet every value of every parameter and every split count with each scheme and
// feed, and with each number of heads per block (the merge's code paths).
#include <set>
#include <string>
#include <vector>

#include "ktune/config.h"

namespace ktune_test {

inline std::vector<ktune::Config> paged_covering(const std::vector<ktune::Config>& valid) {
  std::set<std::string> covered;
  std::vector<ktune::Config> chosen;
  auto v = [](const ktune::Config& c, const char* name) { return std::to_string(c.get(name)); };
  for (const ktune::Config& c : valid) {
    bool adds = covered.insert("M" + v(c, "MMA") + "T" + v(c, "TMA") + "S" + v(c, "SPLITS")).second;
    adds |= covered.insert("S" + v(c, "SPLITS") + "Q" + v(c, "QPB")).second;
    for (const char* name : {"TOKENS", "QPB", "WARPS", "STAGES", "SPLITS", "VEC", "L2HINT"})
      adds |= covered.insert(std::string(name) + "=" + v(c, name)).second;
    if (adds) chosen.push_back(c);
  }
  return chosen;
}

}  // namespace ktune_test
