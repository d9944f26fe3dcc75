// The CPU grouped_gemm (MoE) family: per-pass spaces and Unsloth's permute rule, every config of
// reduced spaces validated with empty experts, the kernel and the f64 reference checked against
// a brute-force loop on a tiny routing (and a corrupted routing caught), the routing shared by the
// passes and with the CUDA spec, bad shapes, and a small tune of each pass end to end.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "cpu_test_support.h"
#include "grouped_gemm.h"
#include "ktune/backends/cpu.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/spec_inputs.h"
#include "ktune/tuner.h"
#include "ktune/workload_rules.h"
#include "reference.h"

using namespace ktune;
using namespace ktune::cpu;

namespace {

Problem moe(long experts, long tokens, long topk, long hidden, long intermediate, const std::string& pass) {
  Problem p;
  p.family = "grouped_gemm";
  p.fields = {{"experts", std::to_string(experts)},
              {"tokens", std::to_string(tokens)},
              {"topk", std::to_string(topk)},
              {"hidden", std::to_string(hidden)},
              {"intermediate", std::to_string(intermediate)},
              {"dtype", "f32"},
              {"pass", pass}};
  return p;
}

Variables context(const KernelFamily& f, const Problem& p, const DeviceInfo& d) {
  Variables v = d.variables();
  for (const auto& [k, x] : f.variables(p)) v[k] = x;
  return v;
}

SearchSpace restrict_space(const SearchSpace& space, const std::map<std::string, std::vector<ParamValue>>& values) {
  std::vector<Parameter> params = space.parameters();
  for (auto& p : params)
    if (auto it = values.find(p.name); it != values.end()) p.values = it->second;
  return SearchSpace(std::move(params), space.constraints());
}

template <class Fn>
void expect_input_error(Fn fn, const QString& text) {
  try {
    fn();
  } catch (const InputError& e) {
    QVERIFY2(QString(e.what()).contains(text), e.what());
    return;
  }
  QFAIL(qPrintable("expected an InputError containing: " + text));
}

// The pass by definition, one routed row at a time: nothing shared with the kernel or the
// reference but the routing's expert of each row.
std::vector<double> brute_force(MoePass pass, const Routing& r, const std::vector<float>& x,
                                const std::vector<float>& w, const std::vector<float>& dy, long H, long I) {
  const long R = r.rows();
  std::vector<double> out(pass == MoePass::Fwd ? R * I : pass == MoePass::DX ? R * H : r.experts * I * H, 0.0);
  for (long row = 0; row < R; ++row) {
    const long t = row / r.topk, e = r.expert[row];
    for (long n = 0; n < I; ++n)
      for (long h = 0; h < H; ++h) {
        if (pass == MoePass::Fwd) out[row * I + n] += double(x[t * H + h]) * w[(e * I + n) * H + h];
        if (pass == MoePass::DX) out[row * H + h] += double(dy[row * I + n]) * w[(e * I + n) * H + h];
        if (pass == MoePass::DW) out[(e * I + n) * H + h] += double(dy[row * I + n]) * x[t * H + h];
      }
  }
  return out;
}

double max_diff(const std::vector<double>& a, const float* b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::isnan(b[i]) ? INFINITY : std::abs(a[i] - b[i]));
  return m;
}

}  // namespace

