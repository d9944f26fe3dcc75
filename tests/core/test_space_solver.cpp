// SearchSpace::enumerate's solver (backtracking, compiled constraints, independent groups) held
// against the brute-force walk it replaced: the same valid configs in the same order and the same
// counts per constraint, on every built-in family's default space (CPU families on a fixed
// machine, the CUDA and HIP specs with fixed device properties), on the Kernel Tuner example
// specs, and on spaces built to reach each of the solver's paths.
#include <QtTest>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "cpu_test_support.h"
#include "h100.h"
#include "ktune/backends/cpu.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/backends/hip_spec.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/search_space.h"
#include "space_solver.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

const fs::path kKernels = fs::path(KTUNE_SOURCE_DIR) / "resources/kernels";

using ktune_test::a100;
using ktune_test::h100;

// An MI300X, as the HIP backend reports it.
Variables mi300x() {
  return {{"cus", 304},
          {"lds_per_block", 65536},
          {"lds_per_cu", 65536},
          {"wavefront_size", 64},
          {"max_threads_per_block", 1024},
          {"regs_per_block", 131072},
          {"vgprs_per_wave", 512},
          {"sgprs_per_wave", 106},
          {"l2_bytes", 4194304},
          {"clock_mhz", 2100},
          {"mem_clock_mhz", 1300},
          {"mem_bandwidth_gbs", 5300},
          {"gfx_major", 9},
          {"gfx_minor", 4},
          {"has_mfma", 3},
          {"has_wmma", 0},
          {"peak_gflops_f16", 1307400},
          {"peak_gflops_f32", 163400}};
}

// Problems of `f`: its defaults, then every numeric field without a default set to odd, skinny
// and square sizes in turn; text fields take each of their choices in turn.
std::vector<Problem> problems(const KernelFamily& f) {
  std::vector<Problem> out;
  const char* sizes[] = {"", "7", "16", "4096"};
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    Problem p;
    p.family = f.name;
    for (const auto& k : f.key_fields) {
      std::string v = k.default_value;
      if (!k.numeric && !k.choices.empty()) v = k.choices[i % k.choices.size()];
      if (k.numeric && *sizes[i]) v = sizes[i];
      if (v.empty()) v = "256";
      p.fields.emplace_back(k.name, v);
    }
    out.push_back(p);
  }
  return out;
}

QString describe(const PruneReport& r) {
  QString s = QString("total %1, valid %2;").arg(r.total).arg(r.valid);
  for (const auto& [expr, n] : r.pruned_by) s += QString(" %1: %2;").arg(QString::fromStdString(expr)).arg(n);
  return s;
}

// The solver against the walk on one space and context; false (after a failed QCOMPARE) on a
// difference. `checked` counts the configs compared.
// `may_fall_back`: the space has a constraint that cannot be evaluated on a partial config that
// the walk never meets; elsewhere, where the walk has no error, the solver must not need it.
bool same_as_walk(const SearchSpace& space, const Variables& context, const QString& what, bool may_fall_back = false) {
  bool walk_fails = false;
  std::vector<Config> solved, walked;
  QString walk_error, solve_error;
  PruneReport solved_report, walked_report;
  try {
    walked = enumerate_brute_force(space, context, nullptr, &walked_report);
  } catch (const InputError& e) {
    walk_error = e.what();
    walk_fails = true;
  }
  if (!walk_fails && !may_fall_back)
    [&] { QVERIFY2(detail::solve_space(space, context).has_value(), qPrintable(what + ": the solver fell back")); }();
  try {
    solved = space.enumerate(context, nullptr, &solved_report);
  } catch (const InputError& e) {
    solve_error = e.what();
  }
  [&] { QCOMPARE(solve_error, walk_error); }();
  if (!walk_error.isEmpty()) return solve_error == walk_error;
  [&] { QCOMPARE(describe(solved_report), describe(walked_report)); }();
  [&] { QVERIFY2(solved == walked, qPrintable(what + ": the valid configs or their order differ")); }();
  // prune_report counts alike (through the cache, after enumerate).
  [&] { QCOMPARE(describe(space.prune_report(context)), describe(walked_report)); }();
  return !QTest::currentTestFailed();
}

