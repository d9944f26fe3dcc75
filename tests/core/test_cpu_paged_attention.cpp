// paged_attention on the CPU backend: every config of the default space validated on awkward
// shapes (tails of head_dim, odd pages, a partial last page, split sequences), the reference
// checked against a dense brute force computed here, the page table and the ragged lengths
// shown to matter, and bad shapes refused with clear InputErrors.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "ktune/backends/cpu.h"
#include "ktune/error.h"
#include "paged_attention.h"
#include "reference.h"

using namespace ktune;

namespace {

Problem attention(long seqs, long q, long kv, long d, long page, long context) {
  Problem p;
  p.family = "paged_attention";
  p.fields = {{"num_sequences", std::to_string(seqs)},
              {"num_q_heads", std::to_string(q)},
              {"num_kv_heads", std::to_string(kv)},
              {"head_dim", std::to_string(d)},
              {"page_size", std::to_string(page)},
              {"max_model_len", std::to_string(context)},
              {"dtype", "f32"}};
  return p;
}

Variables context(const KernelFamily& f, const Problem& p, const DeviceInfo& d) {
  Variables v = d.variables();
  for (const auto& [k, x] : f.variables(p)) v[k] = x;
  return v;
}

// A tiny paged problem built by hand: dense K/V [seq][token][kv head][d] scattered into shuffled
// pages, so a brute force over the dense arrays is independent of the page arithmetic.
struct Tiny {
  cpu::PagedAttentionShape sh;
  std::vector<std::int32_t> lengths, table;
  std::vector<float> q, k, v, dense_k, dense_v;
  std::vector<float> out;
  long context = 0;

  Tiny(std::vector<std::int32_t> lens, long q_heads, long kv_heads, long d, long page, unsigned seed)
      : lengths(std::move(lens)) {
    context = *std::max_element(lengths.begin(), lengths.end());
    sh = {static_cast<long>(lengths.size()), q_heads, kv_heads, d, page, (context + page - 1) / page};
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    long pages = 0;
    for (auto l : lengths) pages += (l + page - 1) / page;
    std::vector<std::int32_t> perm(pages);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    table.assign(sh.batch * sh.max_pages, 0);
    long next = 0;
    for (long b = 0; b < sh.batch; ++b)
      for (long i = 0; i < (lengths[b] + page - 1) / page; ++i) table[b * sh.max_pages + i] = perm[next++];
    k.assign(pages * kv_heads * page * d, 0.0f);
    v = k;
    dense_k.resize(sh.batch * context * kv_heads * d);
    dense_v.resize(dense_k.size());
    for (auto& x : dense_k) x = u(rng);
    for (auto& x : dense_v) x = u(rng);
    for (long b = 0; b < sh.batch; ++b)
      for (long t = 0; t < lengths[b]; ++t)
        for (long h = 0; h < kv_heads; ++h)
          for (long j = 0; j < d; ++j) {
            const long at = ((table[b * sh.max_pages + t / page] * kv_heads + h) * page + t % page) * d + j;
            k[at] = dense_k[((b * context + t) * kv_heads + h) * d + j];
            v[at] = dense_v[((b * context + t) * kv_heads + h) * d + j];
          }
    q.resize(sh.batch * q_heads * d);
    for (auto& x : q) x = 4 * u(rng);
    out.assign(q.size(), NAN);
  }

  cpu::PagedAttentionOperands operands() {
    return {sh, q.data(), k.data(), v.data(), table.data(), lengths.data(), out.data()};
  }

  std::vector<double> brute_force() const {
    const long d = sh.head_dim, G = sh.q_heads / sh.kv_heads;
    std::vector<double> o(q.size(), 0.0);
    for (long b = 0; b < sh.batch; ++b)
      for (long hq = 0; hq < sh.q_heads; ++hq) {
        std::vector<double> s(lengths[b]);
        for (long t = 0; t < lengths[b]; ++t) {
          double dot = 0;
          for (long j = 0; j < d; ++j)
            dot +=
                double(q[(b * sh.q_heads + hq) * d + j]) * dense_k[((b * context + t) * sh.kv_heads + hq / G) * d + j];
          s[t] = dot / std::sqrt(double(d));
        }
        const double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (auto& x : s) sum += (x = std::exp(x - mx));
        for (long t = 0; t < lengths[b]; ++t)
          for (long j = 0; j < d; ++j)
            o[(b * sh.q_heads + hq) * d + j] +=
                s[t] / sum * dense_v[((b * context + t) * sh.kv_heads + hq / G) * d + j];
      }
    return o;
  }

  // Runs `config`'s kernel; the largest difference from `ref`.
  double run_error(cpu::ThreadPool& pool, const Config& config, const std::vector<double>& ref) {
    const auto plan = cpu::plan_paged_attention(config, pool.size(), sh, lengths);
    cpu::PagedAttentionWorkspace ws;
    cpu::StopFlag stop{cpu::Clock::time_point{}};
    std::fill(out.begin(), out.end(), NAN);
    if (!cpu::run_paged_attention(plan, operands(), ws, pool, stop)) return INFINITY;
    double err = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
      err = std::isnan(out[i]) ? INFINITY : std::max(err, std::abs(out[i] - ref[i]));
    return err;
  }
};

Config cfg(int pages, int qb, int splits, int vec, int threads = 1, int prefetch = 1) {
  return Config({{"pages_per_block", pages},
                 {"q_per_block", qb},
                 {"splits", splits},
                 {"prefetch", prefetch},
                 {"vec", vec},
                 {"threads", threads}});
}

}  // namespace

