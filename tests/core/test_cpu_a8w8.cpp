// gemm_a8w8_blockscale on the CPU: the fp8 e4m3 and bf16 formats bit by bit, the reference
// against a brute-force block-scaled product, every config of reduced spaces validated for
// int8 and fp8 with f32 and bf16 outputs on awkward shapes, and bad problems.
#include <QtTest>

#include <cmath>
#include <cstring>

#include "a8w8_workload.h"
#include "cpu_test_support.h"
#include "ktune/backends/cpu.h"
#include "ktune/error.h"
#include "low_precision.h"

using namespace ktune;
using namespace ktune::cpu;

namespace {

Problem a8_problem(long M, long N, long K, const char* q, const char* out) {
  Problem p;
  p.family = "gemm_a8w8_blockscale";
  p.fields = {
      {"M", std::to_string(M)}, {"N", std::to_string(N)}, {"K", std::to_string(K)}, {"q_dtype", q}, {"out_dtype", out}};
  return p;
}

Variables context(const KernelFamily& f, const Problem& p, const DeviceInfo& d) {
  Variables v = d.variables();
  for (const auto& [k, x] : f.variables(p)) v[k] = x;
  return v;
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

class TestCpuA8w8 : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> backend_ = make_cpu_backend();
  DeviceInfo dev_;
  int hw_ = 1;

 private slots:
  void initTestCase() {
    dev_ = backend_->devices().at(0);
    hw_ = static_cast<int>(dev_.property("threads_hw"));
  }

  void e4m3Table() {
    QCOMPARE(kE4m3Table[0x38], 1.0f);
    QCOMPARE(kE4m3Table[0x7e], 448.0f);
    QCOMPARE(kE4m3Table[0xfe], -448.0f);
    QCOMPARE(kE4m3Table[0x40], 2.0f);
    QCOMPARE(kE4m3Table[0x3c], 1.5f);
    QCOMPARE(kE4m3Table[0x08], std::ldexp(1.0f, -6));      // smallest normal
    QCOMPARE(kE4m3Table[0x01], std::ldexp(1.0f, -9));      // smallest subnormal
    QCOMPARE(kE4m3Table[0x07], 7 * std::ldexp(1.0f, -9));  // largest subnormal
    QCOMPARE(kE4m3Table[0x00], 0.0f);
    QVERIFY(!std::signbit(kE4m3Table[0x00]));
    QCOMPARE(kE4m3Table[0x80], 0.0f);
    QVERIFY(std::signbit(kE4m3Table[0x80]));  // negative zero
    QVERIFY(std::isnan(kE4m3Table[0x7f]));
    QVERIFY(std::isnan(kE4m3Table[0xff]));
    // No infinities, and the other 254 codes finite, increasing from 0x00 to 0x7e and mirrored.
    for (int c = 0; c < 256; ++c) {
      if ((c & 0x7f) == 0x7f) continue;
      QVERIFY(std::isfinite(kE4m3Table[c]));
      QCOMPARE(kE4m3Table[c ^ 0x80], -kE4m3Table[c]);
      if ((c & 0x7f) > 0) QVERIFY(std::fabs(kE4m3Table[c]) > std::fabs(kE4m3Table[c - 1]));
    }
  }

  void e4m3Encode() {
    for (int c = 0; c < 256; ++c)
      if ((c & 0x7f) != 0x7f) QCOMPARE(int(e4m3_encode(kE4m3Table[c])), c);  // negative zero included
    QCOMPARE(int(e4m3_encode(1000.0f)), 0x7e);                               // saturates, never NaN
    QCOMPARE(int(e4m3_encode(-1000.0f)), 0xfe);
    QCOMPARE(int(e4m3_encode(NAN)), 0x7f);
    QCOMPARE(int(e4m3_encode(1.0625f)), 0x38);  // halfway between 1 (even code) and 1.125
    QCOMPARE(int(e4m3_encode(1.1875f)), 0x3a);  // halfway between 1.125 and 1.25 (even code)
    QCOMPARE(int(e4m3_encode(1.07f)), 0x39);
    QCOMPARE(int(e4m3_encode(std::ldexp(1.0f, -11))), 0x00);  // a quarter of the smallest subnormal
  }

  void bf16RoundsToNearestEven() {
    QCOMPARE(int(bf16_round(1.0f)), 0x3f80);
    QCOMPARE(int(bf16_round(from_bits(0x3f808000))), 0x3f80);  // tie, down to even
    QCOMPARE(int(bf16_round(from_bits(0x3f818000))), 0x3f82);  // tie, up to even
    QCOMPARE(int(bf16_round(from_bits(0x3f808001))), 0x3f81);  // above the tie
    QCOMPARE(int(bf16_round(-2.0f)), 0xc000);
    QCOMPARE(int(bf16_round(from_bits(0x7f7fffff))), 0x7f80);  // rounds up to infinity, as GPUs do
    QVERIFY(std::isnan(bf16_value(bf16_round(NAN))));
    QCOMPARE(bits(bf16_value(0x3f81)), 0x3f810000u);
  }

  // The reference against the block-scaled product written out per block: sum over kb of
  // (integer or fp8 dot of the block) * a_scale[m,kb] * w_scale[n/128,kb]. Two N blocks and two
  // K blocks with very different scales: dropping or swapping any scale changes the result.
  void referenceIsTheBlockScaledProduct_data() {
    QTest::addColumn<int>("q");
    QTest::newRow("int8") << int(QType::Int8);
    QTest::newRow("fp8_e4m3") << int(QType::Fp8E4m3);
  }
  void referenceIsTheBlockScaledProduct() {
    QFETCH(int, q);
    const QType qt = static_cast<QType>(q);
    const long M = 3, N = 130, K = 256;
    BlockQuantized a = quantize_random(qt, M, K, 1, 11), w = quantize_random(qt, N, K, kScaleBlock, 12);
    QCOMPARE(a.scales.size(), std::size_t(M * 2));
    QCOMPARE(w.scales.size(), std::size_t(2 * 2));  // ceil(130 / 128) x 2
    a.scales = {0.5f, 8.0f, 0.25f, 2.0f, 1.0f, 0.125f};
    w.scales = {3.0f, 0.0625f, 0.75f, 16.0f};
    ThreadPool pool(1);
    const std::vector<double> ref = a8w8_reference(qt, a, w, pool);
    auto code = [&](const BlockQuantized& b, long r, long c) {
      const std::uint8_t x = b.codes[r * K + c];
      return qt == QType::Int8 ? double(static_cast<std::int8_t>(x)) : double(kE4m3Table[x]);
    };
    double unscaled_diff = 0;
    for (long m = 0; m < M; ++m)
      for (long n = 0; n < N; ++n) {
        double y = 0, unscaled = 0;
        for (long kb = 0; kb < 2; ++kb) {
          double dot = 0;
          for (long k = kb * 128; k < (kb + 1) * 128; ++k) dot += code(a, m, k) * code(w, n, k);
          y += dot * a.scales[m * 2 + kb] * w.scales[(n / 128) * 2 + kb];
          unscaled += dot;
        }
        QVERIFY2(std::abs(ref[m * N + n] - y) <= 1e-12 * (1 + std::abs(y)),
                 qPrintable(QString("Y[%1,%2]: %3 vs %4").arg(m).arg(n).arg(ref[m * N + n]).arg(y)));
        unscaled_diff = std::max(unscaled_diff, std::abs(unscaled - y) / (1 + std::abs(y)));
      }
    QVERIFY(unscaled_diff > 0.5);  // a kernel ignoring the scales would be far off
  }

  void quantizedCodesAreInRange() {
    const BlockQuantized a = quantize_random(QType::Int8, 4, 256, 1, 3);
    for (std::size_t i = 0; i < a.codes.size(); ++i) QVERIFY(static_cast<std::int8_t>(a.codes[i]) != -128);
    const BlockQuantized f = quantize_random(QType::Fp8E4m3, 4, 256, 1, 3);
    bool saw_max = false;
    for (std::size_t i = 0; i < f.codes.size(); ++i) {
      QVERIFY((f.codes[i] & 0x7f) != 0x7f);  // finite
      saw_max = saw_max || (f.codes[i] & 0x7f) == 0x7e;
    }
    QVERIFY(saw_max);  // scale = max|x| / 448 uses the whole range
  }

  // Every config of a reduced space (all micro-tiles, every ISA this CPU has, small blocks so
  // that every loop runs several times) validates on shapes no block divides.
  void everyConfigValidates_data() {
    QTest::addColumn<QString>("q");
    QTest::addColumn<QString>("out");
    QTest::addColumn<int>("M");
    QTest::newRow("int8 f32 M=1") << "int8"
                                  << "f32" << 1;
    QTest::newRow("int8 bf16 M=33") << "int8"
                                    << "bf16" << 33;
    QTest::newRow("fp8 f32 M=33") << "fp8_e4m3"
                                  << "f32" << 33;
    QTest::newRow("fp8 bf16 M=7") << "fp8_e4m3"
                                  << "bf16" << 7;
  }
  void everyConfigValidates() {
    QFETCH(QString, q);
    QFETCH(QString, out);
    QFETCH(int, M);
    const KernelFamily f = backend_->family("gemm_a8w8_blockscale");
    std::vector<Constraint> cons;
    for (const Constraint& c : f.default_space.constraints())
      // What makes a config impossible here, not what makes it slow: every ISA runs.
      if (c.expr == "vec <= simd_width_f32" || c.expr.find("simd_registers") != std::string::npos ||
          c.expr.find("vnni") != std::string::npos || c.expr.find("NR / vec <= 4") != std::string::npos)
        cons.push_back(c);
    const SearchSpace space({{"MR", {1, 2, 4, 6, 8}},
                             {"NR", {8, 16, 32, 64}},
                             {"vec", {4, 8, 16}},
                             {"MC", {8, 24}},
                             {"NC", {64, 96}},
                             {"KC", {128, 256}},
                             {"loop_order", {0, 1}},
                             {"vnni", {false, true}},
                             {"threads", thread_counts(hw_)}},
                            cons);
    const Problem p = a8_problem(M, 200, 384, q.toUtf8().constData(), out.toUtf8().constData());
    const auto configs = space.enumerate(context(f, p, dev_));
    QVERIFY2(configs.size() >= 16, qPrintable(QString::number(configs.size())));
    auto session = backend_->open(dev_, f, p, 7);
    // f32 output: f32 accumulation against f64; bf16: one rounding of 2^-9 relative on top.
    Tolerance tol{1e-3, out == "bf16" ? 1.0 / 256 : 1e-4, 0.0};
    int vnni = 0;
    for (const Config& c : configs) {
      vnni += c.get("vnni") ? 1 : 0;
      try {
        auto k = session->prepare(c);
        session->validate(*k, tol);
      } catch (const TrialFailure& e) {
        QFAIL(qPrintable(QString::fromStdString(c.key() + ": " + e.what())));
      }
    }
    // The VNNI kernels ran where this CPU has them (and only for int8).
    QCOMPARE(vnni > 0, q == "int8" && dev_.property("int8_vnni") == 1.0);
  }

  // bf16 output is rounded, not truncated: at a tolerance between the two roundings' errors,
  // it passes; and a tolerance of zero fails naming an element.
  void bf16OutputToleranceAndFailure() {
    const KernelFamily f = backend_->family("gemm_a8w8_blockscale");
    auto s = backend_->open(dev_, f, a8_problem(16, 256, 256, "int8", "bf16"), 5);
    auto k = s->prepare(Config({{"MR", 2},
                                {"NR", 8},
                                {"vec", 4},
                                {"MC", 16},
                                {"NC", 128},
                                {"KC", 128},
                                {"loop_order", 0},
                                {"vnni", false},
                                {"threads", 1}}));
    const Validation v = s->validate(*k, Tolerance{0, 1.0 / 256, 0});
    QVERIFY(v.max_abs_error > 0);
    try {
      s->validate(*k, Tolerance{0, 0, 0});
      QFAIL("zero tolerance accepted a bf16 output");
    } catch (const TrialFailure& e) {
      QCOMPARE(e.status(), TrialStatus::WrongResult);
      QVERIFY2(QString(e.what()).contains("Y["), e.what());
    }
  }

  void badProblemsAndConfigs() {
    const KernelFamily f = backend_->family("gemm_a8w8_blockscale");
    try {
      backend_->open(dev_, f, a8_problem(16, 256, 200, "int8", "f32"), 1);
      QFAIL("K=200 accepted");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("multiple of 128") && QString(e.what()).contains("256"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InputError, backend_->open(dev_, f, a8_problem(16, 256, 256, "int4", "f32"), 1));
    QVERIFY_THROWS_EXCEPTION(InputError, backend_->open(dev_, f, a8_problem(16, 256, 256, "int8", "f16"), 1));
    QVERIFY_THROWS_EXCEPTION(InputError, backend_->open(dev_, f, a8_problem(0, 256, 256, "int8", "f32"), 1));
    auto s = backend_->open(dev_, f, a8_problem(4, 128, 128, "fp8_e4m3", "f32"), 1);
    Config c({{"MR", 4},
              {"NR", 8},
              {"vec", 4},
              {"MC", 16},
              {"NC", 128},
              {"KC", 128},
              {"loop_order", 0},
              {"vnni", true},
              {"threads", 1}});
    auto fails = [&](const Config& bad, const QString& text) -> bool {
      try {
        s->prepare(bad);
      } catch (const TrialFailure& e) {
        return e.status() == TrialStatus::CompileError && QString(e.what()).contains(text);
      }
      return false;
    };
    QVERIFY(fails(c, "applies to int8 only"));
    c.set("vnni", false);
    QVERIFY(s->prepare(c) != nullptr);
    c.set("NR", 12);
    QVERIFY(fails(c, "whole vectors"));
    c.set("NR", 8);
    c.set("KC", 64);
    QVERIFY(fails(c, "scale block"));
  }

  void familyKeysAndCounts() {
    const KernelFamily f = backend_->family("gemm_a8w8_blockscale");
    QCOMPARE(QString::fromStdString(f.bucket_field), QString("M"));
    const Problem p = a8_problem(16, 200, 256, "int8", "bf16");
    QCOMPARE(f.flops(p), 2.0 * 16 * 200 * 256);
    QCOMPARE(f.bytes(p), 16.0 * 256 + 200 * 256 + 4 * 16 * 2 + 4 * 2 * 2 + 2 * 16 * 200);
    QCOMPARE(f.bytes(a8_problem(16, 200, 256, "int8", "f32")) - f.bytes(p), 2.0 * 16 * 200);
    // The default config is valid wherever AVX2 is (the CI and serving hosts). The space keeps
    // configs on any machine, and a tunable number on a fixed one (how many, the host decides).
    for (const char* q : {"int8", "fp8_e4m3"}) {
      const Problem d = a8_problem(16, 2048, 2048, q, "bf16");
      if (dev_.property("simd_width_f32") >= 8)
        QVERIFY(!f.default_space.violated(f.default_config, context(f, d, dev_)));
      const auto r = f.default_space.prune_report(context(f, d, dev_));
      QVERIFY2(r.valid > 0 && r.valid < r.total, qPrintable(QString::number(r.valid)));
      const auto fixed = f.default_space.prune_report(context(f, d, fixed_cpu()));
      QVERIFY2(fixed.valid >= 20 && fixed.valid < fixed.total / 10, qPrintable(QString::number(fixed.valid)));
    }
  }
};

QTEST_APPLESS_MAIN(TestCpuA8w8)
#include "test_cpu_a8w8.moc"