void check_family(const KernelFamily& f, const Variables& device, const QString& where) {
  int compared = 0;
  for (const Problem& p : problems(f)) {
    Variables context = device;
    try {
      for (const auto& [k, v] : f.variables(p)) context[k] = v;
    } catch (const InputError&) {
      continue;  // a size this family refuses (a field that must divide another)
    }
    if (!same_as_walk(f.default_space, context, f.name.c_str() + (" " + where + " ") + p.key().c_str())) return;
    ++compared;
  }
  QVERIFY2(compared > 0, qPrintable(QString::fromStdString(f.name) + ": no problem compared"));
}

std::vector<fs::path> specs(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// A random space of small integer, boolean and string lists, with constraints over one to three
// of its parameters and the context: some independent groups, some tied.
SearchSpace random_space(std::mt19937& rng) {
  std::uniform_int_distribution<int> count(1, 6), size(1, 5), pick(0, 99);
  std::vector<Parameter> params;
  const int n = count(rng);
  for (int i = 0; i < n; ++i) {
    Parameter p{"p" + std::to_string(i), {}, ""};
    const int kind = pick(rng) % 5;
    const int m = size(rng);
    for (int v = 0; v < m; ++v) {
      if (kind == 0 && v < 2) p.values.push_back(v == 1);
      if (kind == 1) p.values.push_back("s" + std::to_string(v));
      if (kind >= 2) p.values.push_back(1 << v);
    }
    if (p.values.empty()) p.values.push_back(false);
    params.push_back(std::move(p));
  }
  const char* ops[] = {"+", "*", "-"};
  const char* cmp[] = {"<=", ">=", "!=", "<"};
  std::vector<Constraint> cons;
  const int k = count(rng) - 1;
  for (int c = 0; c < k; ++c) {
    const auto var = [&] { return params[static_cast<std::size_t>(pick(rng)) % params.size()]; };
    const Parameter a = var(), b = var();
    std::string expr;
    if (a.kind() == ParamValue::Kind::String)
      expr = a.name + " != 's" + std::to_string(pick(rng) % 3) + "'";
    else if (pick(rng) % 4 == 0)
      expr = "LIMIT >= 8";  // reads no parameter
    else
      expr = "(" + a.name + " " + ops[pick(rng) % 3] + " " + (b.kind() == ParamValue::Kind::String ? "1" : b.name) +
             ") " + cmp[pick(rng) % 4] + " " + std::to_string(pick(rng) % 12) + (pick(rng) % 2 ? " || LIMIT < 4" : "");
    cons.push_back({expr, ""});
  }
  return SearchSpace(std::move(params), std::move(cons));
}

}  // namespace

class TestSpaceSolver : public QObject {
  Q_OBJECT
 private slots:
  void cpuFamiliesOnAFixedMachine() {
    const Variables device = fixed_cpu().variables();
    for (const KernelFamily& f : make_cpu_backend()->families()) {
      check_family(f, device, "cpu");
      if (QTest::currentTestFailed()) return;
    }
  }

  void cudaSpecsAndKernelTunerExamples() {
    int loaded = 0;
    for (const fs::path& file : specs(kKernels / "cuda")) {
      const KernelSpec s = KernelSpec::load(file, cuda_spec_dialect());
      for (const auto& [device, name] : {std::pair{h100(), "h100"}, std::pair{a100(), "a100"}}) {
        check_family(s.family(), device, name);
        if (QTest::currentTestFailed()) return;
      }
      ++loaded;
    }
    QVERIFY(loaded >= 7);  // gemm, qmatmul, axpy and Kernel Tuner's four
  }

  void hipSpecs() {
    int loaded = 0;
    for (const fs::path& file : specs(kKernels / "hip")) {
      check_family(KernelSpec::load(file, hip_spec_dialect()).family(), mi300x(), "mi300x");
      if (QTest::currentTestFailed()) return;
      ++loaded;
    }
    QVERIFY(loaded >= 2);
  }

  // The three shapes of the gemm tune: the space keeps its size (PERSISTENT doubled it), the walk's counts
  // stay.
  void cudaGemmShapes() {
    const KernelSpec s = KernelSpec::load(kKernels / "cuda/gemm.json", cuda_spec_dialect());
    QCOMPARE(s.family().default_space.total_size(), std::uint64_t(1134000));
    for (const char* m : {"16", "128", "4096"}) {
      const QString shape = QString("M=%1 N=4096 K=4096").arg(m);
      Problem p;
      p.family = "gemm";
      p.fields = {{"M", m}, {"N", "4096"}, {"K", "4096"}, {"dtype", "f16"}};
      Variables ctx = h100();
      for (const auto& [k, v] : s.family().variables(p)) ctx[k] = v;
      if (!same_as_walk(s.family().default_space, ctx, shape)) return;
    }
  }