class TestGroupedGemm : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> backend_ = make_cpu_backend();
  DeviceInfo dev_;
  KernelFamily family_;
  int hw_ = 1;
  int lanes_ = 4;

 private slots:
  void initTestCase() {
    dev_ = backend_->devices().at(0);
    family_ = backend_->family("grouped_gemm");
    hw_ = static_cast<int>(dev_.property("threads_hw"));
    lanes_ = static_cast<int>(dev_.property("simd_width_f32"));
  }

  void familyDefinition() {
    QCOMPARE(QString::fromStdString(family_.bucket_field), QString("tokens"));
    const KeyField* pass = family_.field("pass");
    QVERIFY(pass && !pass->numeric);
    QCOMPARE(pass->choices, (std::vector<std::string>{"fwd", "dX", "dW"}));
    // 2 * tokens * topk * hidden * intermediate for every pass.
    for (const char* p : {"fwd", "dX", "dW"}) QCOMPARE(family_.flops(moe(4, 3, 2, 5, 7, p)), 2.0 * 3 * 2 * 5 * 7);
    QCOMPARE(family_.bytes(moe(4, 3, 2, 5, 7, "fwd")), 4.0 * (3 * 5 + 4 * 7 * 5 + 6 * 7));
    QCOMPARE(family_.bytes(moe(4, 3, 2, 5, 7, "dW")), 4.0 * (3 * 5 + 6 * 7 + 4 * 7 * 5));
    // The TMA flags are the CUDA space's: none here, and the description says why.
    for (const auto& p : family_.default_space.parameters())
      QVERIFY2(p.name.find("tma") == std::string::npos, p.name.c_str());
    QVERIFY(family_.description.find("TMA") != std::string::npos);
    // Registry keys carry the pass, so a shape's three configs live side by side.
    QVERIFY(moe(8, 64, 2, 32, 48, "fwd").local_key() != moe(8, 64, 2, 32, 48, "dW").local_key());
    QVERIFY(moe(8, 64, 2, 32, 48, "dX").local_key().find("pass=dX") != std::string::npos);
    if (lanes_ >= 8)
      for (const char* p : {"fwd", "dX", "dW"})
        QVERIFY(
            !family_.default_space.violated(family_.default_config, context(family_, moe(8, 16, 2, 64, 96, p), dev_)));
  }

  // Each pass multiplies different dimensions, so the same shape keeps different spaces; both
  // permutes are pruned everywhere with Unsloth's rule as the reason. 100 tokens, hidden 200,
  // intermediate 2048: fwd keeps both MC, KC and NC; dX pins NC (its columns are hidden); dW
  // also pins KC (its depth is an expert's rows, at most 100).
  void perPassSpaces() {
    for (const char* p : {"fwd", "dX", "dW"}) {
      const Variables ctx = context(family_, moe(8, 100, 2, 200, 2048, p), dev_);
      std::vector<std::pair<Config, std::string>> pruned;
      const auto configs = family_.default_space.enumerate(ctx, &pruned);
      QVERIFY(!configs.empty());
      for (const Config& c : configs) {
        QVERIFY2(!(c.value("permute_x") == ParamValue(true) && c.value("permute_y") == ParamValue(true)),
                 c.key().c_str());
        if (std::string(p) != "fwd") QVERIFY2(c.value("NC") == ParamValue(1024), c.key().c_str());
        if (std::string(p) == "dW") QVERIFY2(c.value("KC") == ParamValue(128), c.key().c_str());
      }
      // Configs with both set that survive the device constraints fall to the permute rule.
      const auto both = std::count_if(pruned.begin(), pruned.end(),
                                      [](const auto& x) { return x.second.find("never both") != std::string::npos; });
      QVERIFY2(both > 0, p);
      for (const auto& [c, why] : pruned)
        if (why.find("never both") != std::string::npos) {
          QVERIFY(c.value("permute_x") == ParamValue(true) && c.value("permute_y") == ParamValue(true));
          QVERIFY2(why.find("Unsloth") != std::string::npos, why.c_str());
        }
    }
    // How much each pin keeps, on a machine whose caches and threads prune the same in every
    // pass (the host's may prune a large NC or KC in fwd alone).
    std::map<std::string, std::uint64_t> valid;
    for (const char* p : {"fwd", "dX", "dW"})
      valid[p] = family_.default_space.enumerate(context(family_, moe(8, 100, 2, 200, 2048, p), fixed_cpu())).size();
    QVERIFY2(valid["fwd"] == 2 * valid["dX"] && valid["dX"] == 2 * valid["dW"],
             qPrintable(QString("%1 %2 %3").arg(valid["fwd"]).arg(valid["dX"]).arg(valid["dW"])));
  }

  void everyConfigValidates_data() {
    QTest::addColumn<QString>("pass");
    QTest::addColumn<int>("experts");
    QTest::addColumn<int>("tokens");
    QTest::addColumn<int>("topk");
    // 15 routed rows over 16 experts: some experts are empty. Odd sizes: every edge tile.
    QTest::newRow("fwd, empty experts") << "fwd" << 16 << 5 << 3;
    QTest::newRow("dX, empty experts") << "dX" << 16 << 5 << 3;
    QTest::newRow("dW, empty experts") << "dW" << 16 << 5 << 3;
    // One hot expert's rows span several MC blocks and threads; topk == experts.
    QTest::newRow("fwd, skewed") << "fwd" << 4 << 37 << 4;
    QTest::newRow("dX, skewed") << "dX" << 4 << 37 << 2;
    QTest::newRow("dW, skewed") << "dW" << 3 << 37 << 2;
    QTest::newRow("dW, one token") << "dW" << 8 << 1 << 1;
  }
  // Blocks small enough that every loop runs several times (hidden 45 is no multiple of any NR
  // and spans two NC panels; intermediate 83 spans several KC blocks).
  void everyConfigValidates() {
    QFETCH(QString, pass);
    QFETCH(int, experts);
    QFETCH(int, tokens);
    QFETCH(int, topk);
    const Problem p = moe(experts, tokens, topk, 45, 83, pass.toStdString());
    const SearchSpace space = restrict_space(family_.default_space, {{"MR", {4, 6}},
                                                                     {"NR", {lanes_, 2 * lanes_}},
                                                                     {"vec", {lanes_}},
                                                                     {"MC", {8, 64}},
                                                                     {"KC", {16, 128}},
                                                                     {"NC", {32, 1024}},
                                                                     {"NB", {24, 512}},
                                                                     {"threads", thread_counts(hw_)}});
    // The equivalence constraints would drop the small blocks this test wants: enumerate raw.
    const SearchSpace raw(space.parameters(), {{"!(permute_x && permute_y)", "never both"}});
    const auto configs = raw.enumerate(context(family_, p, dev_));
    QVERIFY(configs.size() >= 24);
    auto session = backend_->open(dev_, family_, p, 11);
    Tolerance tol;
    tol.atol = 1e-4;
    tol.rtol = 1e-4;
    for (const Config& c : configs) {
      try {
        auto k = session->prepare(c);
        const Validation v = session->validate(*k, tol);
        QVERIFY(v.mismatch_fraction == 0);
      } catch (const TrialFailure& e) {
        QFAIL(qPrintable(QString::fromStdString(c.key() + ": " + e.what())));
      }
    }
  }

  // The reference and the kernel (all three permute choices) against the definition, on a tiny
  // routing with an empty expert; then a routing whose expert order is corrupted must fail.
  void bruteForceAndCorruption() {
    const long E = 6, T = 7, k = 2, H = 9, I = 11;
    Routing r = generate_moe_routing(E, T, k, 3);
    r.expert = {0, 1, 1, 2, 0, 2, 4, 1, 0, 4, 2, 1, 3, 0};  // expert 5 gets nothing
    sort_moe_routing(r);
    QCOMPARE(r.count(5), 0L);
    QCOMPARE(r.count(0), 4L);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    auto random = [&](long n) {
      std::vector<float> v(n);
      for (auto& x : v) x = u(rng);
      return v;
    };
    const auto x = random(T * H), w = random(E * I * H), dy = random(T * k * I);
    ThreadPool pool(2);
    const Config base({{"MR", 4},
                       {"NR", lanes_},
                       {"vec", lanes_},
                       {"MC", 4},
                       {"KC", 4},
                       {"NC", lanes_},
                       {"NB", 8},
                       {"permute_x", false},
                       {"permute_y", false},
                       {"threads", std::min(hw_, 2)}});
    for (MoePass pass : {MoePass::Fwd, MoePass::DX, MoePass::DW}) {
      const std::vector<double> truth = brute_force(pass, r, x, w, dy, H, I);
      const std::vector<double> ref = grouped_gemm_reference(pass, r, x.data(), w.data(), dy.data(), H, I, pool);
      QCOMPARE(ref.size(), truth.size());
      for (std::size_t i = 0; i < ref.size(); ++i) QVERIFY(std::abs(ref[i] - truth[i]) < 1e-9);
      const GroupedShape shape{pass, H, I};
      GroupedScratch scratch;
      scratch.reserve(r, shape);
      std::vector<AlignedBuffer<float>> ws;
      std::vector<float> out(truth.size());
      for (auto [px, py] : {std::pair{false, false}, {true, false}, {false, true}}) {
        Config c = base;
        c.set("permute_x", px);
        c.set("permute_y", py);
        const GroupedPlan plan = plan_grouped_gemm(c, hw_, 1e9);
        std::fill(out.begin(), out.end(), NAN);
        StopFlag stop{Clock::time_point{}};
        QVERIFY(run_grouped_gemm(plan, plan_work(plan, r, shape), r, shape, {x.data(), w.data(), dy.data(), out.data()},
                                 scratch, ws, pool, stop));
        QVERIFY2(max_diff(truth, out.data()) < 1e-4, qPrintable(QString::fromStdString(c.key())));
        // A wrong expert order (two rows of different experts swapped) is caught.
        Routing bad = r;
        std::swap(bad.row[0], bad.row[bad.offset[1]]);
        std::swap(bad.token[0], bad.token[bad.offset[1]]);
        std::fill(out.begin(), out.end(), NAN);
        QVERIFY(run_grouped_gemm(plan, plan_work(plan, bad, shape), bad, shape,
                                 {x.data(), w.data(), dy.data(), out.data()}, scratch, ws, pool, stop));
        QVERIFY2(max_diff(truth, out.data()) > 1e-2, qPrintable(QString::fromStdString(c.key())));
      }
    }
  }

  // One routing per shape and workload seed whatever the pass, as a MoE layer's passes share one,
  // and the routing the CUDA spec generates for that shape (its key has bf16 where this one has
  // f32, and other sizes here): the CPU and GPU families time the same experts' rows.
  void routesAsTheKernelSpecDoes() {
    const KernelSpec spec = KernelSpec::load(
        std::filesystem::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda/grouped_gemm.json", cuda_spec_dialect());
    Problem gpu = moe(8, 16, 2, 32, 64, "dX");
    gpu.family = spec.family().name;
    gpu.set("dtype", "bf16");
    const SpecInputs in = generate_spec_inputs(spec, gpu, {}, 9);
    const HostInput& route = in.inputs.at("route");
    std::vector<std::int32_t> spec_route(route.data.size() / sizeof(std::int32_t));
    std::memcpy(spec_route.data(), route.data.data(), route.data.size());
    QCOMPARE(spec_route.size(), std::size_t(32));
    for (const char* pass : {"fwd", "dX", "dW"})
      QCOMPARE(grouped_gemm_routing(moe(8, 16, 2, 16, 16, pass), 9).expert, spec_route);
    QVERIFY(grouped_gemm_routing(moe(8, 16, 2, 16, 16, "fwd"), 10).expert != spec_route);
    // Its runs made before that rule measured other routings: a resume refuses them.
    QCOMPARE(family_.workload_rules_since, kMoeRoutingRules);
  }

  void bothPermutesRefused() {
    auto session = backend_->open(dev_, family_, moe(4, 8, 2, 16, 16, "fwd"), 1);
    Config c = family_.default_config;
    c.set("vec", lanes_);
    c.set("NR", lanes_);
    c.set("permute_y", true);
    try {
      session->prepare(c);
      QFAIL("both permutes must not build");
    } catch (const TrialFailure& e) {
      QCOMPARE(e.status(), TrialStatus::CompileError);
      QVERIFY2(QString(e.what()).contains("never both"), e.what());
    }
  }

  void badShapes() {
    expect_input_error([&] { backend_->open(dev_, family_, moe(2, 8, 3, 16, 16, "fwd"), 1); },
                       "topk=3 exceeds experts=2: each token picks topk distinct experts; lower topk or raise experts");
    expect_input_error([&] { backend_->open(dev_, family_, moe(4, 8, 2, 16, 16, "foo"), 1); },
                       "pass=foo is unknown; use pass=fwd");
    expect_input_error([&] { expand_shape(family_, "experts=8 tokens=4 topk=2 hidden=8 intermediate=8 pass=foo"); },
                       "choices: fwd, dX, dW");
    expect_input_error([&] { expand_shape(family_, "experts=8 tokens=4 topk=2 hidden=8"); }, "intermediate");
    expect_input_error([&] { backend_->open(dev_, family_, moe(4, 0, 2, 16, 16, "dW"), 1); }, "tokens=0");
    Problem f16 = moe(4, 8, 2, 16, 16, "fwd");
    f16.set("dtype", "f16");
    expect_input_error([&] { backend_->open(dev_, family_, f16, 1); }, "dtype=f32 only");
  }

  // Each pass tuned on its own through the core's Tuner, the three results side by side.
  void smallTuneEachPass() {
    TuneRequest req;
    req.family = family_;
    req.problems = expand_shape(family_, "experts=8 tokens=24 topk=2 hidden=64 intermediate=48 pass=fwd,dX,dW");
    QCOMPARE(req.problems.size(), std::size_t(3));
    req.space =
        restrict_space(family_.default_space, {{"MR", {6}}, {"NR", {lanes_}}, {"vec", {lanes_}}, {"threads", {1}}});
    req.measure.warmup_ms = 1;
    req.measure.max_samples = 5;
    req.measure.max_ms_per_config = 10'000;  // generous: a loaded machine must not time a healthy config out
    req.measure.slow_abort = false;
    req.seed = 2;
    Tuner tuner(*backend_, dev_);
    struct Quiet : TuneObserver {
      void on_event(const TuneEvent&) override {}
    } quiet;
    const RunSummary s = tuner.run(req, quiet);
    QCOMPARE(s.results.size(), std::size_t(3));
    std::set<std::string> keys;
    for (const ProblemResult& r : s.results) {
      QVERIFY2(r.best, r.problem.key().c_str());
      // 3 permute choices of 4 survive (blocks beyond the tiny shape are pinned).
      QCOMPARE(r.space_valid, std::uint64_t(3));
      QVERIFY(!(r.best->config.value("permute_x") == ParamValue(true) &&
                r.best->config.value("permute_y") == ParamValue(true)));
      keys.insert(r.problem.local_key());
    }
    QCOMPARE(keys.size(), std::size_t(3));
  }
};

QTEST_GUILESS_MAIN(TestGroupedGemm)
#include "test_grouped_gemm.moc"
