// Search-space construction, before and after the solver, in one run on the same spaces: the
// brute-force walk (enumerate_brute_force, what SearchSpace::enumerate did) against the solver on
// a cold cache (validate + solve, what enumerate does on a miss), and enumerate on a warm one.
// Both must give the same valid configs and counts; the ratio is walk / solver. Run it on one
// core: `taskset -c 0 build/bench/spaces/bench_spaces` (bench/spaces/RESULTS.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "h100.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/search_space.h"
#include "space_solver.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

using ktune_test::h100;  // an H100 80GB HBM3 as its driver reports it

const fs::path kCuda = fs::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda";

// Median wall time of `runs` calls, in milliseconds.
double median_ms(int runs, const std::function<void()>& fn) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

bool same(const PruneReport& a, const PruneReport& b) {
  return a.total == b.total && a.valid == b.valid && a.pruned_by == b.pruned_by;
}

struct Case {
  std::string name;
  SearchSpace space;
  Variables context;
  double goal_ms;  // the target for the solver
};

Case spec_case(const std::string& name, const fs::path& file, std::vector<std::pair<std::string, std::string>> fields,
               double goal_ms) {
  const KernelSpec s = KernelSpec::load(file, cuda_spec_dialect());
  Problem p;
  p.family = s.family().name;
  for (const auto& k : s.family().key_fields) {
    auto it = std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == k.name; });
    p.fields.emplace_back(k.name, it != fields.end() ? it->second : k.default_value);
  }
  Variables ctx = h100();
  for (const auto& [k, v] : s.family().variables(p)) ctx[k] = v;
  return {name, s.family().default_space, ctx, goal_ms};
}

// One row: false when the solver and the walk disagree or the goal is missed.
bool run(const Case& c) {
  PruneReport walked, solved, cached;
  std::vector<Config> walked_configs, solved_configs;
  const int walk_runs = c.space.total_size() > 100000 ? 3 : 11;
  const double walk =
      median_ms(walk_runs, [&] { walked_configs = enumerate_brute_force(c.space, c.context, nullptr, &walked); });
  const double solve = median_ms(21, [&] {
    c.space.validate(c.context);
    auto r = detail::solve_space(c.space, c.context);
    if (!r) throw InputError(c.name + ": the solver fell back to the walk");
    solved = r->report;
    solved_configs = std::move(r->valid);
  });
  (void)c.space.enumerate(c.context);
  const double warm = median_ms(21, [&] { (void)c.space.enumerate(c.context, nullptr, &cached); });
  const bool agree = same(walked, solved) && same(walked, cached) && walked_configs == solved_configs;
  const bool met = solve < c.goal_ms;
  std::printf("%-34s %9llu %7llu %10.2f %9.3f %8.0fx %9.3f  %s%s\n", c.name.c_str(),
              static_cast<unsigned long long>(walked.total), static_cast<unsigned long long>(walked.valid), walk, solve,
              walk / solve, warm, agree ? "same" : "DIFFERENT",
              met ? "" : (" (goal < " + std::to_string(static_cast<int>(c.goal_ms)) + " ms missed)").c_str());
  return agree && met;
}

}  // namespace

int main() {
  const fs::path kt = kCuda / "examples/kernel_tuner";
  std::vector<Case> cases;
  for (const char* m : {"16", "128", "4096"})
    cases.push_back(spec_case(std::string("cuda gemm M=") + m + " N=4096 K=4096", kCuda / "gemm.json",
                              {{"M", m}, {"N", "4096"}, {"K", "4096"}}, 50));
  cases.push_back(spec_case("kernel_tuner convolution", kt / "convolution.json", {}, 20));
  cases.push_back(spec_case("kernel_tuner reduction", kt / "reduction.json", {}, 20));
  cases.push_back(spec_case("kernel_tuner matmul", kt / "matmul.json", {}, 20));
  std::printf("%-34s %9s %7s %10s %9s %9s %9s\n", "space (H100 properties)", "configs", "valid", "walk ms", "solve ms",
              "ratio", "cached ms");
  bool ok = true;
  for (const auto& c : cases) ok = run(c) && ok;
  return ok ? 0 : 1;
}