  void randomSpaces() {
    std::mt19937 rng(26);
    for (int i = 0; i < 400; ++i) {
      const SearchSpace s = random_space(rng);
      for (double limit : {2.0, 16.0})
        if (!same_as_walk(s, {{"LIMIT", limit}}, QString::fromStdString(s.to_json().dump()))) return;
    }
  }

  // A constraint that reads no parameter: failing, it prunes only the configs no earlier
  // constraint prunes, as the walk counts them.
  void deviceOnlyConstraintCountsAfterEarlierOnes() {
    const SearchSpace s({{"a", {1, 2, 3}, ""}, {"b", {1, 2}, ""}},
                        {{"a < 3", ""}, {"smem >= 100", ""}, {"b == 1", ""}});
    PruneReport r;
    QVERIFY(s.enumerate({{"smem", 10}}, nullptr, &r).empty());
    QCOMPARE(r.pruned_by[0].second, std::uint64_t(2));
    QCOMPARE(r.pruned_by[1].second, std::uint64_t(4));
    QCOMPARE(r.pruned_by[2].second, std::uint64_t(0));
    QVERIFY(same_as_walk(s, {{"smem", 10}}, "device limit"));
    QVERIFY(same_as_walk(s, {{"smem", 1000}}, "device limit"));
  }

  // Independent groups interleaved in the parameter order: the product comes out in odometer order.
  void interleavedGroupsKeepTheOdometerOrder() {
    const SearchSpace s({{"a", {1, 2, 4}, ""}, {"x", {1, 2, 3}, ""}, {"b", {1, 2, 4}, ""}, {"y", {3, 2, 1}, ""}},
                        {{"x + y != 4", ""}, {"a * b <= 4", ""}});
    const auto valid = s.enumerate({});
    QVERIFY(same_as_walk(s, {}, "interleaved"));
    QCOMPARE(valid.front().key(), std::string("a=1,x=1,b=1,y=2"));
  }

  // A division by zero that an earlier constraint always guards is no error, as in the walk; one
  // that it does not guard is the walk's error, naming the config the odometer meets first.
  void evaluationErrorsAreTheWalks() {
    const SearchSpace guarded({{"a", {0, 1, 2}, ""}, {"b", {4, 8}, ""}}, {{"a > 0", ""}, {"mod(b, a) == 0", ""}});
    QVERIFY(same_as_walk(guarded, {}, "guarded"));
    QCOMPARE(guarded.enumerate({}).size(), std::size_t(4));
    // The guard declared after the division: the walk meets a = 0 with mod first.
    const SearchSpace unguarded({{"a", {0, 1, 2}, ""}, {"b", {4, 8}, ""}}, {{"mod(b, a) == 0", ""}, {"a > 0", ""}});
    QVERIFY_THROWS_EXCEPTION(InputError, unguarded.enumerate({}));
    QVERIFY(same_as_walk(unguarded, {}, "unguarded"));
    // An error in one group while another group prunes everything: the walk never evaluates it.
    const SearchSpace pruned_elsewhere({{"a", {0, 1}, ""}, {"c", {1, 2}, ""}}, {{"c > 5", ""}, {"1 / a > 0", ""}});
    QVERIFY(same_as_walk(pruned_elsewhere, {}, "pruned elsewhere", true));
    QCOMPARE(pruned_elsewhere.prune_report({}).pruned_by[0].second, std::uint64_t(4));
  }

  // Explicit lists are checked config by config, compiled, in their own order.
  void listSpaces() {
    std::vector<Config> configs;
    for (int bm : {128, 16, 64, 32})
      for (bool p : {true, false}) configs.push_back(Config({{"BM", bm}, {"permute", p}}));
    const SearchSpace s = SearchSpace::from_configs(configs, {{"BM <= M", ""}, {"!(permute && BM > 32)", ""}});
    QVERIFY(same_as_walk(s, {{"M", 64}}, "list"));
    QCOMPARE(s.enumerate({{"M", 64}}).front().key(), std::string("BM=16,permute=true"));
  }

  // A space with no constraint is its whole product.
  void unconstrained() {
    const SearchSpace s({{"a", {3, 1, 2}, ""}, {"s", {"x", "y"}, ""}}, {});
    QVERIFY(same_as_walk(s, {}, "unconstrained"));
    QCOMPARE(s.enumerate({}).size(), std::size_t(6));
  }
};

QTEST_APPLESS_MAIN(TestSpaceSolver)
#include "test_space_solver.moc"
