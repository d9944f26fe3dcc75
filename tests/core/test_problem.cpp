// Shapes, problem keys and tensor-parallel local shapes.
#include <QtTest>
#include <algorithm>
#include <functional>
#include <map>

#include "ktune/error.h"
#include "ktune/kernel_family.h"
#include "ktune/problem.h"

using namespace ktune;

namespace {

KernelFamily gemmLike() {
  KernelFamily f;
  f.name = "gemm";
  f.key_fields = {{"M", true, "", {}, "rows"},
                  {"N", true, "", {}, "cols"},
                  {"K", true, "", {}, "depth"},
                  {"dtype", false, "f32", {"f32", "f16"}, "type"}};
  f.bucket_field = "M";
  f.tp_splits = {{TpSplitDim::Out, {{"N"}}}, {TpSplitDim::In, {{"K"}}}};
  f.flops_expr = "2*M*N*K";
  return f;
}

// Attention shards heads: q heads divided, kv heads divided or replicated (never below 1).
KernelFamily attentionLike() {
  KernelFamily f;
  f.name = "paged_attention";
  f.key_fields = {{"num_sequences", true, "", {}, ""},
                  {"num_q_heads", true, "", {}, ""},
                  {"num_kv_heads", true, "", {}, ""},
                  {"head_dim", true, "", {}, ""}};
  f.tp_splits = {{TpSplitDim::Heads, {{"num_q_heads"}, {"num_kv_heads", true}}}};
  f.shape_rules = {{"mod(num_q_heads, num_kv_heads) == 0", "GQA groups"}};
  return f;
}

QString inputError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

}  // namespace

class TestProblem : public QObject {
  Q_OBJECT
 private slots:
  void shapeExpandsToProduct() {
    const auto ps = expand_shape(gemmLike(), "M=1,16,64 N=4096,8192 K=4096");
    QCOMPARE(ps.size(), std::size_t(6));
    QCOMPARE(ps[0].key(), std::string("M=1,N=4096,K=4096,dtype=f32"));
    QCOMPARE(ps[1].key(), std::string("M=1,N=8192,K=4096,dtype=f32"));
    QCOMPARE(ps[5].num("M"), std::int64_t(64));
    QCOMPARE(gemmLike().flops(ps[0]), 2.0 * 4096 * 4096);
  }

  void fieldOrderFollowsFamily() {
    const auto ps = expand_shape(gemmLike(), "K=8 dtype=f16 N=4 M=2");
    QCOMPARE(ps.at(0).key(), std::string("M=2,N=4,K=8,dtype=f16"));
  }

  void keyRoundTrip() {
    auto ps = expand_shape(gemmLike(), "M=16 N=4096 K=4096", 8, TpSplitDim::Out);
    const Problem back = Problem::from_key("gemm", ps[0].key());
    QCOMPARE(back, ps[0]);
    QCOMPARE(back.key(), std::string("M=16,N=512,K=4096,dtype=f32,tp=8/out"));
  }

  void tensorParallelLocalShape() {
    const auto col = expand_shape(gemmLike(), "M=16 N=4096 K=1024", 4, TpSplitDim::Out);
    QCOMPARE(col[0].num("N"), std::int64_t(1024));
    QCOMPARE(col[0].num("K"), std::int64_t(1024));
    const auto row = expand_shape(gemmLike(), "M=16 N=4096 K=1024", 4, TpSplitDim::In);
    QCOMPARE(row[0].num("K"), std::int64_t(256));
    QCOMPARE(row[0].num("N"), std::int64_t(4096));
  }