class TestCpuPagedAttention : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> backend_ = make_cpu_backend();
  DeviceInfo dev_;
  KernelFamily family_;
  int lanes_ = 4;
  int hw_ = 1;

  QString inputError(const Problem& p) {
    try {
      backend_->open(dev_, family_, p, 1);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no InputError)";
  }

 private slots:
  void initTestCase() {
    dev_ = backend_->devices().at(0);
    family_ = backend_->family("paged_attention");
    lanes_ = static_cast<int>(dev_.property("simd_width_f32"));
    hw_ = static_cast<int>(dev_.property("threads_hw"));
  }

  void familyAsUsersSeeIt() {
    QCOMPARE(QString::fromStdString(family_.bucket_field), QString("num_sequences"));
    const TpSplit* heads = family_.tp_split(TpSplitDim::Heads);
    QVERIFY(heads && heads->fields.size() == 2 && heads->fields[1].at_least_one);
    // Bytes: the K/V of the expected tokens (one sequence at 100, three averaging 50.5) plus q and out.
    const Problem p = attention(4, 8, 2, 16, 4, 100);
    const double tokens = 100 + 3 * 50.5;
    QCOMPARE(family_.bytes(p), 8.0 * 2 * 16 * tokens + 8.0 * 4 * 8 * 16);
    QCOMPARE(family_.flops(p), 4.0 * 8 * 16 * tokens);
    QVERIFY(!family_.default_space.violated(family_.default_config,
                                            context(family_, attention(16, 32, 8, 128, 16, 4096), dev_)) ||
            lanes_ < 8);
  }

  // Every config of the default space that this CPU keeps, at 1e-4 against the f64 reference.
  void everyConfigValidates_data() {
    QTest::addColumn<int>("seqs");
    QTest::addColumn<int>("q");
    QTest::addColumn<int>("kv");
    QTest::addColumn<int>("d");
    QTest::addColumn<int>("page");
    QTest::addColumn<int>("ctx");
    QTest::newRow("gqa4 d40 page5") << 3 << 8 << 2 << 40 << 5 << 53;    // vector tails, partial pages
    QTest::newRow("gqa8 d20 page16") << 5 << 8 << 1 << 20 << 16 << 70;  // scalar tails, a group of 8
    QTest::newRow("mha length 1") << 2 << 2 << 2 << 16 << 3 << 1;       // every sequence one token long
  }
  void everyConfigValidates() {
    QFETCH(int, seqs);
    QFETCH(int, q);
    QFETCH(int, kv);
    QFETCH(int, d);
    QFETCH(int, page);
    QFETCH(int, ctx);
    const Problem p = attention(seqs, q, kv, d, page, ctx);
    auto session = backend_->open(dev_, family_, p, 11);
    const auto configs = family_.default_space.enumerate(context(family_, p, dev_));
    QVERIFY(!configs.empty());
    Tolerance tol{1e-4, 1e-4, 0};
    for (const Config& c : configs) {
      try {
        auto k = session->prepare(c);
        QVERIFY(session->validate(*k, tol).max_abs_error < 1e-4);
      } catch (const TrialFailure& e) {
        QFAIL(qPrintable(QString::fromStdString(c.key() + ": " + e.what())));
      }
    }
  }

  // The reference against a brute force over dense K/V, and the kernel against both.
  void referenceMatchesBruteForce() {
    cpu::ThreadPool pool(2);
    Tiny t({1, 7, 13, 4}, 8, 2, 24, 3, 5);
    const auto brute = t.brute_force();
    const auto ref = cpu::paged_attention_reference(t.operands(), pool);
    for (std::size_t i = 0; i < ref.size(); ++i)
      QVERIFY2(std::abs(ref[i] - brute[i]) < 1e-12, qPrintable(QString::number(i)));
    const int vec = lanes_ >= 8 ? 8 : 4;
    for (const Config& c : {cfg(1, 1, 1, vec), cfg(2, 4, 4, vec, 2), cfg(4, 1, 2, 4, 2, 0)})
      QVERIFY2(t.run_error(pool, c, ref) < 1e-5, c.key().c_str());
  }

  // The kernel really gathers and really stops at each sequence's length: the same kernel on
  // an unshuffled table, or with every sequence at full length, is far from the reference.
  void pageTableAndLengthsMatter() {
    cpu::ThreadPool pool(2);
    Tiny t({1, 40, 17, 64}, 8, 2, 32, 4, 9);
    const auto ref = cpu::paged_attention_reference(t.operands(), pool);
    const Config c = cfg(2, 2, 2, 4, 2);
    QVERIFY(t.run_error(pool, c, ref) < 1e-5);

    Tiny identity = t;
    for (long b = 0, next = 0; b < identity.sh.batch; ++b)
      for (long i = 0; i < (identity.lengths[b] + 3) / 4; ++i) identity.table[b * identity.sh.max_pages + i] = next++;
    QVERIFY(identity.run_error(pool, c, ref) > 1e-2);

    Tiny full = t;
    // Pages beyond a sequence's length name page 0 (another sequence's data): reading them is wrong.
    std::fill(full.lengths.begin(), full.lengths.end(), 64);
    QVERIFY(full.run_error(pool, c, ref) > 1e-2);
  }

  // Seeded: another seed is another workload (lengths, pages, values), the same seed the same.
  void seedsGiveOtherWorkloads() {
    const Problem p = attention(4, 4, 1, 16, 4, 64);
    auto a = backend_->open(dev_, family_, p, 1);
    auto b = backend_->open(dev_, family_, p, 2);
    auto a2 = backend_->open(dev_, family_, p, 1);
    const Config c = cfg(1, 2, 1, lanes_ >= 8 ? 8 : 4);
    auto ka = a->prepare(c), kb = b->prepare(c), ka2 = a2->prepare(c);
    // Each validates against its own reference; the f32 rounding error differs with the data.
    const Validation va = a->validate(*ka, Tolerance{}), vb = b->validate(*kb, Tolerance{});
    QVERIFY(va.max_abs_error > 0 && vb.max_abs_error > 0);
    QVERIFY(va.max_abs_error != vb.max_abs_error);
    QCOMPARE(a2->validate(*ka2, Tolerance{}).max_abs_error, va.max_abs_error);
  }

  // A seed is one workload on every host: ktune's counter-based generator, not std::
  // distributions, whose numbers differ between standard libraries. Pinned values.
  void aSeedIsTheSameWorkloadEverywhere() {
    const cpu::PagedAttentionShape sh{6, 4, 2, 16, 16, 7};
    const cpu::PagedAttentionWorkload w = cpu::make_paged_attention_workload(sh, 100, 7);
    // Uniform in [1, 100], one (here the first) at the context; 7 + 7 + 2 + 7 + 4 + 5 pages.
    QCOMPARE(w.lengths, (std::vector<std::int32_t>{100, 99, 24, 98, 64, 72}));
    QCOMPARE(w.pages, 32L);
    QCOMPARE(std::vector<std::int32_t>(w.table.begin(), w.table.begin() + 7),
             (std::vector<std::int32_t>{20, 6, 13, 22, 18, 24, 11}));
    QCOMPARE(w.k[0], -0.137088358f);
    QCOMPARE(w.v[1], -0.529614806f);
    QCOMPARE(w.q[2], 0.96560204f);
    QCOMPARE(cpu::make_paged_attention_workload(sh, 100, 8).lengths == w.lengths, false);
  }

  void badConfigsFail() {
    auto s = backend_->open(dev_, family_, attention(2, 6, 2, 16, 4, 32), 1);
    for (const auto& [c, text] : std::vector<std::pair<Config, QString>>{
             {cfg(1, 2, 1, 4), "must divide the GQA group"},
             {cfg(1, 16, 1, 4), "q_per_block=16"},
             {cfg(1, 1, 1, 4, hw_ + 1), "hardware threads"},
             {Config({{"pages_per_block", 1}, {"q_per_block", 1}, {"prefetch", 0}, {"vec", 4}, {"threads", 1}}),
              "'splits'"}}) {
      try {
        s->prepare(c);
        QFAIL(qPrintable("prepared " + QString::fromStdString(c.key())));
      } catch (const TrialFailure& e) {
        QVERIFY2(QString(e.what()).contains(text), e.what());
      }
    }
  }

  void badShapesAreInputErrors() {
    QVERIFY(inputError(attention(2, 30, 8, 16, 4, 32)).contains("num_q_heads=30 is not a multiple of num_kv_heads=8"));
    QVERIFY(inputError(attention(2, 8, 8, 16, 0, 32)).contains("page_size=0"));
    QVERIFY(inputError(attention(0, 8, 8, 16, 4, 32)).contains("num_sequences=0"));
    Problem f16 = attention(2, 8, 8, 16, 4, 32);
    f16.set("dtype", "f16");
    QVERIFY(inputError(f16).contains("dtype=f32 only"));
    QVERIFY(inputError(attention(1 << 20, 64, 64, 256, 16, 1 << 20)).contains("choose a smaller shape"));
    // Through expand_shape, as the CLI does: zero sizes and tensor parallelism that does not divide.
    QVERIFY_THROWS_EXCEPTION(InputError, expand_shape(family_,
                                                      "num_sequences=1 num_q_heads=8 num_kv_heads=8 head_dim=8 "
                                                      "page_size=0 max_model_len=8"));
    QVERIFY_THROWS_EXCEPTION(InputError, expand_shape(family_,
                                                      "num_sequences=1 num_q_heads=12 num_kv_heads=4 head_dim=8 "
                                                      "page_size=4 max_model_len=8",
                                                      8));
  }
};

QTEST_APPLESS_MAIN(TestCpuPagedAttention)
#include "test_cpu_paged_attention.moc"
