// The CPU backend: device description, every config of reduced spaces validated on awkward
// shapes, each failure mode with its status, and parameters that really change the speed.
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <vector>

#include "cpu_test_support.h"
#include "ktune/backends/cpu.h"
#include "ktune/error.h"

using namespace ktune;

namespace {

Problem gemm_problem(long M, long N, long K) {
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", std::to_string(M)}, {"N", std::to_string(N)}, {"K", std::to_string(K)}, {"dtype", "f32"}};
  return p;
}

Problem qmm_problem(long batch, long out, long in) {
  Problem p;
  p.family = "qmatmul";
  p.fields = {{"batch", std::to_string(batch)},
              {"out", std::to_string(out)},
              {"in", std::to_string(in)},
              {"x_dtype", "f32"},
              {"w_dtype", "int8"}};
  return p;
}

Variables context(const KernelFamily& f, const Problem& p, const DeviceInfo& d) {
  Variables v = d.variables();
  for (const auto& [k, x] : f.variables(p)) v[k] = x;
  return v;
}

// Runs `fn`, which must throw TrialFailure with `status` and a message containing `text`.
template <class Fn>
void expect_failure(Fn fn, TrialStatus status, const QString& text) {
  try {
    fn();
  } catch (const TrialFailure& e) {
    QCOMPARE(QString(to_string(e.status())), QString(to_string(status)));
    QVERIFY2(QString(e.what()).contains(text), e.what());
    return;
  }
  QFAIL(qPrintable("expected a " + QString(to_string(status)) + " failure"));
}

double median_sample(ProblemSession& s, PreparedKernel& k, int launches) {
  SampleRequest req;
  req.launches = launches;
  req.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<double> v;
  for (int i = 0; i < 7; ++i) v.push_back(s.sample(k, req));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

class TestCpuBackend : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> backend_ = make_cpu_backend();
  DeviceInfo dev_;
  int hw_ = 1;
  int lanes_ = 4;

 private:
  // Prepares and validates every config at atol = rtol = 1e-4; a failing one fails the test with
  // its key. Returns the validations of those that passed.
  std::vector<Validation> validateAll(const KernelFamily& f, const Problem& p, const std::vector<Config>& configs) {
    auto session = backend_->open(dev_, f, p, 7);
    Tolerance tol;
    tol.atol = 1e-4;
    tol.rtol = 1e-4;
    std::vector<Validation> out;
    for (const Config& c : configs) {
      try {
        auto k = session->prepare(c);
        out.push_back(session->validate(*k, tol));
      } catch (const TrialFailure& e) {
        QTest::qFail(qPrintable(QString::fromStdString(c.key() + ": " + e.what())), __FILE__, __LINE__);
        return out;
      }
    }
    return out;
  }

 private slots:
  void initTestCase() {
    const auto devs = backend_->devices();
    QCOMPARE(devs.size(), std::size_t(1));
    dev_ = devs[0];
    hw_ = static_cast<int>(dev_.property("threads_hw"));
    lanes_ = static_cast<int>(dev_.property("simd_width_f32"));
  }

  void deviceProperties() {
    QCOMPARE(QString::fromStdString(backend_->name()), QString("cpu"));
    QCOMPARE(QString::fromStdString(dev_.backend), QString("cpu"));
    QVERIFY(!dev_.name.empty());
    for (const char* key : {"cores", "threads", "threads_hw", "l1d_bytes", "l2_bytes", "l3_bytes", "simd_width_f32",
                            "simd_registers", "max_workspace_bytes"})
      QVERIFY2(dev_.properties.count(key), key);
    QVERIFY(dev_.property("cores") >= 1);
    QVERIFY(dev_.property("threads") >= dev_.property("cores"));
    QCOMPARE(dev_.property("threads_hw"), dev_.property("threads"));
    QVERIFY(dev_.property("l1d_bytes") >= 8 * 1024 && dev_.property("l1d_bytes") <= 4 * 1024 * 1024);
    QVERIFY(dev_.property("l2_bytes") > dev_.property("l1d_bytes"));
    QVERIFY(dev_.property("l3_bytes") >= dev_.property("l2_bytes"));
    QVERIFY(lanes_ == 4 || lanes_ == 8 || lanes_ == 16);
    QCOMPARE(dev_.property("simd_registers"), lanes_ == 16 ? 32.0 : 16.0);
    // How the peak follows from the clock is tested in test_cpu_clock, on injected inputs.
    QVERIFY(!dev_.text.at("isa").empty());
    QVERIFY(!dev_.text.at("cpu_mhz").empty());
  }

  void families() {
    const KernelFamily g = backend_->family("gemm");
    QCOMPARE(QString::fromStdString(g.bucket_field), QString("M"));
    QCOMPARE(g.flops(gemm_problem(2, 3, 4)), 48.0);
    QCOMPARE(g.bytes(gemm_problem(2, 3, 4)), 4.0 * (8 + 12 + 6));
    const KernelFamily q = backend_->family("qmatmul");
    QCOMPARE(QString::fromStdString(q.tp_split(TpSplitDim::In)->fields.at(0).name), QString("in"));
    QCOMPARE(q.bytes(qmm_problem(2, 3, 4)), 4.0 * 8 + 12 + 12 + 24);
    QVERIFY_THROWS_EXCEPTION(InputError, backend_->family("conv"));
  }

  // The default spaces prune for real and keep configs on this machine, whatever it is; on a
  // fixed one (the host's caches, threads and ISA decide how many), a tunable number.
  void defaultSpaceSizes() {
    const KernelFamily g = backend_->family("gemm");
    const auto report = g.default_space.prune_report(context(g, gemm_problem(256, 512, 512), dev_));
    QVERIFY2(report.valid > 0 && report.valid < report.total, qPrintable(QString::number(report.valid)));
    const auto fixed = g.default_space.prune_report(context(g, gemm_problem(256, 512, 512), fixed_cpu()));
    QVERIFY(fixed.valid < fixed.total / 4);
    QVERIFY2(fixed.valid >= 20, qPrintable(QString::number(fixed.valid)));
    const KernelFamily q = backend_->family("qmatmul");
    const auto qr = q.default_space.prune_report(context(q, qmm_problem(16, 4096, 4096), dev_));
    QVERIFY(qr.valid > 0 && qr.valid < qr.total);
    if (lanes_ >= 8) {  // the defaults use AVX2 kernels
      QVERIFY(!g.default_space.violated(g.default_config, context(g, gemm_problem(256, 512, 512), dev_)));
      QVERIFY(!q.default_space.violated(q.default_config, context(q, qmm_problem(16, 4096, 4096), dev_)));
    }
  }

  void gemmEveryConfigValidates_data() {
    QTest::addColumn<int>("M");
    QTest::newRow("M=1") << 1;
    QTest::newRow("M=7") << 7;
    QTest::newRow("M=33") << 33;
  }
  // Small blocks so that every loop runs several times: N=45 is no multiple of any NR and
  // spans two NC panels, K=83 no multiple of KC, M=33 spans two MC blocks.
  void gemmEveryConfigValidates() {
    QFETCH(int, M);
    const KernelFamily g = backend_->family("gemm");
    const SearchSpace space({{"MR", {4, 6, 8, 14}},
                             {"NR", {8, 16, 32}},
                             {"vec", {4, 8, 16}},
                             {"MC", {28, 56}},
                             {"KC", {16, 40}},
                             {"NC", {32, 96}},
                             {"loop_order", {0, 1}},
                             {"threads", thread_counts(hw_)}},
                            {{"vec <= simd_width_f32"},
                             {"ceil_div(NR, vec) * vec == NR && NR / vec <= 4"},
                             {"MR * (NR / vec) + NR / vec + 1 <= (vec < simd_width_f32 ? 16 : simd_registers)"}});
    const Problem p = gemm_problem(M, 45, 83);
    const auto configs = space.enumerate(context(g, p, dev_));
    QVERIFY(configs.size() >= 32);
    for (const Validation& v : validateAll(g, p, configs)) {
      QVERIFY(v.max_abs_error < 1e-4);
      QCOMPARE(v.mismatch_fraction, 0.0);
    }
  }

  void qmatmulEveryConfigValidates_data() {
    QTest::addColumn<int>("batch");
    QTest::newRow("batch=1") << 1;
    QTest::newRow("batch=7") << 7;
    QTest::newRow("batch=33") << 33;
  }
  void qmatmulEveryConfigValidates() {
    QFETCH(int, batch);
    const KernelFamily q = backend_->family("qmatmul");
    const SearchSpace space({{"OB", {4, 12}},
                             {"IB", {16, 48}},
                             {"BT", {1, 2, 4, 8}},
                             {"U", {1, 2, 4}},
                             {"vec", {4, 8, 16}},
                             {"threads", thread_counts(hw_)}},
                            {{"vec <= simd_width_f32"}});
    const Problem p = qmm_problem(batch, 45, 83);
    const auto configs = space.enumerate(context(q, p, dev_));
    QVERIFY(configs.size() >= 48);
    QCOMPARE(validateAll(q, p, configs).size(), configs.size());
  }

  void badConfigsFailWithTheirStatus() {
    const KernelFamily g = backend_->family("gemm");
    auto s = backend_->open(dev_, g, gemm_problem(64, 64, 64), 1);
    Config c({{"MR", 5}, {"NR", 8}, {"vec", 4}, {"MC", 64}, {"KC", 64}, {"NC", 64}, {"loop_order", 0}, {"threads", 1}});
    expect_failure([&] { s->prepare(c); }, TrialStatus::CompileError, "no micro-kernel for MR=5 NR=8");
    const Config missing({{"MR", 4}, {"NR", 8}, {"vec", 4}, {"MC", 64}, {"KC", 64}, {"loop_order", 0}, {"threads", 1}});
    expect_failure([&] { s->prepare(missing); }, TrialStatus::CompileError, "'NC'");
    Config unknown = c;
    unknown.set("MR", 4);
    unknown.set("BM", 64);
    expect_failure([&] { s->prepare(unknown); }, TrialStatus::CompileError, "unknown parameter 'BM'");
    Config huge = c;
    huge.set("MR", 4);
    huge.set("MC", 1 << 20);
    huge.set("KC", 1 << 12);
    huge.set("NC", 1 << 20);
    expect_failure([&] { s->prepare(huge); }, TrialStatus::LaunchError, "device allows");
    Config many = c;
    many.set("MR", 4);
    many.set("threads", hw_ + 1);
    expect_failure([&] { s->prepare(many); }, TrialStatus::LaunchError, "hardware threads");
    if (lanes_ < 16) {
      Config wide = c;
      wide.set("MR", 4);
      wide.set("vec", 16);
      wide.set("NR", 16);
      expect_failure([&] { s->prepare(wide); }, TrialStatus::CompileError, "vec=16");
    }
    const KernelFamily q = backend_->family("qmatmul");
    auto qs = backend_->open(dev_, q, qmm_problem(4, 64, 64), 1);
    expect_failure(
        [&] {
          qs->prepare(Config({{"OB", 16}, {"IB", 64}, {"BT", 3}, {"U", 1}, {"vec", 4}, {"threads", 1}}));
        },
        TrialStatus::CompileError, "BT=3");
  }

  void zeroToleranceIsWrongResult() {
    const KernelFamily g = backend_->family("gemm");
    auto s = backend_->open(dev_, g, gemm_problem(33, 40, 300), 3);
    auto k = s->prepare(Config(
        {{"MR", 4}, {"NR", 8}, {"vec", 4}, {"MC", 64}, {"KC", 64}, {"NC", 64}, {"loop_order", 0}, {"threads", 1}}));
    QVERIFY(s->validate(*k, Tolerance{}).max_abs_error > 0);  // f32 against a double reference
    expect_failure([&] { s->validate(*k, Tolerance{0, 0, 0}); }, TrialStatus::WrongResult, "max abs error");
    // A large enough allowed fraction accepts the same output.
    QVERIFY(s->validate(*k, Tolerance{0, 0, 1.0}).mismatch_fraction > 0);
  }

  void pastDeadlineIsTimeout() {
    const KernelFamily g = backend_->family("gemm");
    auto s = backend_->open(dev_, g, gemm_problem(64, 64, 64), 1);
    auto k = s->prepare(Config(
        {{"MR", 4}, {"NR", 8}, {"vec", 4}, {"MC", 16}, {"KC", 16}, {"NC", 16}, {"loop_order", 1}, {"threads", 1}}));
    SampleRequest req;
    req.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    expect_failure([&] { s->sample(*k, req); }, TrialStatus::Timeout, "time cap");
    const KernelFamily q = backend_->family("qmatmul");
    auto qs = backend_->open(dev_, q, qmm_problem(4, 64, 64), 1);
    auto qk = qs->prepare(Config({{"OB", 16}, {"IB", 16}, {"BT", 1}, {"U", 1}, {"vec", 4}, {"threads", 1}}));
    expect_failure([&] { qs->sample(*qk, req); }, TrialStatus::Timeout, "time cap");
  }

  void badProblemsAreInputErrors() {
    const KernelFamily g = backend_->family("gemm");
    QVERIFY_THROWS_EXCEPTION(InputError, backend_->open(dev_, g, gemm_problem(0, 4, 4), 1));
    Problem f16 = gemm_problem(4, 4, 4);
    f16.set("dtype", "f16");
    QVERIFY_THROWS_EXCEPTION(InputError, backend_->open(dev_, g, f16, 1));
    KernelFamily other = g;
    other.name = "conv";
    QVERIFY_THROWS_EXCEPTION(InputError, backend_->open(dev_, other, gemm_problem(4, 4, 4), 1));
  }

  void methodsAndRotation() {
    const KernelFamily g = backend_->family("gemm");
    auto s = backend_->open(dev_, g, gemm_problem(32, 64, 64), 1);
    auto k = s->prepare(Config(
        {{"MR", 4}, {"NR", 8}, {"vec", 4}, {"MC", 32}, {"KC", 64}, {"NC", 64}, {"loop_order", 0}, {"threads", 1}}));
    SampleRequest req;
    req.launches = 3;
    req.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    const double warm = s->sample(*k, req);
    req.rotate_buffers = true;
    const double rotated = s->sample(*k, req);
    req.rotate_buffers = false;
    req.method = Method::PerLaunch;
    const double cold = s->sample(*k, req);
    QVERIFY(warm > 0 && rotated > 0 && cold > 0);
    // Rotation and flushing only move inputs; the output stays right.
    QVERIFY(s->validate(*k, Tolerance{}).mismatch_fraction == 0);
  }

  // A good and a bad config of the same kernel differ several-fold (2x asserted, loosely, for
  // a loaded machine).
  void parametersMatter() {
    const KernelFamily g = backend_->family("gemm");
    auto s = backend_->open(dev_, g, gemm_problem(192, 192, 192), 5);
    const int good_vec = lanes_;
    auto good = s->prepare(Config({{"MR", 6},
                                   {"NR", 2 * good_vec},
                                   {"vec", good_vec},
                                   {"MC", 96},
                                   {"KC", 192},
                                   {"NC", 192},
                                   {"loop_order", 0},
                                   {"threads", 1}}));
    auto bad = s->prepare(
        Config({{"MR", 1}, {"NR", 4}, {"vec", 4}, {"MC", 4}, {"KC", 8}, {"NC", 4}, {"loop_order", 1}, {"threads", 1}}));
    const double tg = median_sample(*s, *good, 5), tb = median_sample(*s, *bad, 2);
    QVERIFY2(tb > 2 * tg, qPrintable(QString("good %1 ns, bad %2 ns").arg(tg).arg(tb)));

    const KernelFamily q = backend_->family("qmatmul");
    auto qs = backend_->open(dev_, q, qmm_problem(16, 512, 512), 5);
    auto qgood = qs->prepare(Config({{"OB", 64}, {"IB", 512}, {"BT", 4}, {"U", 2}, {"vec", good_vec}, {"threads", 1}}));
    auto qbad = qs->prepare(Config({{"OB", 1}, {"IB", 4}, {"BT", 1}, {"U", 1}, {"vec", 4}, {"threads", 1}}));
    const double qg = median_sample(*qs, *qgood, 5), qb = median_sample(*qs, *qbad, 2);
    QVERIFY2(qb > 2 * qg, qPrintable(QString("good %1 ns, bad %2 ns").arg(qg).arg(qb)));
  }
};

QTEST_APPLESS_MAIN(TestCpuBackend)
#include "test_cpu_backend.moc"