  void badShapes_data() {
    QTest::addColumn<QString>("shape");
    QTest::addColumn<int>("tp");
    QTest::addColumn<QString>("needle");
    QTest::newRow("unknown field") << "M=1 N=2 K=3 Q=4" << 1 << "no field 'Q'";
    QTest::newRow("missing field") << "M=1 N=2" << 1 << "missing K";
    QTest::newRow("not a number") << "M=x N=2 K=3" << 1 << "positive integer";
    QTest::newRow("zero") << "M=0 N=2 K=3" << 1 << "positive integer";
    QTest::newRow("bad dtype") << "M=1 N=2 K=3 dtype=f8" << 1 << "choices";
    QTest::newRow("no equals") << "M N=2 K=3" << 1 << "NAME=VALUE";
    QTest::newRow("twice") << "M=1 M=2 N=2 K=3" << 1 << "twice";
    QTest::newRow("indivisible tp") << "M=1 N=10 K=3" << 4 << "not divisible";
  }
  void badShapes() {
    QFETCH(QString, shape);
    QFETCH(int, tp);
    QFETCH(QString, needle);
    try {
      expand_shape(gemmLike(), shape.toStdString(), tp, tp > 1 ? TpSplitDim::Out : TpSplitDim::None);
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains(needle), e.what());
    }
  }

  void tensorParallelHeads_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("q");
    QTest::addColumn<int>("kv");
    QTest::newRow("divided") << 4 << 8 << 2;      // 32 q / 8 kv over 4 ranks
    QTest::newRow("exactly one") << 8 << 4 << 1;  // kv heads 8 over 8 ranks
    QTest::newRow("replicated") << 16 << 2 << 1;  // 8 kv heads on 16 ranks: each on two
  }
  void tensorParallelHeads() {
    QFETCH(int, tp);
    QFETCH(int, q);
    QFETCH(int, kv);
    // No --tp-split-dim: attention has one split, heads.
    const auto ps = expand_shape(attentionLike(), "num_sequences=16 num_q_heads=32 num_kv_heads=8 head_dim=128", tp);
    QCOMPARE(ps.at(0).num("num_q_heads"), std::int64_t(q));
    QCOMPARE(ps.at(0).num("num_kv_heads"), std::int64_t(kv));
    QCOMPARE(ps.at(0).num("head_dim"), std::int64_t(128));
    QCOMPARE(ps.at(0).num("num_sequences"), std::int64_t(16));
    QCOMPARE(ps.at(0).key(), "num_sequences=16,num_q_heads=" + std::to_string(q) + ",num_kv_heads=" +
                                 std::to_string(kv) + ",head_dim=128,tp=" + std::to_string(tp) + "/heads");
    QCOMPARE(Problem::from_key("paged_attention", ps[0].key()), ps[0]);
    // Named explicitly: the same.
    QCOMPARE(expand_shape(attentionLike(), "num_sequences=16 num_q_heads=32 num_kv_heads=8 head_dim=128", tp,
                          TpSplitDim::Heads)[0],
             ps[0]);
  }

  void tensorParallelHeadsErrors() {
    const auto f = attentionLike();
    QVERIFY2(inputError([&] {
               expand_shape(f, "num_sequences=1 num_q_heads=12 num_kv_heads=4 head_dim=8", 8);
             }).contains("num_q_heads=12 is not divisible by --tp-size 8"),
             "q heads");
    QVERIFY2(inputError([&] {
               expand_shape(f, "num_sequences=1 num_q_heads=24 num_kv_heads=6 head_dim=8", 4);
             }).contains("num_kv_heads=6 is not divisible by --tp-size 4"),
             "kv heads");
    QVERIFY2(inputError([&] {
               expand_shape(f, "num_sequences=1 num_q_heads=48 num_kv_heads=3 head_dim=8", 8);
             }).contains("3 must divide 8"),
             "replicated kv heads");
    QVERIFY2(inputError([&] {
               expand_shape(f, "num_sequences=1 num_q_heads=8 num_kv_heads=8 head_dim=8", 2, TpSplitDim::Out);
             }).contains("does not support --tp-split-dim out; use heads"),
             "wrong split");
    QVERIFY2(inputError([&] {
               expand_shape(gemmLike(), "M=1 N=8 K=8", 2, TpSplitDim::Heads);
             }).contains("use out (divides N) or in (divides K)"),
             "gemm has no heads");
    // A shape rule of the family, checked on the local shape.
    QVERIFY2(inputError([&] {
               expand_shape(f, "num_sequences=1 num_q_heads=12 num_kv_heads=8 head_dim=8");
             }).contains("num_q_heads=12, num_kv_heads=8: GQA groups"),
             "shape rule");
    QCOMPARE(tp_split_dim_from_string("heads"), TpSplitDim::Heads);
    QCOMPARE(to_string(TpSplitDim::Heads), std::string("heads"));
  }

  void tpNeedsSplitDim() {
    QVERIFY2(inputError([&] { expand_shape(gemmLike(), "M=1 N=8 K=8", 2); }).contains("needs --tp-split-dim"), "gemm");
    QVERIFY_THROWS_EXCEPTION(InputError, expand_shape(gemmLike(), "M=1 N=8 K=8", 2, TpSplitDim::None));
    QVERIFY_THROWS_EXCEPTION(InputError, tp_split_dim_from_string("sideways"));
  }

  void keysOrderByFieldsAsNumbers() {
    std::vector<std::string> keys{"M=256,N=512,K=512,dtype=f32",        "M=64,N=512,K=512,dtype=f32",
                                  "M=16,N=4096,K=512,dtype=f32",        "M=16,N=512,K=512,dtype=f32",
                                  "M=16,N=512,K=512,dtype=f16",         "M=16,N=512,K=512,dtype=f32,tp=8/out",
                                  "M=16,N=512,K=512,dtype=f32,tp=2/out"};
    std::sort(keys.begin(), keys.end(), KeyLess{});
    const std::vector<std::string> expected{
        "M=16,N=512,K=512,dtype=f16",          "M=16,N=512,K=512,dtype=f32",  "M=16,N=512,K=512,dtype=f32,tp=2/out",
        "M=16,N=512,K=512,dtype=f32,tp=8/out", "M=16,N=4096,K=512,dtype=f32", "M=64,N=512,K=512,dtype=f32",
        "M=256,N=512,K=512,dtype=f32"};
    QCOMPARE(keys, expected);
    // Digits beyond any integer type still order by value; equal numbers written differently
    // stay distinct keys (a map must not merge them).
    QVERIFY(compare_keys("M=99999999999999999999999", "M=100000000000000000000000") < 0);
    QVERIFY(compare_keys("M=016", "M=16") != 0);
    QCOMPARE(compare_keys("M=16", "M=16"), 0);
    std::map<std::string, int, KeyLess> map{{"M=016", 1}, {"M=16", 2}};
    QCOMPARE(map.size(), std::size_t{2});
  }

  void configKeyRoundTrip() {
    Config c({{"BM", 64}, {"BN", -1}, {"stages", 3}});
    QCOMPARE(Config::from_key(c.key()), c);
    QVERIFY_THROWS_EXCEPTION(InputError, Config::from_key("BM=64,BN"));
    QVERIFY_THROWS_EXCEPTION(InputError, Config::from_key("=3"));
    // Booleans and strings keep their kind; the empty string is spelled "".
    const Config typed({{"BM", 64}, {"permute_x", true}, {"cache_modifier", ".cg"}, {"hint", ""}});
    QCOMPARE(typed.key(), std::string("BM=64,permute_x=true,cache_modifier=.cg,hint=\"\""));
    QCOMPARE(Config::from_key(typed.key()), typed);
    QVERIFY(Config::from_key("BM=6.5").value("BM").is_string());
  }
};

QTEST_APPLESS_MAIN(TestProblem)
#include "test_problem.moc"
